"""Models are built on first use: what a process builds, and that nothing else changes.

``mcp_sync.types`` defines its models with ``defer_build``: importing it collects their
fields, and each model's validator, serializer and core schema are made when it is first
used.  These tests run fresh interpreters (a model built once stays built), against the
project's stdio test server: importing builds nothing, one call builds only the models it
uses and none of the other protocol era's, every public model and type gives the same
results built lazily in any order as built up front, and threads racing to use a model
first all get the same, right, results.
"""

from __future__ import annotations

import json
import random
import subprocess
from typing import Any, Dict, List, Set, Tuple

import pytest

import mcp_sync.types as T
from mcp_sync._types.core import _builds_lazily

from .._procs import subprocess_env
from ..conftest import PY, ROOT, SERVERS, fake_server_for

PROBE = SERVERS.parent / "_model_probe.py"
SPEC = SERVERS.parent / "spec"

# What a process built, and which of the modules that define the models it loaded.
BUILT_MODELS = """
import json, sys
import mcp_sync.types as T
from pydantic import BaseModel
modules = [sys.modules[name] for name in ("mcp_sync._types.core", "mcp_sync._types.protocol")
           if name in sys.modules]
print(json.dumps([sorted(
    value.__name__ for module in modules for value in vars(module).values()
    if isinstance(value, type) and issubclass(value, BaseModel)
    and value.__module__ == module.__name__ and value.__pydantic_complete__
), [module.__name__ for module in modules]]))
"""


def run_python(code_or_args: List[str], timeout: float = 120) -> str:
    done = subprocess.run(
        [PY, *code_or_args], cwd=ROOT, env=subprocess_env(), capture_output=True, text=True,
        timeout=timeout, check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def built_after(prelude: str) -> List[str]:
    return loaded_after(prelude)[0]


def loaded_after(prelude: str) -> Tuple[List[str], List[str]]:
    """The models built and the model modules loaded by ``prelude`` in a fresh process."""
    out = run_python(["-c", prelude + BUILT_MODELS])
    built, modules = json.loads(out.strip().splitlines()[-1])
    return built, modules


def definitions(version: str) -> Set[str]:
    schema = json.loads((SPEC / version / "schema.json").read_text(encoding="utf-8"))
    names: Set[str] = set(schema.get("$defs") or schema.get("definitions"))
    return names


def models_named(names: Set[str]) -> Set[str]:
    return {name for name in names if isinstance(getattr(T, name, None), type)}


def era_only_models() -> Dict[str, Set[str]]:
    """The models of one era only: definitions only its schema has; and the 2026 classes
    (``X2026``) stand for the 2026-07-28 shape of ``X``, which is the 2025-11-25 one."""
    old, new = definitions("2025-11-25"), definitions("2026-07-28")
    redone = {name[: -len("2026")] for name in T.__all__ if name.endswith("2026")}
    return {
        "2025-11-25": models_named(old - new) | models_named(redone),
        "2026-07-28": models_named(new - old) | models_named({n + "2026" for n in redone}),
    }


def test_importing_the_types_builds_no_model() -> None:
    # Not even defines one: each model module is loaded by the first use of one of its names.
    assert loaded_after("") == ([], [])


@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
def test_one_call_builds_only_the_models_it_uses(era: str) -> None:
    command = fake_server_for(era)
    built = built_after(
        "import mcp_sync\n"
        f"with mcp_sync.connect({command!r}, timeout=30) as client:\n"
        "    assert client.call_tool('echo', {'text': 'hi'}).text == 'hi'\n"
        f"    assert client.protocol_version == {era!r}, client.protocol_version\n"
    )
    other_era = "2025-11-25" if era == "2026-07-28" else "2026-07-28"
    only_other = era_only_models()[other_era]
    assert len(only_other) > 20
    assert not set(built) & only_other, built
    # A call uses its result's model and the tool's (for its output schema): a handful,
    # where building on import made all of the module's 204.
    assert {"Tool"} < set(built) and len(built) <= 4, built


@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
def test_a_call_defines_only_the_models_of_a_tool_call(era: str) -> None:
    # Defining a pydantic class costs even when its build waits: a process that connects,
    # lists the tools and calls one defines the ~25 classes of _types_core, not the ~180
    # others, which come the first time one of their names is asked for.
    command = fake_server_for(era)
    call = (
        "import mcp_sync, mcp_sync.types as T\n"
        f"with mcp_sync.connect({command!r}, timeout=30) as client:\n"
        "    result = client.call_tool('echo', {'text': 'hi'})\n"
        "    assert result.text == 'hi' and isinstance(result.content[0], T.TextContent)\n"
        "    assert [tool.name for tool in client.list_tools()][:1] == ['echo']\n"
    )
    built, modules = loaded_after(call)
    assert modules == ["mcp_sync._types.core"], modules
    assert ("CallToolResult2026" if era == "2026-07-28" else "CallToolResult") in built
    _, modules = loaded_after(call + "assert T.InitializeResult.__name__ == 'InitializeResult'\n")
    assert modules == ["mcp_sync._types.core", "mcp_sync._types.protocol"], modules


def probe(mode: str, seed: int) -> Dict[str, Any]:
    result: Dict[str, Any] = json.loads(run_python([str(PROBE), mode, str(seed)], timeout=300))
    return result


def test_every_public_model_and_type_behaves_as_if_built_at_import() -> None:
    eager = probe("eager", 0)
    assert eager["names"] > 230 and len(eager["results"]) == eager["names"]
    for seed in random.sample(range(1_000_000), 2):
        lazy = probe("lazy", seed)
        assert lazy["built_at_import"] == [], lazy["built_at_import"]
        differ = [
            f"{name}.{use}" for name, uses in eager["results"].items()
            for use, outcome in uses.items() if lazy["results"][name][use] != outcome
        ]
        assert not differ, f"seed {seed}: {differ}"


def test_threads_racing_to_use_a_model_first_all_get_it_built() -> None:
    raced = json.loads(run_python([str(PROBE), "race", "6"], timeout=300))
    assert raced["raced"] > 230
    assert raced["failures"] == [], "\n".join(raced["failures"][:10])


def test_a_models_forward_reference_resolves_where_it_is_first_used() -> None:
    # A subclass of MCPModel defined in a function, naming a class defined after it: on
    # first use, pydantic resolves the name in the caller's frame, as for any model.
    class Outer(T.MCPModel):
        inner: Inner

    class Inner(T.MCPModel):
        size: int

    assert not Outer.__pydantic_complete__
    assert Outer.model_validate({"inner": {"size": 3}}).inner == Inner(size=3)

    class Later(T.MCPModel):
        inner: Innermost

    class Innermost(T.MCPModel):
        size: int

    assert Later.model_rebuild() is True
    assert Later.model_json_schema()["required"] == ["inner"]
    assert Later(inner=Innermost(size=1)).to_wire() == {"inner": {"size": 1}}


@pytest.mark.parametrize(
    ("version", "lazily"),
    [("2.13.4", True), ("2.12.0", True), ("2.12.0b1", True), ("3.0.0", True),
     ("2.11.7", False), ("2.11.4", False), ("2.10.6", False), ("2.0", False)],
)
def test_models_wait_for_first_use_only_under_a_pydantic_that_allows_it(
    version: str, lazily: bool,
) -> None:
    # Older versions give deferred models no aliases in model_fields until they are built
    # (and some hand a thread the parent's validator): there, models build at import.
    assert _builds_lazily(version) is lazily
