"""The folders of ``mcp_sync/`` are its layers (docs/architecture.md draws them): every
import, wherever it stands (module level, inside a function, under ``TYPE_CHECKING``),
runs from a layer down to a lower one, and no modules import each other in a circle.

Read from the source with ``ast``; nothing is imported.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, List, Set, Tuple

from ..conftest import ROOT

PACKAGE = ROOT / "mcp_sync"

# Bottom to top: a layer may import only from the rows below its own. The package's
# face (mcp_sync/__init__.py) and ``python -m mcp_sync`` stand above everything.
RANKS: List[Tuple[str, ...]] = [
    ("_util", "_version"),
    ("_protocol",),
    ("_types",),
    ("types",),
    ("exceptions",),
    ("_parsing", "cache", "config", "extensions", "testing"),
    ("context", "_schema", "transports"),
    ("_rpc", "auth"),
    ("client",),
    ("apps", "manager"),
    ("toolbox",),
    ("cli", "contrib", "demo_server"),
    ("__init__", "__main__"),
]
RANK = {layer: index for index, row in enumerate(RANKS) for layer in row}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> Dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def layer_of(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "__init__"
    return parts[1]


def imports(found: Dict[str, Path]) -> Dict[str, Set[str]]:
    """Every module of the package each module imports, by any import statement."""
    graph: Dict[str, Set[str]] = {}
    for module, path in found.items():
        package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        targets: Set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    if node.level > 1:
                        base = base[: len(base) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                named = {f"{target}.{alias.name}" for alias in node.names} & set(found)
                # "from . import types" takes a module: it depends on that module, not on
                # the package face it is named through; any other name is the face's.
                if len(named) < len(node.names) and target in found:
                    targets.add(target)
                targets.update(named)
            elif isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names if alias.name in found)
        graph[module] = targets - {module}
    return graph


def test_every_folder_has_its_place_in_the_order() -> None:
    layers = {layer_of(module) for module in modules()}
    assert layers == set(RANK), (
        f"layers without a rank: {sorted(layers - set(RANK))}; "
        f"ranks without a layer: {sorted(set(RANK) - layers)}")


def upward_imports(graph: Dict[str, Set[str]]) -> List[str]:
    """The imports of ``graph`` that do not run down to a lower layer."""
    wrong = []
    for module, targets in graph.items():
        for target in targets:
            below, above = layer_of(target), layer_of(module)
            if below != above and below != "__init__" and RANK[below] >= RANK[above]:
                wrong.append(f"{module} -> {target}")
    return sorted(wrong)


def circles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """The modules of ``graph`` that import each other in a circle (Tarjan's strongly
    connected components of more than one module)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    found: List[List[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in sorted(graph.get(module, ())):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_no_import_runs_back_up() -> None:
    wrong = upward_imports(imports(modules()))
    assert not wrong, "imports that do not run down a layer:\n" + "\n".join(wrong)


def test_no_modules_import_each_other_in_a_circle() -> None:
    found = circles(imports(modules()))
    assert not found, f"modules that import each other in a circle: {found}"


def test_the_rules_see_a_circle_and_an_upward_import() -> None:
    """The two checks find what they look for, on a made-up graph."""
    graph = {"mcp_sync._util.text": {"mcp_sync.client._client"},
             "mcp_sync.client._client": {"mcp_sync._util.text", "mcp_sync._rpc.session"},
             "mcp_sync._rpc.session": {"mcp_sync._rpc.core"},
             "mcp_sync._rpc.core": {"mcp_sync._rpc.session"}}
    assert upward_imports(graph) == ["mcp_sync._util.text -> mcp_sync.client._client"]
    assert circles(graph) == [["mcp_sync._rpc.core", "mcp_sync._rpc.session"],
                              ["mcp_sync._util.text", "mcp_sync.client._client"]]


#: The protocol's type definitions: one module per revision's worth of models, as the
#: official SDK keeps them; long by nature, and read as a reference rather than as code.
LONG_BY_NATURE = {"_types/protocol.py"}
#: A module is one job a reader can hold in mind: about a thousand lines at most.
MAX_MODULE_LINES = 1000


def test_no_module_passes_a_thousand_lines() -> None:
    lines = {str(path.relative_to(PACKAGE)): len(path.read_text(encoding="utf-8").splitlines())
             for path in PACKAGE.rglob("*.py")}
    assert set(LONG_BY_NATURE) <= set(lines)
    too_long = {name: count for name, count in lines.items()
                if count > MAX_MODULE_LINES and name not in LONG_BY_NATURE}
    assert too_long == {}
