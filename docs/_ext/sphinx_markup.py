"""A Griffe extension that renders the package's reStructuredText docstring markup as Markdown.

The docstrings are written for ``help()``, IDEs and Sphinx readers: cross-references are
Sphinx roles (``:class:`~mcp_sync.StdioTransport```, ``:meth:`Client.connect```), a
paragraph ending in ``::`` introduces an indented literal block, and ``Args:``,
``Raises:`` and ``Attributes:`` sections list one entry per line. The site is built by
mkdocs and mkdocstrings, which render docstrings as Markdown; this extension rewrites each
docstring of the loaded package once, after Griffe has built the whole object tree, so
that:

* each role becomes a cross-reference resolved the way Sphinx resolves it (the current
  class, then the module and its imports, then a unique object of that name in the
  package). A reference to an object the site renders is a link; one to a private object
  or to the standard library is shown as code. A role naming nothing (a typo, a renamed
  object) logs a warning, which fails ``mkdocs build --strict``;
* ``text::`` becomes ``text:`` followed by a fenced code block (a lone ``::`` disappears);
* the sections become a bold title and a bullet list, the exceptions of ``Raises:`` as
  references.

The source stays as it is, so the roles keep reading well where reStructuredText is the
native markup.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import json
import re
from typing import Any, Dict, List, Optional, Set

from griffe import (
    Alias,
    AliasResolutionError,
    CyclicAliasError,
    Extension,
    GriffeLoader,
    Module,
    NameResolutionError,
    Object,
    logger,
)

# :role:`target`, :role:`~target`, :role:`title <target>`; a target may wrap onto the
# next line of the docstring.
ROLE = re.compile(r":(?:py:)?(?P<role>func|meth|class|attr|mod|exc|data|obj|const):"
                  r"`(?P<body>[^`]+)`")
EXPLICIT_TITLE = re.compile(r"^(?P<title>.+?)\s*<(?P<target>[^<>]+)>$", re.S)
SECTION = re.compile(r"^(?P<title>Args|Arguments|Raises|Attributes):\s*$")
# The names an entry of a section starts with: "name:", "A, B:", or names alone ending
# in "," (the list goes on on the next line) or in "." (the entry is the list).
NAME = r"\w+(?:\.\w+)*"
ITEM_NAMES = re.compile(rf"^(?P<names>{NAME}(?:\s*,\s*{NAME})*)(?=\s*:(?:\s|$)|,?\s*$|\.$)")
ITEM_START = re.compile(rf"^{NAME}(?:\s*,\s*{NAME})*(?:\s*:(?:\s|$)|\s*,\s*$|\.$)")
FENCE = "```"


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


class SphinxMarkup(Extension):
    """Rewrites every docstring of a loaded package from reStructuredText markup to Markdown."""

    def on_package(self, *, pkg: Module, loader: GriffeLoader, **kwargs: Any) -> None:
        self._loader = loader
        self._package = pkg.name
        self._by_name: Dict[str, List[str]] = {}
        objects = list(_walk(pkg))
        self._imported: Set[str] = set()
        for obj in objects:
            self._by_name.setdefault(obj.name, []).append(obj.path)
            if isinstance(obj, Module):
                self._imported.update(path.partition(".")[0] for path in obj.imports.values())
        self._imported.discard(self._package)
        for obj in objects:
            if obj.docstring is not None:
                obj.docstring.value = self.convert(obj, obj.docstring.value)

    # -- the three rewrites -------------------------------------------------------------

    def convert(self, obj: Object, text: str) -> str:
        lines = _literal_blocks(text.splitlines())
        lines = self._sections(obj, lines)
        out: List[str] = []
        prose: List[str] = []
        fenced = False
        for line in lines:
            if line.strip().startswith(FENCE):
                if not fenced:
                    out.append(self._roles(obj, "\n".join(prose)))
                    prose = []
                out.append(line)
                fenced = not fenced
            elif fenced:
                out.append(line)
            else:
                prose.append(line)
        out.append(self._roles(obj, "\n".join(prose)))
        return "\n".join(out).strip("\n")

    def _roles(self, obj: Object, text: str) -> str:
        def replace(match: re.Match[str]) -> str:
            return self._reference(obj, match["role"], " ".join(match["body"].split()))
        return ROLE.sub(replace, text)

    def _reference(self, obj: Object, role: str, body: str) -> str:
        explicit = EXPLICIT_TITLE.match(body)
        if explicit:
            title, target = explicit["title"], explicit["target"]
        else:
            target = body
            title = body.lstrip("~!.")
            if body.startswith("~"):
                title = title.rsplit(".", 1)[-1]
            if role in ("func", "meth"):
                title += "()"
        target = target.lstrip("~!")
        found = self._resolve(obj, target)
        if found is None:
            logger.warning("%s: :%s:`%s` names no object the documentation knows",
                           _where(obj), role, body)
            return f"`{title}`"
        if found == "":  # not a documented object: the standard library, an inherited attribute
            return f"`{title}`"
        # Optional: a link when the site renders the object, code when it does not (a
        # private helper); that the object exists was checked above.
        return f'<autoref identifier="{found}" optional>`{title}`</autoref>'

    def _sections(self, obj: Object, lines: List[str]) -> List[str]:
        out: List[str] = []
        index = 0
        while index < len(lines):
            header = SECTION.match(lines[index])
            if header is None:
                out.append(lines[index])
                index += 1
                continue
            body: List[str] = []
            index += 1
            while index < len(lines) and (not lines[index].strip() or _indent(lines[index]) > 0):
                body.append(lines[index])
                index += 1
            while body and not body[-1].strip():
                body.pop()
            if out and out[-1].strip():
                out.append("")
            out += [f"**{header['title']}:**", ""]
            for item in _items(body):
                first, *rest = self._item_names(obj, header["title"], "\n".join(item)).split("\n")
                out += ["- " + first, *rest]
            out.append("")
        return out

    def _item_names(self, obj: Object, section: str, text: str) -> str:
        """The names an entry starts with (``name:``, ``A, B:``) as code, exceptions as
        references."""
        names = ITEM_NAMES.match(text)
        if names is None:
            return text
        shown = []
        for name in (part.strip() for part in names["names"].split(",")):
            if section == "Raises":
                shown.append(self._reference(obj, "exc", name))
            else:
                shown.append(f"`{name}`")
        return ", ".join(shown) + text[names.end("names"):]

    # -- resolution ---------------------------------------------------------------------

    def _resolve(self, obj: Object, target: str) -> Optional[str]:
        """The canonical path of a role's target in the package; ``""`` for an object
        outside the package's tree (a built-in, the standard library, a dependency, an
        attribute a class inherits from one); ``None`` when nothing of that name exists."""
        candidates = self._candidates(obj, target)
        for path in candidates:
            found = self._lookup(path)
            if found is not None:
                return found
        for path in candidates:
            if self._inside(path):
                inherited = self._inherited(path)
                if inherited is not None and _exists_outside(inherited, self._imported):
                    return ""
            elif _exists_outside(path, self._imported):
                return ""
        return None

    def _candidates(self, obj: Object, target: str) -> List[str]:
        """Where Sphinx would look for ``target``, in its order."""
        candidates = []
        if target.startswith("."):  # a module relative to the current package
            target = target.lstrip(".")
            module = obj.module
            package = module if module.is_package or module.parent is None else module.parent
            candidates += [f"{package.path}.{target}", f"{module.path}.{target}"]
        elif target.partition(".")[0] == self._package:
            candidates.append(target)
        else:
            head, _, rest = target.partition(".")
            try:  # the current object, its class, its module and the module's imports
                candidates.append(obj.resolve(head) + ("." + rest if rest else ""))
            except NameResolutionError:
                pass
            candidates.append(target)  # a built-in or a dotted name from elsewhere
        # Last, Sphinx's search: the one object of the package whose path ends so.
        ending = [path for path in self._by_name.get(target.rsplit(".", 1)[-1], [])
                  if path.endswith("." + target)]
        if len(ending) == 1:
            candidates.append(ending[0])
        return candidates

    def _inside(self, path: str) -> bool:
        return path == self._package or path.startswith(self._package + ".")

    def _lookup(self, path: str) -> Optional[str]:
        if not self._inside(path):
            return None
        try:
            found = self._loader.modules_collection[path]
            if isinstance(found, Alias):
                found = found.final_target
            canonical: str = found.canonical_path
        except (KeyError, AliasResolutionError, CyclicAliasError):
            return None
        return canonical if self._inside(canonical) else None

    def _inherited(self, path: str) -> Optional[str]:
        """``Class.attribute`` of the package as the path of the attribute in a base
        class outside it (``ServerConfig.model_extra`` -> ``pydantic.BaseModel.model_extra``)."""
        owner, _, attribute = path.rpartition(".")
        try:
            cls = self._loader.modules_collection[owner]
            bases = list(cls.resolved_bases) + [base for base in cls.bases
                                                if not isinstance(base, str)]
        except (KeyError, AliasResolutionError, CyclicAliasError, AttributeError):
            return None
        for base in bases:
            base_path = getattr(base, "canonical_path", None)
            if isinstance(base_path, str) and not self._inside(base_path):
                return f"{base_path}.{attribute}"
        return None


def _walk(obj: Object) -> Any:
    yield obj
    for member in obj.members.values():
        if not isinstance(member, Alias):
            yield from _walk(member)


def _where(obj: Object) -> str:
    try:
        return f"{obj.relative_filepath}:{obj.lineno or 1} ({obj.path})"
    except ValueError:
        return obj.path


def _exists_outside(path: str, imported: Set[str]) -> bool:
    """Whether ``path`` names a built-in or an attribute of a module outside the package.

    A name under a dependency that is not installed where the site is built (an optional
    extra such as Django) cannot be checked: it counts as existing when the package
    imports that dependency somewhere (``imported``: the top-level names it imports).
    """
    if "." not in path and hasattr(builtins, path):
        return True
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            value: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attribute in parts[cut:]:
                value = getattr(value, attribute)
        except AttributeError:
            return False
        return True
    return len(parts) > 1 and parts[0] in imported


def _items(body: List[str]) -> List[List[str]]:
    """A section's body as its entries: each starts at the body's indentation with its
    names, unless the line before ended with a comma (a name list or a sentence wrapped
    there); the entries' other lines keep their indentation relative to it."""
    base = min((_indent(line) for line in body if line.strip()), default=0)
    items: List[List[str]] = []
    previous = ""
    for line in body:
        text = line[base:] if line.strip() else ""
        starts = (text and not text.startswith(" ") and ITEM_START.match(text)
                  and not previous.rstrip().endswith(","))
        if starts or not items:
            items.append([text])
        elif text and not text.startswith(" "):
            items[-1].append("  " + text)
        else:
            items[-1].append(text)
        if text:
            previous = text
    return items


def _language(code: str) -> str:
    """The highlighting for a literal block: Python or JSON when it parses as such."""
    try:
        ast.parse(code)
        return "python"
    except SyntaxError:
        pass
    try:
        json.loads(code)
        return "json"
    except ValueError:
        return "text"


def _literal_blocks(lines: List[str]) -> List[str]:
    """``text::`` plus an indented block -> ``text:`` plus a fenced code block."""
    out: List[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if not line.rstrip().endswith("::"):
            out.append(line)
            continue
        base = _indent(line)
        following = index
        while following < len(lines) and not lines[following].strip():
            following += 1
        if following == len(lines) or _indent(lines[following]) <= base:
            out.append(line)  # not a literal block after all
            continue
        text = line.rstrip()[:-1]
        if text.strip() != ":":
            out += [text, ""]
        block: List[str] = []
        index = following
        while index < len(lines) and (not lines[index].strip() or _indent(lines[index]) > base):
            block.append(lines[index])
            index += 1
        while block and not block[-1].strip():
            block.pop()
        inner = min(_indent(line) for line in block if line.strip())
        prefix = " " * base
        code = [line[inner:] if line.strip() else "" for line in block]
        out.append(prefix + FENCE + _language("\n".join(code)))
        out += [prefix + line if line else "" for line in code]
        out += [prefix + FENCE, ""]
    return out
