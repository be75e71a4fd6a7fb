"""One rule for a listing of what a server does not offer, in the library, the Manager and
the command line: an empty list, never an error. The calls that need the capability still
raise ``CapabilityError``."""

from __future__ import annotations

import json
import subprocess
from typing import Any, Dict

import pytest

import mcp_sync
from mcp_sync import CapabilityError, ClientNotConnected, ServerError
from mcp_sync.manager import Manager

from ..conftest import PY, ROOT, fake_server_command

T = 30.0
BARE = ("--no-resources", "--no-prompts")  # the fake server, with tools only


def test_a_client_lists_nothing_for_a_capability_the_server_lacks() -> None:
    with mcp_sync.connect(fake_server_command(*BARE), timeout=T) as client:
        capabilities = client.server_capabilities
        assert capabilities.resources is None and capabilities.prompts is None
        assert client.list_resources() == []
        assert client.list_resource_templates() == []
        assert client.list_prompts() == []
        assert client.list_tools()  # what it offers is listed as ever
        # Calls that need the capability still say why they cannot be made.
        with pytest.raises(CapabilityError, match="resource subscriptions"):
            client.subscribe_resource("test://hello")
        with pytest.raises(ServerError):  # the server refuses what it does not offer
            client.get_prompt("greet", {"who": "Ann"})
    # A closed client does not pretend its server offers nothing.
    with pytest.raises(ClientNotConnected):
        client.list_prompts()


def test_the_manager_lists_nothing_for_a_capability_a_server_lacks() -> None:
    command = fake_server_command(*BARE)
    full = fake_server_command()
    config: Dict[str, Any] = {"mcpServers": {
        "bare": {"command": command[0], "args": command[1:]},
        "full": {"command": full[0], "args": full[1:]},
    }}
    with Manager(config, timeout=T, reconnect=False) as manager:
        assert [p.name for p in manager.list_prompts()] == ["full__greet"]
        assert {r.name for r in manager.list_resources()} == {"full__hello", "full__blob"}
        assert manager.list_resource_templates() == []
        statuses = manager.status()
        assert statuses["bare"].error is None and statuses["full"].error is None


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PY, "-m", "mcp_sync", *args], capture_output=True, text=True,
                          timeout=60, cwd=str(ROOT), check=False)


def test_the_cli_lists_nothing_for_a_capability_the_server_lacks() -> None:
    bare = ["--", *fake_server_command(*BARE)]
    resources = cli("resources", *bare)
    assert (resources.returncode, resources.stdout, resources.stderr) == (
        0, "(no resources)\n", "")
    prompts = cli("prompts", *bare)
    assert (prompts.returncode, prompts.stdout, prompts.stderr) == (0, "(no prompts)\n", "")
    listed = cli("--json", "prompts", *bare)
    assert listed.returncode == 0 and json.loads(listed.stdout) == []
