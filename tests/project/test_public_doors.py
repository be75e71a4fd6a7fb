"""Dependencies through their public doors (docs/architecture.md, "Conventions").

The library reaches no private attribute of ``requests``, urllib3, pydantic or the
standard library, and imports nothing private from them. Read from the source, so it
holds for every path, taken by a test or not:

* no ``x._name`` on anything but ``self``/``cls`` unless ``_name`` is a name the package
  itself defines (an attribute it sets, a function, a class, a module-level name), or one
  of a named tuple's documented methods (``_replace``, ``_asdict``...);
* none of the private names the HTTP transport used to reach (``_store``,
  ``_original_response``, ``_fp``...) on anything but ``self``/``cls``, even where the
  package has an attribute of that name of its own;
* no ``from requests._x import ...``, ``import pydantic._internal`` or private name
  imported from outside the package.

Where one of the package's own objects reaches another's private part, the pair is
listed in ``OWN_REACHES`` with its reason.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, Iterable, List, Set

PACKAGE = Path(__file__).resolve().parents[2] / "mcp_sync"

# A named tuple's public methods start with an underscore so as not to clash with fields.
NAMED_TUPLE_API = frozenset({"_replace", "_asdict", "_fields", "_field_defaults", "_make"})
# What the HTTP transport once reached inside requests, urllib3 and http.client.
DEPENDENCY_PRIVATES = frozenset({
    "_store", "_original_response", "_fp", "_cookies", "_connection", "_sock",
    "_content", "_content_consumed", "_pool", "_sslobj", "_body", "_decoder",
})
# The package's own objects reaching each other's private parts, each with its reason.
OWN_REACHES = {
    # ConnectionSetting is Client's descriptor, kept in its own module for size.
    "mcp_sync/client/_settings.py: client._connection",
}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _own_names(trees: Iterable[ast.AST]) -> Set[str]:
    """Every name the package defines: attributes it sets, functions, classes, arguments,
    variables and what it imports under its own name."""
    own: Set[str] = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                own.add(node.name)
            elif isinstance(node, ast.arg):
                own.add(node.arg)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                own.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                own.add(node.id)
            elif isinstance(node, ast.alias):
                own.add(node.asname or node.name.split(".")[-1])
    return own


def _on_self(node: ast.Attribute) -> bool:
    return isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")


def reaches(trees: Dict[str, ast.AST]) -> List[str]:
    """``file:line: code`` for each private part of another's reached in ``trees``."""
    own = _own_names(trees.values())
    found: List[str] = []
    for where, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _private(node.attr) and not _on_self(node):
                if f"{where}: {ast.unparse(node)}" in OWN_REACHES:
                    continue
                if node.attr in DEPENDENCY_PRIVATES or (
                        node.attr not in own and node.attr not in NAMED_TUPLE_API):
                    found.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and (
                    node.module.split(".")[0] != "mcp_sync") and (
                    any(_private(part) for part in node.module.split("."))
                    or any(_private(alias.name) for alias in node.names)):
                found.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if any(_private(part) for part in alias.name.split(".")):
                        found.append(f"{where}:{node.lineno}: import {alias.name}")
    return sorted(found, key=lambda line: (line.split(":")[0], int(line.split(":")[1]), line))


def test_no_private_part_of_a_dependency_is_reached() -> None:
    trees = {str(path.relative_to(PACKAGE.parent)): ast.parse(path.read_text(), str(path))
             for path in sorted(PACKAGE.rglob("*.py"))}
    assert len(trees) > 50
    assert reaches(trees) == []


def test_the_rule_sees_each_kind_of_reach() -> None:
    package = {"mcp_sync/own.py": ast.parse(
        "class Mine:\n"
        "    def __init__(self):\n"
        "        self._connection = None\n"
        "        self._parsed = {}\n"
        "    def read(self, other, point):\n"
        "        self._connection.send()\n"          # our own, on self: fine
        "        other._parsed.clear()\n"            # a name the package defines: fine
        "        point._replace(x=1)\n"              # a named tuple's public method
        "        other._connection.close()\n"        # a name a dependency keeps private
        "        return response.raw._original_response\n"
        "from requests._internal_utils import to_native_string\n"
        "from pydantic import _internal\n"
        "import urllib3._collections\n"
        "from mcp_sync._util import text\n"
        "x = response._content_consumed or session._secret\n")}
    assert reaches(package) == [
        "mcp_sync/own.py:9: other._connection",
        "mcp_sync/own.py:10: response.raw._original_response",
        "mcp_sync/own.py:11: from requests._internal_utils import to_native_string",
        "mcp_sync/own.py:12: from pydantic import _internal",
        "mcp_sync/own.py:13: import urllib3._collections",
        "mcp_sync/own.py:15: response._content_consumed",
        "mcp_sync/own.py:15: session._secret",
    ]
