"""The Django example's own tests, run the way examples/README.md says
(``python manage.py test`` in ``examples/django_project``): its views through Django's
test client, against the real demo server its settings start."""

from __future__ import annotations

import re
import subprocess
import sys

from .._procs import EXAMPLES, subprocess_env

PROJECT = EXAMPLES / "django_project"
README = EXAMPLES / "README.md"


def test_the_readme_says_how_to_run_the_example_and_its_tests() -> None:
    blocks = re.findall(r"```sh\n(.*?)```", README.read_text(), re.S)
    assert any("cd examples/django_project && python manage.py runserver" in block
               for block in blocks)
    assert any("cd examples/django_project && python manage.py test" in block
               for block in blocks)


def test_the_django_examples_tests_pass() -> None:
    run = subprocess.run([sys.executable, "manage.py", "test", "-v", "2"], cwd=PROJECT,
                         env=subprocess_env(), capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-4000:]
    report = run.stderr
    for name in ("test_add_calls_the_demo_servers_tool", "test_bad_input_is_a_400_in_json",
                 "test_tools_lists_the_demo_servers_tool", "test_status_shows_the_connected"):
        assert re.search(rf"{name}\w* \(mcpsite\.tests\.ViewTests\.\w+\) \.\.\. ok", report), \
            report[-4000:]
    assert "Ran 4 tests" in report and report.rstrip().endswith("OK")
