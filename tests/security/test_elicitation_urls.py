"""URL-mode elicitation: a server's URL reaches no one unless a user may be asked to open
it (an absolute ``https`` URL, ``http`` only to this machine, a plain host, no user info),
and the handler gets the host it leads to apart from it (``params.host``).

Peers (subprocesses): the project's fake stdio server, in the session era (its ``ask``
tool sends ``elicitation/create`` and returns the client's answer, or its error) and in
2026-07-28 (``--stateless``: ``needs_input`` answers ``input_required`` and returns the
client's ``inputResponses``); both fail a call with -32042 on demand (``needs_url``).
server-everything's ``trigger-url-elicitation`` tool (over stdio) sends what it is given,
and raises -32042 with a URL of its own. The rule itself (``_links.link_refusal``, pure
logic) is tested on a table.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Dict, List, Optional

import pytest

import mcp_sync
from mcp_sync import URLElicitationRequired, types
from mcp_sync._protocol.links import MAX_LINK_LENGTH, link_host, link_refusal

from .._peer_processes import everything_command
from ..conftest import fake_server_command

# What a server sent as a URL to open, each a way to run script, read a file or hide
# where the user is sent; the last would forge a log line if logged raw.
HOSTILE = [
    "javascript:alert(document.cookie)",
    " JaVaScRiPt:alert(document.cookie)",
    "file:///etc/passwd",
    "data:text/html,<script>alert(document.cookie)</script>",
    "vbscript:msgbox(document.cookie)",
    "https://mcp.example.com@127.0.0.1:9/connect",
    "https://mcp.example.com/connect\nWARNING forged log line",
]
GOOD = "https://mcp.example.com/connect?elicitationId=el-9"
LOOPBACK = "http://127.0.0.1:9/callback"


class Asked:
    """An elicitation handler that notes what reached it, and accepts."""

    def __init__(self) -> None:
        self.params: List[Any] = []

    def __call__(self, params: Any) -> Dict[str, Any]:
        self.params.append(params)
        return {"action": "accept"}


def connect(era: str, handler: Asked) -> mcp_sync.Client:
    args = ["--stateless"] if era == "stateless" else []
    return mcp_sync.connect(fake_server_command(*args), timeout=10.0,
                            elicitation_handler=handler, elicitation_modes=("form", "url"))


def url_params(url: str, era: str) -> Dict[str, Any]:
    params = {"mode": "url", "message": "Connect your account.", "url": url}
    if era == "session":
        params["elicitationId"] = "el-9"  # not in 2026-07-28
    return params


def ask_all(client: mcp_sync.Client, urls: List[str]) -> List[Any]:
    """The server asks the client to have each URL opened; what the server got back for
    each, in order: an answer or an error (session era), an input response (2026)."""
    if client.era == "session":
        answers = []
        for url in urls:
            result = client.call_tool("ask", {"method": "elicitation/create",
                                              "params": url_params(url, "session")})
            answers.append(json.loads(result.text))
        return answers
    requests = {f"u{index}": {"method": "elicitation/create",
                              "params": url_params(url, "stateless")}
                for index, url in enumerate(urls)}
    result = client.call_tool("needs_input", {"input_requests": requests})
    responses = result.structured_content["inputResponses"]
    return [responses[f"u{index}"] for index in range(len(urls))]


def refusals(caplog: pytest.LogCaptureFixture) -> List[str]:
    return [record.getMessage() for record in caplog.records
            if record.levelno == logging.WARNING and "refuses the URL" in record.getMessage()]


@pytest.mark.parametrize("era", ["session", "stateless"])
def test_a_url_no_one_may_open_never_reaches_the_handler(
        era: str, caplog: pytest.LogCaptureFixture) -> None:
    """Each hostile URL is refused to the server (-32602 in the session era, which has
    an error answer; ``decline`` in 2026-07-28, which has none) and logged escaped; an
    https URL, and http to this machine, reach the handler with their host."""
    asked = Asked()
    with connect(era, asked) as client:
        assert client.era == era
        answers = ask_all(client, [*HOSTILE, GOOD, LOOPBACK])
    for url, answer in zip(HOSTILE, answers):
        if era == "session":
            assert answer["error"]["code"] == -32602, (url, answer)
            assert "the client refuses the URL" in answer["error"]["message"]
        else:
            assert answer == {"action": "decline"}, url
    assert answers[len(HOSTILE):] == (
        [{"result": {"action": "accept"}}] * 2 if era == "session"
        else [{"action": "accept"}] * 2)
    assert [(params.url, params.host) for params in asked.params] == [
        (GOOD, "mcp.example.com"), (LOOPBACK, "127.0.0.1")]
    assert all(isinstance(params, (types.ElicitRequestURLParams,
                                   types.ElicitRequestURLParams2026))
               for params in asked.params)
    logged = refusals(caplog)
    assert len(logged) == len(HOSTILE)
    for url, message in zip(HOSTILE, logged):
        assert repr(url) in message  # the server's text, escaped
        assert "\n" not in message


@pytest.mark.parametrize("era", ["session", "stateless"])
def test_a_url_elicitation_required_error_lists_only_urls_one_may_open(
        era: str, caplog: pytest.LogCaptureFixture) -> None:
    args = ["--stateless"] if era == "stateless" else []
    errors = []
    with mcp_sync.connect(fake_server_command(*args), timeout=10.0) as client:
        assert client.era == era
        for url in [*HOSTILE, GOOD]:
            with pytest.raises(URLElicitationRequired) as info:
                client.call_tool("needs_url", {"url": url})
            errors.append(info.value)
    for url, error in zip(HOSTILE, errors):
        assert error.elicitations == [], url
        assert url not in str(error) and "open:" not in str(error)
        assert error.data["elicitations"][0]["url"] == url  # the raw data is still there
    [listed] = errors[-1].elicitations
    assert (listed.url, listed.host) == (GOOD, "mcp.example.com")
    assert GOOD in str(errors[-1])
    assert len(refusals(caplog)) == len(HOSTILE)


def test_server_everythings_url_elicitations_are_checked_too() -> None:
    asked = Asked()
    with mcp_sync.connect(everything_command(), timeout=20.0, elicitation_handler=asked,
                          elicitation_modes=("form", "url")) as client:
        for url in HOSTILE:
            result = client.call_tool("trigger-url-elicitation", {"url": url})
            assert result.is_error and "-32602: the client refuses the URL" in result.text, (
                url, result.text)
        result = client.call_tool("trigger-url-elicitation", {"url": GOOD})
        assert not result.is_error and "User completed the URL elicitation" in result.text
        with pytest.raises(URLElicitationRequired) as info:
            client.call_tool("trigger-url-elicitation", {"url": GOOD, "errorPath": True})
    assert [(params.url, params.host) for params in asked.params] == [
        (GOOD, "mcp.example.com")]
    assert [(item.url, item.host) for item in info.value.elicitations] == [
        ("https://modelcontextprotocol.io", "modelcontextprotocol.io")]


@pytest.mark.parametrize(("url", "reason"), [
    ("javascript:alert(1)", "its scheme is 'javascript'"),
    ("JaVaScRiPt:alert(1)", "its scheme is 'javascript'"),
    ("\tjavascript:alert(1)", "U+0009"),
    ("java\nscript:alert(1)", "U+000A"),
    ("https://example.com/\u202egnp.exe", "U+202E"),
    ("https://exa\u200bmple.com/", "U+200B"),
    ("https://example.com/a b", "U+0020"),
    ("ftp://example.com/", "its scheme is 'ftp'"),
    ("blob:https://example.com/x", "its scheme is 'blob'"),
    ("//example.com/connect", "not an absolute URL"),
    ("/connect", "not an absolute URL"),
    ("https:example.com", "names no host"),
    ("https:///example.com", "names no host"),
    ("https://user:password@example.com/", "user info"),
    ("https://@example.com/", "user info"),
    ("https://example.com\\@evil.example/", "user info"),
    ("http://example.com/", "plain http"),
    ("http://127.0.0.1.example.com/", "plain http"),
    ("https://b\u00fccher.example/", "not made of ASCII"),
    ("https://\u0430pple.com/", "not made of ASCII"),  # a Cyrillic a
    ("https://example.com\\.good.example/", "not made of ASCII"),
    ("https://exa%6dple.com/", "not made of ASCII"),
    ("https://2130706433/", "reads as an IPv4 address"),
    ("https://0x7f.0.0.1/", "reads as an IPv4 address"),
    ("https://127.000.0.1/", "reads as an IPv4 address"),
    ("https://[::1/", "not a valid URL"),
    ("https://[fe80::1%25eth0]/", "not a valid IPv6 address"),
    ("https://example.com:99999/", "its port is not valid"),
    ("https://example.com/" + "a" * MAX_LINK_LENGTH, "more than 8,000"),
])
def test_the_rule_refuses_what_a_browser_would_read_otherwise(url: str, reason: str) -> None:
    refusal = link_refusal(url)
    assert refusal is not None and reason in refusal, refusal


@pytest.mark.parametrize(("url", "host"), [
    ("https://mcp.example.com/connect?elicitationId=1#top", "mcp.example.com"),
    ("HTTPS://MCP.Example.COM/Path", "mcp.example.com"),
    ("https://xn--bcher-kva.example/", "xn--bcher-kva.example"),
    ("https://93.184.215.14:8443/", "93.184.215.14"),
    ("https://[2001:db8::1]/", "2001:db8::1"),
    ("http://127.0.0.1:9/callback", "127.0.0.1"),
    ("http://127.1.2.3/", "127.1.2.3"),
    ("http://localhost:8080/", "localhost"),
    ("http://[::1]:8080/", "::1"),
    ("https://example.com/caf\u00e9?q=\u00e9", "example.com"),  # letters in the path
])
def test_the_rule_lets_a_plain_https_url_through_with_its_host(url: str, host: str) -> None:
    assert link_refusal(url) is None
    assert link_host(url) == host
    params = types.ElicitRequestURLParams(message="m", elicitation_id="e", url=url)
    assert params.host == host
    assert "host" not in params.model_dump(by_alias=True)  # not sent back on the wire


def test_a_url_of_the_wrong_type_is_still_malformed_params() -> None:
    """The check looks only at a string; anything else is refused as the params it is."""
    asked = Asked()
    with connect("session", asked) as client:
        result = client.call_tool("ask", {"method": "elicitation/create", "params": {
            "mode": "url", "message": "m", "elicitationId": "e", "url": ["javascript:x"]}})
    answer: Optional[Dict[str, Any]] = json.loads(result.text)
    assert answer is not None and answer["error"]["code"] == -32603
    assert asked.params == []
