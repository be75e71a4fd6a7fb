"""``import mcp_sync`` and a stdio call load only what they use.

Cold start is paid by every short script: ``import mcp_sync`` brings in the client and
the stdio transport, and nothing a stdio connect and call never touch (the manager and its
tool cache, Toolbox, the configuration code, the HTTP transports, requests, pydantic). The
other public names load on first use (PEP 562), and stay importable, listed by ``dir``
and the same object however they are reached. Each check runs in a fresh interpreter:
what one process has imported stays imported.

What is counted is what mcp_sync itself loads: a module its dependencies load is theirs
(pydantic 2.14 imports ``secrets``, so ``hashlib``, and its plugin loader ``tempfile``), and
a standard-library module counts against whoever outside the standard library asked for it.
The fresh interpreter skips ``site`` (``-S``): a ``.pth`` file that imports something at
start-up cannot hide an import of mcp_sync's. So each check holds on every dependency
version the package allows.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

from .._procs import subprocess_env
from ..conftest import PY, ROOT, fake_server_command

# What `import mcp_sync` must leave unloaded.
NOT_AT_IMPORT = [
    "mcp_sync.manager", "mcp_sync.manager._toolcache", "mcp_sync.toolbox", "mcp_sync.config",
    "mcp_sync.transports.memory", "mcp_sync.transports.http", "mcp_sync.transports.sse",
    "mcp_sync.types", "mcp_sync.cli", "mcp_sync.auth", "mcp_sync.contrib",
    "pydantic", "requests", "urllib3", "hashlib", "datetime", "base64", "http",
    "mcp_sync._schema.checker", "jsonschema", "referencing", "regex",
]
# What a stdio connect + calls must leave unloaded (pydantic and mcp_sync.types parse the
# results, so they are in).
NOT_FOR_STDIO_CALLS = [
    "mcp_sync.manager", "mcp_sync.manager._toolcache", "mcp_sync.toolbox", "mcp_sync.config",
    "mcp_sync.transports.memory", "mcp_sync.transports.http", "mcp_sync.transports.sse",
    "mcp_sync.cli", "mcp_sync.auth", "requests", "urllib3", "hashlib",
    # The tools called declare no outputSchema: nothing to check them with.
    "mcp_sync._schema.checker", "jsonschema", "referencing", "regex",
    # Installed with the test extras, so a client could trace: it waits for the
    # application to load the API (test_tracing_waits_for_the_application_to_load_it).
    "opentelemetry", "opentelemetry.trace", "opentelemetry.metrics",
]

# Prints which of WATCH the code after the marker made mcp_sync load. Each module's first
# look-up is attributed to the innermost frame outside the standard library (and outside
# importlib): an mcp_sync module counts if anything loaded it (the code never imports one
# itself); another module only if mcp_sync's own code asked for it, directly or through
# the standard library.
PROBE = """
import json, os, sys, sysconfig
sys.path[1:1] = {path!r}
WATCH = {watch!r}
STDLIB = os.path.realpath(sysconfig.get_paths()["stdlib"]) + os.sep
INSTALLED = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)
asked_by = {{}}

def asking_module():
    frame = sys._getframe(2)
    while frame is not None:
        file = frame.f_code.co_filename
        stdlib = file.startswith("<frozen") or (
            os.path.realpath(file).startswith(STDLIB) and not any(d in file for d in INSTALLED))
        if not stdlib:
            return frame.f_globals.get("__name__") or "?"
        frame = frame.f_back
    return "?"

class Attribution:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name not in asked_by:
            asked_by[name] = asking_module()
        return None  # the finders behind this one do the import

def ours(name):
    return name == "mcp_sync" or name.startswith("mcp_sync.")

before = set(sys.modules)
sys.meta_path.insert(0, Attribution)
{code}
new = set(sys.modules) - before
print(json.dumps({{m: m in new and (ours(m) or ours(asked_by.get(m, "?"))) for m in WATCH}}))
"""

# The paths the probe searches: this interpreter's, as ``site`` would have set them up.
SEARCH_PATH = [p for p in sys.path if p and Path(p).exists()]


def printed_by(code: str, *, no_site: bool = False) -> Any:
    """What ``code``, run in a fresh interpreter (without ``site`` if ``no_site``),
    printed last (as JSON)."""
    argv = [PY, "-S", "-c", code] if no_site else [PY, "-c", code]
    done = subprocess.run(
        argv, cwd=ROOT, env=subprocess_env(),
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def loaded_by(code: str, watch: List[str]) -> Dict[str, bool]:
    """Which of ``watch`` mcp_sync loaded while ``code`` ran in a fresh interpreter."""
    probe = PROBE.format(path=SEARCH_PATH, watch=watch, code=code)
    loaded: Dict[str, bool] = printed_by(probe, no_site=True)
    return loaded


def test_import_mcp_sync_loads_only_the_stdio_path() -> None:
    loaded = loaded_by("import mcp_sync", [*NOT_AT_IMPORT, "mcp_sync.client"])
    assert loaded.pop("mcp_sync.client")  # the probe sees what the import did
    assert [m for m, yes in loaded.items() if yes] == []


def test_stdio_connect_and_calls_load_no_manager_cache_or_http() -> None:
    code = f"""
import mcp_sync
with mcp_sync.connect({fake_server_command()!r}) as client:
    assert client.call_tool("echo", {{"text": "hi"}}).text == "hi"
    assert [t.name for t in client.list_tools()][:1] == ["echo"]
    assert client.call_tool("echo", {{"text": "again"}}).text == "again"
"""
    loaded = loaded_by(code, [*NOT_FOR_STDIO_CALLS, "mcp_sync.types"])
    assert loaded.pop("mcp_sync.types")  # the results were parsed by the models
    assert [m for m, yes in loaded.items() if yes] == []


def test_the_first_tool_with_an_output_schema_loads_the_checker() -> None:
    # jsonschema is a dependency, but only a tool that declares an outputSchema needs it:
    # listing does not load it, the first call of such a tool does (and checks).
    code = f"""
import sys
import mcp_sync
with mcp_sync.connect({fake_server_command()!r}) as client:
    client.list_tools()
    assert "jsonschema" not in sys.modules
    try:
        client.call_tool("shaped", {{"value": "x"}})
    except mcp_sync.ProtocolError as exc:
        assert "'x' is not of type 'number'" in str(exc), exc
    else:
        raise AssertionError("an unchecked result")
"""
    loaded = loaded_by(code, ["mcp_sync._schema.checker", "jsonschema"])
    assert loaded == {"mcp_sync._schema.checker": True, "jsonschema": True}


# Records, at each message the stdio transport sends, whether the tool-call models were
# loaded by then; the last line says so for the first message (the handshake's).
MODELS_AT_FIRST_SEND = """
import json, sys
import mcp_sync
from mcp_sync.transports.stdio import StdioTransport
seen = []
send = StdioTransport.send
def recording_send(self, *args, **kwargs):
    seen.append("mcp_sync._types.core" in sys.modules)
    return send(self, *args, **kwargs)
StdioTransport.send = recording_send
with mcp_sync.connect({argv!r}) as client:
    connected = "mcp_sync._types.core" in sys.modules
    assert client.call_tool("echo", {{"text": "hi"}}).text == "hi"
print(json.dumps([seen[0], connected, "mcp_sync._types.protocol" in sys.modules]))
"""


def test_a_stdio_connect_loads_the_call_models_while_the_server_starts() -> None:
    # The child's start-up is a wait: the client loads pydantic and the tool-call models
    # in it, before the handshake's first message, instead of at the first result.
    first_send, connected, protocol = printed_by(
        MODELS_AT_FIRST_SEND.format(argv=fake_server_command()))
    assert (first_send, connected, protocol) == (True, True, False)


def test_an_http_connect_loads_no_models() -> None:
    # Over HTTP the server is running already: there is no start-up to fill, and a
    # connect alone loads neither pydantic nor the models.
    code = f"""
import subprocess, sys
server = subprocess.Popen([sys.executable, {str(ROOT / "tests" / "servers" / "http_process.py")!r}],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
try:
    url = server.stdout.readline().strip()
    import mcp_sync
    with mcp_sync.connect(url, timeout=30) as client:
        assert client.connected
finally:
    server.stdin.close()
    server.wait(30)
"""
    loaded = loaded_by(code, ["mcp_sync._types.core", "pydantic", "mcp_sync.transports.http"])
    assert loaded == {"mcp_sync._types.core": False, "pydantic": False,
                      "mcp_sync.transports.http": True}


LAZY_NAMES = """
import sys, threading
import mcp_sync
assert "mcp_sync.manager" not in sys.modules
missing = [n for n in mcp_sync.__all__ if n not in dir(mcp_sync)]
assert not missing, missing
# Threads racing to the first use of a lazy name all get the one class.
gate = threading.Barrier(8, timeout=30)
seen = []
def use():
    gate.wait()
    seen.append(mcp_sync.Manager)
threads = [threading.Thread(target=use) for _ in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join(30)
import mcp_sync.manager
assert len(seen) == 8 and all(c is mcp_sync.manager.Manager for c in seen), seen
from mcp_sync import MemoryTransport, Toolbox, types
from mcp_sync.toolbox import Toolbox as T2
from mcp_sync.transports.memory import MemoryTransport as M2
assert Toolbox is T2 and MemoryTransport is M2 and types is sys.modules["mcp_sync.types"]
for name in mcp_sync.__all__:
    assert getattr(mcp_sync, name) is not None, name
ns = {}
exec("from mcp_sync import *", ns)
assert set(mcp_sync.__all__) <= set(ns), set(mcp_sync.__all__) - set(ns)
try:
    mcp_sync.NoSuchName
except AttributeError as exc:
    assert "NoSuchName" in str(exc)
else:
    raise AssertionError("no AttributeError")
print('"ok"')
"""


def test_lazy_names_are_importable_listed_and_loaded_once() -> None:
    assert printed_by(LAZY_NAMES) == "ok"


def test_a_manager_without_a_tool_cache_loads_no_hashing_or_temporary_files() -> None:
    """OpenSSL's hashlib costs a process ~3 MiB: only a Manager with ``tool_cache`` pays."""
    argv = fake_server_command()
    code = f"""
import mcp_sync
config = {{"mcpServers": {{"fake": {{"command": {argv[0]!r}, "args": {argv[1:]!r}}}}}}}
with mcp_sync.Manager(config) as manager:
    assert manager.call_tool("fake", "echo", {{"text": "hi"}}).text == "hi"
"""
    loaded = loaded_by(code, ["mcp_sync.manager", "hashlib", "tempfile"])
    assert loaded == {"mcp_sync.manager": True, "hashlib": False, "tempfile": False}


TRACING_LATER = """
import importlib.util, json, sys, time
assert importlib.util.find_spec("opentelemetry") is not None  # installed: it could trace
import mcp_sync
with mcp_sync.connect({command!r}) as client:
    assert client.call_tool("echo", {{"text": "hi"}}).text == "hi"
    before = sorted(m for m in sys.modules if m.split(".")[0] == "opentelemetry")
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    # The client looks again once a second: calls until one is traced, within a bound.
    deadline = time.monotonic() + 10
    while not exporter.get_finished_spans() and time.monotonic() < deadline:
        client.call_tool("echo", {{"text": "hi"}})
    spans = sorted({{span.name for span in exporter.get_finished_spans()}})
print(json.dumps({{"before": before, "spans": spans}}))
"""


def test_tracing_waits_for_the_application_to_load_it() -> None:
    # A process that never traces never loads opentelemetry; one that installs an SDK
    # after connecting is traced within a second, by the same client.
    seen = printed_by(TRACING_LATER.format(command=fake_server_command()))
    assert seen["before"] == []
    assert seen["spans"] == ["tools/call echo"]


BROKEN_API = """
import json, logging, sys, time, types
import mcp_sync
failures = []
handler = logging.Handler()
handler.emit = lambda record: failures.append(record.getMessage())
logging.getLogger("mcp_sync").addHandler(handler)
with mcp_sync.connect({command!r}) as client:
    client.call_tool("echo", {{"text": "hi"}})
    # Something loads a broken "API": the client's next look finds it and cannot trace.
    sys.modules["opentelemetry.trace"] = types.ModuleType("opentelemetry.trace")
    deadline = time.monotonic() + 10
    calls = 0
    while not failures and time.monotonic() < deadline:
        assert client.call_tool("echo", {{"text": "hi"}}).text == "hi"
        calls += 1
    for _ in range(3):
        assert client.call_tool("echo", {{"text": "after"}}).text == "after"
print(json.dumps({{"failures": failures, "calls": calls}}))
"""


def test_a_broken_api_loaded_later_breaks_no_call() -> None:
    seen = printed_by(BROKEN_API.format(command=fake_server_command()))
    assert seen["failures"] == ["cannot trace with the OpenTelemetry API loaded here"]
    assert seen["calls"] >= 1


def test_import_mcp_sync_compiles_none_of_its_regular_expressions() -> None:
    # Compiling one is pure Python (the escape class of printable() took half a
    # millisecond): the package's patterns compile at their first use (_text.pattern).
    code = """
import json, re, sys
compiled = []
compile_ = re._compile
def recording(pattern, flags):
    frame = sys._getframe(1)
    # re's own frames: re/__init__.py, or re.py before Python 3.11.
    while frame is not None and frame.f_code.co_filename.endswith(("re/__init__.py", "/re.py",
                                                                   "functools.py")):
        frame = frame.f_back
    module = frame.f_globals.get("__name__", "") if frame is not None else ""
    if module.startswith("mcp_sync"):
        compiled.append(module)
    return compile_(pattern, flags)
re._compile = recording
import mcp_sync
from mcp_sync._util.text import printable
at_import = list(compiled)
escaped = printable("a\\x1b[2Jb")
print(json.dumps({"at_import": at_import, "escaped": escaped, "later": compiled}))
"""
    seen = printed_by(code)
    assert seen["at_import"] == []
    # The first use compiles the pattern, and it still does its job.
    assert seen["escaped"] == "a\\x1b[2Jb"
    assert seen["later"] == ["mcp_sync._util.text"]
