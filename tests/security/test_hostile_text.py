"""Nothing a server says reaches a screen raw (SECURITY.md, point 5).

A real hostile server (tests/servers/hostile_stdio.py) sends screen clears, OSC 52
clipboard writes, C1 controls, bidi overrides and invisible characters in every string it
owns, and a 5 MB value that breaks its output schema. Exception messages (and the
tracebacks that print them), log lines and the CLI's output, plain and ``--json``, show
them escaped and bounded; ``--save-images`` writes raster images only, under names the
client makes.
"""

from __future__ import annotations

import json
import logging
import subprocess
import threading
import traceback
import unicodedata
from pathlib import Path
from typing import Any, Callable, Iterator, List

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mcp_sync
from mcp_sync import ProtocolError
from mcp_sync._util.text import name_safe, printable, printable_json
from mcp_sync.exceptions import excerpt

from ..conftest import PY, ROOT, SERVERS

HOSTILE_SERVER = [PY, str(SERVERS / "hostile_stdio.py")]
T = 60.0  # bound for one CLI run or one connection
# What the server sends in every string (see hostile_stdio.py).
HOSTILE = ("\x1b[2J\x1b]52;c;b3duZWQ=\x07\x1b]0;title\x1b\\\x9b31m\x9d0;t\x9c"
           "\u202eevil\u202c\u2066iso\u2069\u200b\U000e0041\x00\rend")
BIDI = set("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
INVISIBLE = set("\u200b\u2028\u2029\u2060\u2061\u2062\u2063\u2064\ufeff")
TRICKY = [*sorted(BIDI | INVISIBLE), "\x1b", "\x9b", "\r", "\r\n", "\U000e0041", "\ud800",
          "\\", "x"]


def raw_controls(text: str) -> List[str]:
    """The characters of ``text`` that could act on a terminal or hide text: C0 (but tab
    and newline), DEL, C1, bidi controls, invisible characters, tag characters, lone
    surrogates."""
    return [ch for ch in text if ch not in "\n\t" and (
        unicodedata.category(ch) in ("Cc", "Cs", "Zl", "Zp") or ch in BIDI
        or ch in INVISIBLE or 0xE0000 <= ord(ch) <= 0xE007F)]


def assert_printable(text: str, limit: int) -> None:
    assert len(text) <= limit, f"{len(text)} characters: {text[:300]!r}"
    bad = raw_controls(text)
    assert not bad, f"raw {bad[:5]!r} in {text[:300]!r}"


def shown(error: BaseException) -> str:
    """What Python prints for an uncaught ``error``: its traceback, causes included."""
    return "".join(traceback.format_exception(type(error), error, error.__traceback__))


def connect(*args: str, **kwargs: Any) -> mcp_sync.Client:
    return mcp_sync.connect([*HOSTILE_SERVER, *args], timeout=T,
                            protocol_version="2025-11-25", **kwargs)


# -- the helpers ------------------------------------------------------------------------


@settings(max_examples=300, deadline=None, database=None)
@given(st.one_of(st.text(), st.binary().map(lambda b: b.decode("latin-1")),
                 st.lists(st.sampled_from(TRICKY)).map("".join)),
       st.integers(1, 300))
def test_printable_and_excerpt_escape_everything_that_acts_on_a_terminal(
        text: str, limit: int) -> None:
    assert not raw_controls(printable(text))
    cut = excerpt(text, limit)
    assert_printable(cut, limit + len(f"… ({len(text)} characters in all)"))
    assert json.loads(printable_json(text)) == text  # the same value, escaped
    assert not raw_controls(printable_json({text: [text]}, indent=2).replace("\n", ""))


def test_excerpt_shows_the_escapes_and_the_total_size() -> None:
    assert printable("a\x1b[2Jb\x9bc\u202ed\r\ne\tf\U000e0041") == \
        "a\\x1b[2Jb\\x9bc\\u202ed\\r\ne\tf\\U000e0041"
    assert excerpt("x" * 1000, 10) == "xxxxxxxxxx… (1000 characters in all)"
    assert excerpt("\x1b" * 10, 10) == "\\x1b\\x1b… (10 characters in all)"  # no half escape
    assert excerpt(b"\xff\x1b", 10) == "\ufffd\\x1b"
    assert excerpt("x" * 10, 10) == "x" * 10  # exactly the bound: whole, no size
    assert excerpt("y" * 201) == "y" * 200 + "… (201 characters in all)"  # 200 by default
    # a backslash of the text itself, at the bound, is kept: only a cut escape is dropped
    assert excerpt("a" * 9 + "\\zzz", 10) == "aaaaaaaaa\\… (13 characters in all)"


def test_printable_json_keeps_readable_text_and_the_callers_options() -> None:
    assert printable_json({"k": "caf\u00e9 \u65e5\x1b"}) == '{"k": "caf\u00e9 \u65e5\\u001b"}'
    assert printable_json({"b": 1, "a": [2]}, sort_keys=True, separators=(",", ":")) == \
        '{"a":[2],"b":1}'
    assert printable_json("\U000e0041") == '"\\udb40\\udc41"'  # a tag as a surrogate pair


def test_name_safe_writes_each_unsafe_run_as_one_underscore() -> None:
    assert name_safe("a b/../c\u00e9\x1bd.e-f_g") == "a_b_.._c_d.e-f_g"


# -- exception messages and log lines ----------------------------------------------------


def test_a_huge_value_breaking_the_output_schema_gives_a_short_printable_error() -> None:
    with connect() as client:
        client.list_tools()  # the client learns the output schema
        with pytest.raises(ProtocolError) as caught:
            client.call_tool("schema_breaker")
        # What the server sent stays data, as sent, for the code that asks for it.
        assert HOSTILE in (client.server_capabilities.experimental or {})
        assert client.server_info.version == HOSTILE
    assert "does not match its outputSchema" in str(caught.value)
    assert_printable(str(caught.value), 700)
    assert_printable(shown(caught.value), 5000)  # the validator's own text is not chained
    assert "\\x1b[2J" in str(caught.value)  # shown escaped, not dropped


def test_a_hostile_capability_key_gives_a_printable_error() -> None:
    """A model-parse failure of server data: pydantic's text names the server's keys."""
    with connect("--bad-capability") as client, pytest.raises(ProtocolError) as caught:
        assert client.server_capabilities is None  # never reached
    assert "invalid capabilities from server" in str(caught.value)
    assert "experimental.\\x1b[2J" in str(caught.value)
    assert_printable(str(caught.value), 1200)
    assert_printable(shown(caught.value), 5000)


class Records(logging.Handler):
    """Collects records formatted as a handler would write them; ``wait_for`` a record."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
        self.lines: List[str] = []
        self.changed = threading.Condition()

    def emit(self, record: logging.LogRecord) -> None:
        with self.changed:
            self.lines.append(self.format(record))
            self.changed.notify_all()

    def wait_for(self, found: Callable[[str], bool]) -> str:
        with self.changed:
            assert self.changed.wait_for(lambda: any(found(line) for line in self.lines), T), \
                self.lines
            return next(line for line in self.lines if found(line))


@pytest.fixture
def records() -> Any:
    handler = Records()
    logger = logging.getLogger("mcp_sync")
    old_level = logger.level
    logger.setLevel(logging.DEBUG)
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)


def test_server_logs_and_stderr_are_logged_printable_and_bounded(records: Records) -> None:
    with connect() as client:
        client.call_tool("text")
        logged = records.wait_for(lambda text: " WARNING " in text and "mcp_sync.server" in text)
        stderr = records.wait_for(lambda text: ".stderr DEBUG" in text)
    assert_printable(logged, 2500)
    assert_printable(stderr, 1500)
    assert "\\u202eevil" in logged and "\\u202eevil" in stderr


def test_a_hostile_form_schema_gives_a_printable_error_and_log_line(records: Records) -> None:
    """An elicitation form whose property names are the server's: the client refuses it
    (-32603) and logs why; both texts are escaped."""
    with connect(elicitation_handler=lambda params: {"action": "decline"}) as client:
        answer = json.loads(client.call_tool("elicit").text)
    assert answer["code"] == -32603 and "invalid elicitation request" in answer["message"]
    assert "\\x1b[2J" in answer["message"]
    logged = records.wait_for(lambda text: "handler for elicitation/create" in text)
    assert_printable(logged, 5000)
    assert "invalid elicitation request" in logged  # the traceback, as a handler writes it


# -- the command line --------------------------------------------------------------------


def cli(*args: str, server: List[str] = HOSTILE_SERVER) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PY, "-m", "mcp_sync", *args, "--", *server],
                          capture_output=True, text=True, timeout=T, cwd=str(ROOT),
                          check=False)


@pytest.mark.parametrize("args", [
    ["tools"], ["call", "text", "--progress", "always"], ["call", "structured"], ["info"],
    ["resources"], ["read", "res://any/thing"], ["call", "media"],
])
def test_the_cli_shows_server_text_escaped(args: List[str]) -> None:
    result = cli(*args)
    assert result.returncode == 0, result.stderr
    for output in (result.stdout, result.stderr):
        assert not raw_controls(output), raw_controls(output)[:5]
    assert "\\u202e" in result.stdout + result.stderr  # shown, escaped


def strings(value: Any) -> Iterator[str]:
    """Every string in a JSON value, keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


@pytest.mark.parametrize("args", [["tools"], ["call", "text"], ["call", "structured"],
                                  ["info"], ["resources"], ["read", "res://any/thing"]])
def test_the_cli_json_output_escapes_server_text(args: List[str]) -> None:
    result = cli("--json", *args)
    assert result.returncode == 0, result.stderr
    assert not raw_controls(result.stdout.replace("\n", "")), raw_controls(result.stdout)[:5]
    assert any(HOSTILE in text for text in strings(json.loads(result.stdout)))  # as sent


def test_cli_errors_are_escaped_in_both_modes() -> None:
    bad = [*HOSTILE_SERVER, "--bad-capability"]
    human = cli("info", server=bad)
    assert human.returncode == 3
    assert "invalid capabilities from server" in human.stderr
    assert_printable(human.stderr, 2000)
    machine = cli("--json", "info", server=bad)
    assert machine.returncode == 3
    assert not raw_controls(machine.stdout.replace("\n", ""))
    assert "\\x1b[2J" in json.loads(machine.stdout)["error"]["message"]


def test_save_images_writes_only_raster_images_under_client_made_names(
        tmp_path: Path) -> None:
    folder = tmp_path / "out"
    called = cli("call", "media", "--save-images", str(folder))
    assert called.returncode == 0, called.stderr
    read = cli("read", "res://any/pic", "--save-images", str(folder))
    assert read.returncode == 0, read.stderr
    assert sorted(path.name for path in folder.iterdir()) == [
        "media-1.png", "media-2.jpg", "media-3.gif", "media-4.webp", "media-5.bmp",
        "pic-1.png", "pic-6.gif"]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["out"]
    printed = called.stdout + read.stdout
    # Every other image or audio type (11 blocks from the tool, 1 blob from the resource)
    # is reported; blobs of other types are listed, as always.
    assert printed.count("not saved: only PNG, JPEG, GIF, WebP and BMP images") == 12
    assert "[blob file:///evil.sh: application/x-sh, " in printed
    assert "[image: text/html, " in printed and "image/\\x1b[2J" in printed
    assert not raw_controls(printed)


def test_save_images_with_json_reports_the_files(tmp_path: Path) -> None:
    folder = tmp_path / "out"
    result = cli("--json", "call", "media", "--save-images", str(folder))
    assert result.returncode == 0, result.stderr
    blocks = json.loads(result.stdout)["content"]
    files = [block["file"] for block in blocks if "file" in block]
    assert [Path(file).name for file in files] == [
        "media-1.png", "media-2.jpg", "media-3.gif", "media-4.webp", "media-5.bmp"]
    assert all("data" in block for block in blocks if "file" not in block
               and block["type"] != "resource")  # not written: left as the server sent it
