"""How the client is wired: its helpers share one connection object, each seeing it
through a small Protocol of its own module; no class of callables (a NamedTuple of
lambdas) stands between them, and the client builds its connection with no lambda.
Read from the source (``mcp_sync/client/``), as docs/architecture.md describes it.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Iterator, List, Tuple

from ..conftest import ROOT

CLIENT = ROOT / "mcp_sync" / "client"


def modules() -> Iterator[Tuple[Path, ast.Module]]:
    for path in sorted(CLIENT.rglob("*.py")):
        yield path, ast.parse(path.read_text(encoding="utf-8"), str(path))


def named_tuples_of_callables() -> List[str]:
    found = []
    for path, tree in modules():
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            if not any(isinstance(base, ast.Name) and base.id == "NamedTuple"
                       for base in node.bases):
                continue
            for field in node.body:
                if (isinstance(field, ast.AnnAssign)
                        and "Callable" in ast.unparse(field.annotation)):
                    found.append(f"{path.relative_to(ROOT)}:{node.name}."
                                 f"{ast.unparse(field.target)}")
    return found


def test_no_named_tuple_of_callables_wires_the_client() -> None:
    assert named_tuples_of_callables() == []


def test_the_client_builds_its_connection_without_lambdas() -> None:
    tree = ast.parse((CLIENT / "_client.py").read_text(encoding="utf-8"))
    client = next(node for node in tree.body
                  if isinstance(node, ast.ClassDef) and node.name == "Client")
    init = next(node for node in client.body
                if isinstance(node, ast.FunctionDef) and node.name == "__init__")
    assert [node.lineno for node in ast.walk(init) if isinstance(node, ast.Lambda)] == []


def test_each_helper_names_what_it_uses_of_the_connection() -> None:
    # A helper module that takes the connection declares the Protocol it needs of it.
    wanted = {
        "_listing.py": "ListingConnection", "_subscriptions.py": "SubscriptionsConnection",
        "_callbacks.py": "CallbacksConnection", "_rounds.py": "RoundsConnection",
        "_toolcalls.py": "ToolCallsConnection", "_negotiation.py": "OfferSource",
        "_tasks/wires.py": "TaskConnection", "_tasks/calls.py": "CallTasksConnection",
        "_caching.py": "CachingConnection",
    }
    for name, protocol in wanted.items():
        tree = ast.parse((CLIENT / name).read_text(encoding="utf-8"))
        classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
        assert protocol in classes, name
        assert any("Protocol" in ast.unparse(base) for base in classes[protocol].bases), name
        imported = {alias.name for node in ast.walk(tree)
                    if isinstance(node, ast.ImportFrom) for alias in node.names}
        assert "Connection" not in imported and "Client" not in imported, name
