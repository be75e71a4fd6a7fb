"""CI does what the README tells a newcomer: ``.ci/run`` runs each line of the README's
set-up block verbatim and in order (a fresh virtual environment, the demo, the tests),
in a fresh clone, then nox's matrix, whose default sessions keep the oldest dependency
versions. Nothing here runs CI; these checks keep the two texts from drifting apart."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from typing import Any, List

from ..conftest import ROOT


def readme_commands() -> List[str]:
    """The lines of the README's first shell block, without their comments."""
    readme = (ROOT / "README.md").read_text()
    found = re.search(r"^```sh\n(.*?)^```$", readme, re.M | re.S)
    assert found is not None, "no shell block in README.md"
    return [re.sub(r"\s+#.*$", "", line) for line in found.group(1).splitlines()
            if line.strip()]


def ci_lines() -> List[str]:
    """The lines .ci/run runs, comments and blank lines left out."""
    script = (ROOT / ".ci" / "run").read_text()
    return [line.strip() for line in script.splitlines()
            if line.strip() and not line.strip().startswith("#")]


def noxfile_value(name: str) -> Any:
    tree = ast.parse((ROOT / "noxfile.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if ast.unparse(target) == name:
                    return ast.literal_eval(node.value)
    raise AssertionError(f"{name} is not set in noxfile.py")


def test_the_readme_block_is_a_fresh_environment_the_demo_and_the_tests() -> None:
    venv, demo, tests = readme_commands()
    assert venv.startswith("python3 -m venv ") and "--system-site-packages" not in venv
    assert demo == "pip install . && mcp-sync demo"
    assert tests.startswith("pip install '.[test]' && bash .ci/install-peers && ")
    assert tests.endswith(" python -m pytest")


def test_ci_runs_the_readme_commands_verbatim_and_in_order() -> None:
    lines = ci_lines()
    commands = readme_commands()
    missing = [command for command in commands if command not in lines]
    assert missing == [], "lines of the README that .ci/run does not run"
    at = [lines.index(command) for command in commands]
    assert at == sorted(at)


def test_ci_ends_with_the_matrix_and_the_oldest_dependencies() -> None:
    assert ci_lines()[-1] == "nox --no-color"
    assert noxfile_value("nox.options.sessions") == ["core", "oldest"]
    assert noxfile_value("PYTHONS") == ["3.9", "3.13"]


def test_the_everyday_loop_is_a_session_of_its_own() -> None:
    """The README's fast command, ``nox -s quick``, exists and is not part of ``nox``
    alone (the matrix that .ci/run runs)."""
    readme = (ROOT / "README.md").read_text()
    assert "`nox -s quick`" in readme
    listed = subprocess.run([sys.executable, "-m", "nox", "--list", "--no-color"], cwd=ROOT,
                            capture_output=True, text=True, timeout=60, check=True).stdout
    assert re.search(r"^- quick -> The everyday loop", listed, re.M), listed
    assert re.search(r"^\* oldest -> ", listed, re.M), listed


def test_mutation_testing_is_a_documented_session_outside_the_default_run() -> None:
    """``nox -s mutation`` (docs/mutation.md) exists, is named in the README and the
    mutation page, and is not one of the sessions ``nox`` alone (.ci/run) runs."""
    assert "`nox -s mutation`" in (ROOT / "README.md").read_text()
    page = (ROOT / "docs" / "mutation.md").read_text()
    assert "nox -s mutation" in page
    assert "mutation" not in noxfile_value("nox.options.sessions")
    modules = noxfile_value("MUTATION_MODULES")
    pyproject = (ROOT / "pyproject.toml").read_text().split("[tool.mutmut]")[1]
    for module in modules:  # each module the session mutates is mutated, and on the page
        assert f'"{module.replace(".", "/")}.py"' in pyproject, module
        assert f"`{module}`" in page, module
    listed = subprocess.run([sys.executable, "-m", "nox", "--list", "--no-color"], cwd=ROOT,
                            capture_output=True, text=True, timeout=60, check=True).stdout
    assert re.search(r"^- mutation -> Mutation testing", listed, re.M), listed
