"""The Python version matrix: the library's own test modules on the oldest and newest CPython.

    nox -s core              # every Python listed below (each must be installed)
    nox -s core-3.9          # one of them
    nox -s oldest            # the oldest Python with the oldest dependencies declared
    nox -s quick             # the everyday loop: the same modules, in the current environment
    nox -s mutation          # mutation testing of the converters and bounds (docs/mutation.md)

Only the modules of the library's own layers run here, without their tests marked ``peer``
(those need the official ``mcp`` SDK, which needs a newer Python, or the Node peers); the
full suite, peers included, runs with ``python -m pytest`` on the default interpreter. nox
looks the interpreters up on ``PATH`` (``python3.9``, ``python3.13``); ``.ci/run`` puts
pyenv's there.
"""

from __future__ import annotations

import nox

PYTHONS = ["3.9", "3.13"]

# The test modules of the library's own layers: the public API's names, the sans-I/O core,
# the response cache's rules and in-process store, the transports over real pipes and
# sockets (stdio, memory, Streamable HTTP, legacy SSE), configuration, the CLI and the
# one-call helper.
CORE_MODULES = [
    "tests/project/test_api.py",
    "tests/unit/test_core.py",
    "tests/unit/test_cache.py",
    "tests/unit/test_cache_rules.py",
    "tests/transports/test_stdio.py",
    "tests/transports/test_memory.py",
    "tests/transports/test_http.py",
    "tests/transports/test_sse_parse.py",
    "tests/transports/test_sse_legacy.py",
    # Where urllib3 1.x and 2 differ under the HTTP transports: reused connections.
    "tests/faults/test_http_faults.py",
    "tests/manager/test_config.py",
    "tests/cli/test_cli.py",
    "tests/client/test_call_tool_once.py",
]

# What those modules import beyond the library and its dependencies (no SDK, no Node).
CORE_TEST_DEPS = ["pytest>=7", "pytest-timeout>=2"]

# The lowest versions pyproject.toml's dependencies allow: what a user may have installed
# (tests/project/test_packaging.py holds the two lists together).
OLDEST_DEPS = [
    "requests==2.28.0",
    "pydantic==2.5.0",
    "jsonschema==4.18.0",
    "regex==2022.6.2",
]

# `nox` alone runs the matrix (as .ci/run does), not the everyday loop.
nox.options.sessions = ["core", "oldest"]
nox.options.error_on_missing_interpreters = True


@nox.session(python=PYTHONS)
def core(session: nox.Session) -> None:
    session.install(".", *CORE_TEST_DEPS)
    session.run("python", "-m", "pytest", "-q", "-m", "not peer", *CORE_MODULES, *session.posargs)


@nox.session(python=PYTHONS[0])
def oldest(session: nox.Session) -> None:
    """The core modules against the oldest dependency versions the package declares."""
    session.install(".", *CORE_TEST_DEPS, *OLDEST_DEPS)
    session.run("python", "-m", "pytest", "-q", "-m", "not peer", *CORE_MODULES, *session.posargs)


@nox.session(python=False)
def quick(session: nox.Session) -> None:
    """The everyday loop: the core modules in the current environment, without peers.

    Runs the ``python`` on PATH with what it has installed (``pip install '.[test]'``):
    no new virtual environment; about a minute.
    """
    session.run("python", "-m", "pytest", "-q", "-m", "not peer", *CORE_MODULES, *session.posargs)


# Mutation testing: the Toolbox's converters and the modules that hold security bounds,
# one module at a time. Which tests run against them is [tool.mutmut] in pyproject.toml.
MUTATION_MODULES = [
    "mcp_sync.transports._limits",
    "mcp_sync._util.text",
    "mcp_sync.toolbox._names",
    "mcp_sync.toolbox._modeltext",
    "mcp_sync.toolbox._results",
    "mcp_sync.toolbox._schemas",
    "mcp_sync._schema.checker",
]


@nox.session
def mutation(session: nox.Session) -> None:
    """Mutation testing of the converters and bounds (mutmut); not part of ``nox`` alone.

    ``nox -s mutation`` runs every module of MUTATION_MODULES; ``nox -s mutation --
    mcp_sync.toolbox._names`` one of them. Each surviving mutant is killed by a test or
    explained in docs/mutation.md. The mutated copy is written to ``mutants/``.
    """
    session.install(".", "mutmut==3.8.1", "hypothesis>=6", *CORE_TEST_DEPS)
    for module in session.posargs or MUTATION_MODULES:
        session.run("mutmut", "run", "--max-children", "2", f"{module}.*")
    session.run("mutmut", "results")
