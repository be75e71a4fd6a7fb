"""Tool definitions pinned when first seen, so that a changed tool is never offered
silently (the "rug pull": a server that changes a tool's description or parameters once
the user trusted it, and tells the model to do something else).

:class:`ToolPins` keeps, for one server, each tool's definition as first seen: what the
model reads and what the call depends on (name, title, description, input and output
schema, annotations), compared by its canonical JSON (sorted keys, no spaces): exactly,
so no two definitions can pass for each other (a hash could only be shorter, and loading
OpenSSL's hashlib would cost every client about 3 MiB).
A client reviews every listing against its pins (:meth:`ToolPins.review`): a tool whose
definition differs from its pin is a :class:`ToolChange`, and the client's
``on_tool_change`` policy decides:

* ``"block"`` (the default): a WARNING names the server, the tool and what changed; the
  tool is left out of the listing, and a call to it raises
  :class:`~mcp_sync.ToolChanged`, until the change is accepted
  (:meth:`ToolPins.accept`, through ``Client.accept_tool_changes`` or
  ``Manager.accept_tool_changes``);
* ``"warn"``: the same WARNING, and the tool is offered with its new definition, which
  becomes its pin;
* a callable, ``on_tool_change(change) -> bool``: True offers and pins the new
  definition, False blocks it (an exception blocks it too, logged); asked once per new
  definition, on the thread that lists the tools, never under a lock.

A new tool is pinned when first seen (logged at INFO after the first listing); a tool
back to its pinned definition is offered again. The logger is ``mcp_sync.client._toolpins``.
No I/O, no thread: a :class:`~mcp_sync.Manager` saves the pins in its tool cache.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Tuple, Union

from .._util.text import excerpt

if TYPE_CHECKING:
    from .. import types

__all__ = ["FIELDS", "ToolChange", "ToolChangePolicy", "ToolPins", "canonical",
           "check_policy", "definition", "differences"]

log = logging.getLogger(__name__)

#: The fields of a tool's definition (wire names) that its pin covers.
FIELDS = ("name", "title", "description", "inputSchema", "outputSchema", "annotations")
#: ``"block"``, ``"warn"``, or ``on_tool_change(change) -> bool``.
ToolChangePolicy = Union[str, Callable[["ToolChange"], Any]]
_POLICIES = ("block", "warn")
_SHOWN = 200  # characters of a description or title in a difference


@dataclass(frozen=True)
class ToolChange:
    """A tool whose definition differs from the one pinned when it was first seen.

    ``before`` is the pinned definition and ``after`` the one listed now (wire names:
    ``name``, ``title``, ``description``, ``inputSchema``, ``outputSchema``,
    ``annotations``; the server's data, raw). ``differences`` says what changed, in
    words, with the server's text excerpted and escaped (fit for a log line or a
    terminal; not for a model).
    """

    server: str
    tool: str
    before: Dict[str, Any]
    after: Dict[str, Any]
    differences: Tuple[str, ...]

    def __str__(self) -> str:
        return (f"tool {excerpt(repr(self.tool), 100)} of {excerpt(self.server, 80)}: "
                f"{'; '.join(self.differences)}")


def check_policy(policy: Any) -> ToolChangePolicy:
    """``policy`` when it is ``"block"``, ``"warn"`` or a callable.

    Raises:
        ValueError: anything else.
    """
    if callable(policy) or policy in _POLICIES:
        return policy  # type: ignore[no-any-return]
    raise ValueError(f"on_tool_change takes 'block', 'warn' or a callable, not {policy!r}")


def definition(tool: types.Tool) -> Dict[str, Any]:
    """The pinned fields of ``tool``, as on the wire (absent ones left out)."""
    wire = tool.to_wire()
    return {field: wire[field] for field in FIELDS if field in wire}


def canonical(pinned: Mapping[str, Any]) -> str:
    """A definition's canonical JSON (its pinned fields, sorted keys, no spaces, ASCII):
    two definitions are the same tool when, and only when, these are equal (``1``,
    ``1.0`` and ``true`` differ, as they do to a JSON schema)."""
    return json.dumps({field: pinned[field] for field in FIELDS if field in pinned},
                      sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=str)


def _quoted(value: Any) -> str:
    return f"'{excerpt(value, _SHOWN)}'" if isinstance(value, str) else excerpt(
        json.dumps(value, sort_keys=True, default=str), _SHOWN)


def _name(name: str) -> str:
    return excerpt(repr(name), 80)


def _properties(schema: Any) -> Dict[str, Any]:
    properties = schema.get("properties") if isinstance(schema, dict) else None
    return properties if isinstance(properties, dict) else {}


def _required(schema: Any) -> List[str]:
    required = schema.get("required") if isinstance(schema, dict) else None
    return [name for name in required if isinstance(name, str)] if isinstance(
        required, list) else []


def _input_differences(before: Any, after: Any) -> List[str]:
    out: List[str] = []
    old, new = _properties(before), _properties(after)
    old_required, new_required = set(_required(before)), set(_required(after))
    for name in new:
        if name not in old:
            required = " (required)" if name in new_required else ""
            out.append(f"new parameter {_name(name)}{required}")
    for name in old:
        if name not in new:
            out.append(f"parameter {_name(name)} removed")
    for name in old:
        if name not in new:
            continue
        was, now = old[name], new[name]
        if was != now:
            described = [key for key in set(was) | set(now) if was.get(key) != now.get(key)] if (
                isinstance(was, dict) and isinstance(now, dict)) else None
            if described == ["description"]:
                out.append(f"the description of parameter {_name(name)} changed from "
                           f"{_quoted(was.get('description'))} to "
                           f"{_quoted(now.get('description'))}")
            else:
                out.append(f"parameter {_name(name)} changed from {_quoted(was)} to "
                           f"{_quoted(now)}")
        if name in new_required and name not in old_required:
            out.append(f"parameter {_name(name)} is now required")
        elif name in old_required and name not in new_required:
            out.append(f"parameter {_name(name)} is now optional")
    rest = ("properties", "required")
    if isinstance(before, dict) and isinstance(after, dict):
        if {k: v for k, v in before.items() if k not in rest} != {
                k: v for k, v in after.items() if k not in rest}:
            out.append("the input schema changed besides its parameters")
    elif before != after:
        out.append("the input schema changed")
    return out


def differences(before: Mapping[str, Any], after: Mapping[str, Any]) -> Tuple[str, ...]:
    """What changed from ``before`` to ``after`` (definitions), in words; the server's
    text in them excerpted and escaped."""
    out: List[str] = []
    for field in ("title", "description"):
        was, now = before.get(field), after.get(field)
        if was == now:
            continue
        if was is None:
            out.append(f"{field} added: {_quoted(now)}")
        elif now is None:
            out.append(f"{field} removed (was {_quoted(was)})")
        else:
            out.append(f"{field} changed from {_quoted(was)} to {_quoted(now)}")
    if before.get("inputSchema") != after.get("inputSchema"):
        out += _input_differences(before.get("inputSchema"), after.get("inputSchema"))
    was, now = before.get("outputSchema"), after.get("outputSchema")
    if was != now:
        out.append("output schema added" if was is None else "output schema removed"
                   if now is None else "output schema changed")
    old, new = _annotations(before), _annotations(after)
    for key in [*old, *(k for k in new if k not in old)]:
        label = f"annotation {excerpt(key, 60)}"
        if key not in new:
            out.append(f"{label} removed: {_quoted(old[key])}")
        elif key not in old:
            out.append(f"{label} added: {_quoted(new[key])}")
        elif old[key] != new[key]:
            out.append(f"{label}: {_quoted(old[key])} -> {_quoted(new[key])}")
    return tuple(out) or ("the definition changed",)


def _annotations(pinned: Mapping[str, Any]) -> Dict[str, Any]:
    annotations = pinned.get("annotations")
    return annotations if isinstance(annotations, dict) else {}


_Pin = Tuple[str, Dict[str, Any]]  # (canonical JSON, definition)


class ToolPins:
    """The pinned definitions of one server's tools, and the changes waiting for the
    user (see the module docstring). Can be shared between threads, and between the
    clients of one server: a :class:`~mcp_sync.Manager` gives every client of a server
    the same pins, so that a reconnect forgets none, and saves them in its tool cache.

    Args:
        pinned: definitions to start from (``{name: definition}``, as :meth:`pinned`
            returns them): those of an earlier run.
    """

    def __init__(self, pinned: Optional[Mapping[str, Mapping[str, Any]]] = None) -> None:
        # Guards every field below; never held while calling the policy.
        self._lock = threading.Lock()
        self._pins: Dict[str, _Pin] = {}
        # Changes blocked: tool name -> (canonical JSON of the new definition, the change).
        self._pending: Dict[str, Tuple[str, ToolChange]] = {}
        # The last listing reviewed, by id(tool): (tool, canonical JSON, definition), so
        # a cached listing reviewed again costs no encoding.
        self._seen: Dict[int, Tuple[Any, str, Dict[str, Any]]] = {}
        self._reviewed = False
        # Bumped by every change of the pins or of the blocked changes; with the ids of
        # the last listing reviewed (alive: _seen holds them) and what it offered, it
        # answers a cached listing reviewed again at once.
        self._version = 0
        self._last: Optional[Tuple[Tuple[int, ...], int, List[Any]]] = None
        if pinned:
            self.seed(pinned)

    def __len__(self) -> int:
        with self._lock:
            return len(self._pins)

    def __repr__(self) -> str:
        with self._lock:
            return f"<ToolPins {len(self._pins)} pinned, {len(self._pending)} blocked>"

    def seed(self, pinned: Mapping[str, Mapping[str, Any]]) -> int:
        """Pin these definitions (``{name: definition}``) for the tools not pinned yet;
        returns how many were added."""
        added = 0
        with self._lock:
            for name, pinned_definition in pinned.items():
                if name in self._pins or not isinstance(pinned_definition, Mapping):
                    continue
                saved = {k: pinned_definition[k] for k in FIELDS if k in pinned_definition}
                self._pins[name] = (canonical(saved), saved)
                added += 1
            self._version += 1
        return added

    def pinned(self) -> Dict[str, Dict[str, Any]]:
        """Every pinned definition, ``{name: definition}`` (a copy, for saving)."""
        with self._lock:
            return {name: dict(pin[1]) for name, pin in self._pins.items()}

    def changes(self) -> List[ToolChange]:
        """The changes blocked now, waiting for :meth:`accept`."""
        with self._lock:
            return [change for _, change in self._pending.values()]

    def blocked(self, tool: str) -> Optional[ToolChange]:
        """The blocked change of ``tool``, or None."""
        with self._lock:
            pending = self._pending.get(tool)
        return pending[1] if pending is not None else None

    def accept(self, tool: Optional[str] = None) -> List[ToolChange]:
        """Accept the blocked change of ``tool`` (every blocked change with None): its
        new definition becomes its pin, and the next listing offers it. Returns the
        changes accepted (none when ``tool`` has no blocked change)."""
        with self._lock:
            names = [tool] if tool is not None else list(self._pending)
            accepted = []
            for name in names:
                pending = self._pending.pop(name, None)
                if pending is not None:
                    self._pins[name] = (pending[0], pending[1].after)
                    accepted.append(pending[1])
            self._version += 1
        for change in accepted:
            log.info("accepted the change of tool %s of %s; its new definition is pinned",
                     _name(change.tool), excerpt(change.server, 80))
        return accepted

    def review(self, tools: List[types.Tool], server: str,
               policy: ToolChangePolicy) -> List[types.Tool]:
        """The tools of a listing that may be offered, in their order: each compared
        with its pin (a new tool is pinned); a changed one follows ``policy``."""
        ids = tuple(id(tool) for tool in tools)
        with self._lock:
            last = self._last
            if last is not None and last[0] == ids and last[1] == self._version:
                return list(last[2])
            previous = self._seen
        seen: Dict[int, Tuple[Any, str, Dict[str, Any]]] = {}
        for tool in tools:
            known = previous.get(id(tool))
            if known is None or known[0] is not tool:
                pinned_definition = definition(tool)
                known = (tool, canonical(pinned_definition), pinned_definition)
            seen[id(tool)] = known
        offered = set()
        undecided: List[Tuple[Any, str, ToolChange]] = []
        with self._lock:
            self._seen = seen
            self._version += 1
            mine = self._version  # the state this review leaves, unless another moves on
            first = not self._reviewed
            self._reviewed = True
            for tool in tools:
                _, text, pinned_definition = seen[id(tool)]
                pin = self._pins.get(tool.name)
                if pin is None:
                    self._pins[tool.name] = (text, pinned_definition)
                    offered.add(id(tool))
                    if not first:
                        log.info("tool %s of %s is new; pinned", _name(tool.name),
                                 excerpt(server, 80))
                elif pin[0] == text:
                    offered.add(id(tool))
                    if self._pending.pop(tool.name, None) is not None:
                        log.info("tool %s of %s is back to its pinned definition; offered",
                                 _name(tool.name), excerpt(server, 80))
                else:
                    pending = self._pending.get(tool.name)
                    if pending is None or pending[0] != text:
                        undecided.append((tool, text, ToolChange(
                            server, tool.name, dict(pin[1]), pinned_definition,
                            differences(pin[1], pinned_definition))))
        for tool, text, change in undecided:  # outside the lock: the policy is user code
            accepted = _decide(policy, change)
            with self._lock:
                if accepted:
                    self._pins[tool.name] = (text, change.after)
                    self._pending.pop(tool.name, None)
                    offered.add(id(tool))
                else:
                    self._pending[tool.name] = (text, change)
                changed = self._version == mine
                self._version += 1
                mine = self._version if changed else -1
        result = [tool for tool in tools if id(tool) in offered]
        with self._lock:
            if self._version == mine:  # nothing else changed the pins meanwhile
                self._last = (ids, mine, result)
        return list(result)


def _decide(policy: ToolChangePolicy, change: ToolChange) -> bool:
    """Apply ``policy`` to ``change`` (logged at WARNING): True to offer it."""
    what = f"tool {_name(change.tool)} of {excerpt(change.server, 80)} changed since it " \
           f"was pinned: {'; '.join(change.differences)}"
    if policy == "warn":
        log.warning("%s; offered with its new definition, now pinned "
                    "(on_tool_change='warn')", what)
        return True
    if policy == "block" or not callable(policy):
        log.warning("%s; blocked: not offered, and a call to it raises ToolChanged, until "
                    "the change is accepted (accept_tool_changes(), or mcp-sync tools "
                    "--changes --accept)", what)
        return False
    try:
        accepted = bool(policy(change))
    except Exception:
        log.exception("on_tool_change raised for tool %s of %s; blocking the change",
                      _name(change.tool), excerpt(change.server, 80))
        accepted = False
    log.warning("%s; on_tool_change %s", what,
                "accepted it: offered with its new definition, now pinned" if accepted else
                "refused it: blocked until the change is accepted")
    return accepted
