"""mcp_sync.contrib.celery with a real broker and real workers.

Redis (Debian's ``redis-server``, installed by ``.ci/install-peers``) runs on 127.0.0.1 on a
free port with persistence off; each test gets a database of its own. Workers are real
``python -m celery -A celery_app worker`` processes (``tests/servers/celery_app.py``) with
distinct node names, standing in for machines; the test process is the caller, sending
``mcp_sync.call_tool`` by name. The tests that kill processes mid-call use
``tests/servers/gate_stdio.py``, whose calls wait at a gate the test holds, so "mid-call"
is a known moment and not a race.
"""

from __future__ import annotations

import itertools
import json
import os
import pickle
import signal
import subprocess
import warnings
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import pytest
from celery import Celery, signals
from celery.result import AsyncResult

from mcp_sync import Manager
from mcp_sync.contrib.celery import CALL_TOOL, CALLING, MCP, CallToolFailed
from mcp_sync.exceptions import ConnectionClosed

from .._gate import Gate
from .._procs import (
    LineWatcher,
    parent_pid,
    redis_server,
    running,
    subprocess_env,
    wait_gone,
)
from ..conftest import PY, ROOT, SERVERS
from ..faults.workloads import child_pids
from ..helpers import wait_for

DEMO = {"command": "${MCP_TEST_PYTHON}", "args": ["-m", "mcp_sync.demo_server"]}
SDK = {"command": "${MCP_TEST_PYTHON}", "args": [str(SERVERS / "sdk_server.py")]}
FAKE = {"command": "${MCP_TEST_PYTHON}", "args": [str(SERVERS / "fake_stdio.py")]}
GATE = {"command": "${MCP_TEST_PYTHON}", "args": [str(SERVERS / "gate_stdio.py")],
        "env": {"GATE_PORT": "${MCP_TEST_GATE_PORT}", "GATE_LINGER": "1"}}
# Pinned: no era probe, so a server held at its start is not taken for an old one.
PINNED = {"protocol_version": "2025-11-25"}
_databases = itertools.count(1)


# -- processes -------------------------------------------------------------------------


def children(pid: int) -> List[int]:
    """Running processes whose parent is ``pid``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and parent_pid(int(entry)) == pid and running(int(entry)):
            found.append(int(entry))
    return sorted(found)


def descendants(pid: int) -> List[int]:
    found = []
    for child in children(pid):
        found += [child, *descendants(child)]
    return found


def is_server(pid: int) -> bool:
    """The process runs one of the MCP servers these tests configure."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmdline = f.read()
    except OSError:
        return False
    return any(name in cmdline for name in (b"mcp_sync.demo_server", b"sdk_server.py",
                                            b"gate_stdio.py"))


def exists(pid: int) -> bool:
    """The process is still there, even as a zombie nobody reaped."""
    return os.path.exists(f"/proc/{pid}")


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A private redis-server on 127.0.0.1, persistence off; stopped by PID."""
    with redis_server(tmp_path_factory.mktemp("redis")) as (url, _):
        yield url


@pytest.fixture
def broker(redis_url: str) -> str:
    """A database of its own for each test: no message of one test reaches another."""
    database = next(_databases)
    assert database < 16, "redis-server has 16 databases by default"
    return f"{redis_url}/{database}"


@pytest.fixture
def caller(broker: str) -> Iterator[Celery]:
    """The calling side: a plain Celery app that knows the task only by its name."""
    app = Celery("caller", broker=broker, backend=broker, set_as_current=False)
    app.conf.broker_connection_retry_on_startup = True
    try:
        yield app
    finally:
        # app.close() leaves the redis sockets of the result backend and the broker pool
        # to the garbage collector, whose ResourceWarning may then land in a later test.
        client = getattr(app.backend, "client", None)
        if client is not None:
            client.connection_pool.disconnect()
        app.pool.force_close_all()
        app.close()


def call(app: Celery, name: str, arguments: Any = None, timeout: Any = None) -> AsyncResult:
    return app.send_task(CALL_TOOL, args=[name, arguments, timeout])


class Worker:
    """One ``celery worker`` process (a machine, for the test)."""

    def __init__(self, name: str, pool: str, concurrency: int, env: Dict[str, str]) -> None:
        self.name = name
        self.pool = pool
        command = [PY, "-m", "celery", "-A", "celery_app", "worker", "-n", f"{name}@%h",
                   "-P", pool, "-c", str(concurrency), "-O", "fair", "--loglevel", "INFO",
                   "--without-gossip", "--without-mingle", "--without-heartbeat"]
        self.process = subprocess.Popen(command, cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        text=True)
        self.log = LineWatcher(self.process.stdout, f"worker-{name}")  # type: ignore[arg-type]

    @property
    def pid(self) -> int:
        return self.process.pid

    def wait_ready(self, timeout: float = 60.0) -> None:
        self.log.wait_for(lambda lines: any(" ready." in line for line in lines), timeout)

    def executors(self) -> List[int]:
        """The processes that run tasks: the pool's processes, or the worker itself."""
        if self.pool == "prefork":
            return [pid for pid in children(self.pid) if not is_server(pid)]
        return [self.pid]

    def servers(self) -> Dict[int, List[int]]:
        """Each executing process and its children (its MCP servers)."""
        return {executor: children(executor) for executor in self.executors()}


class Cluster:
    """Workers sharing one broker; started together, stopped by PID."""

    def __init__(self, broker: str, servers: Dict[str, Any],
                 workers: Sequence[Tuple[str, str, int]], *,
                 options: Optional[Dict[str, Any]] = None,
                 task_options: Optional[Dict[str, Any]] = None,
                 gate: Optional[Gate] = None,
                 extra_env: Optional[Dict[str, str]] = None) -> None:
        env = subprocess_env(
            MCP_TEST_REDIS=broker, MCP_TEST_SERVERS=json.dumps(servers),
            MCP_TEST_OPTIONS=json.dumps(options or {}),
            MCP_TEST_TASK_OPTIONS=json.dumps(task_options or {}), MCP_TEST_PYTHON=PY,
            MCP_TEST_GATE_PORT=str(gate.port if gate else 0), **(extra_env or {}))
        env["PYTHONPATH"] = os.pathsep.join([str(SERVERS), env["PYTHONPATH"]])
        self.workers = [Worker(name, pool, concurrency, env)
                        for name, pool, concurrency in workers]
        self.seen: set[int] = set()  # every process of the workers' trees we saw

    def __enter__(self) -> Cluster:
        try:
            for worker in self.workers:
                worker.wait_ready()
        except BaseException:
            self.kill()
            raise
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.kill()

    def trees(self) -> List[int]:
        pids = []
        for worker in self.workers:
            pids += [worker.pid, *descendants(worker.pid)]
        self.seen.update(pids)
        return pids

    def stop(self, timeout: float = 60.0) -> List[int]:
        """Warm shutdown (SIGTERM) of every worker; returns the processes of their trees
        still there (zombies included) right after the last worker exited."""
        pids = self.trees()
        for worker in self.workers:
            worker.process.send_signal(signal.SIGTERM)
        for worker in self.workers:
            assert worker.process.wait(timeout) == 0, worker.log.text
        return [pid for pid in pids if exists(pid)]

    def kill(self) -> None:
        """Clean-up: whatever is left of the workers and their children, by PID."""
        pids = set(self.trees()) | self.seen
        for worker in self.workers:
            if worker.process.poll() is None:
                worker.process.kill()
        for pid in pids:
            if running(pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        for worker in self.workers:
            worker.process.wait(10)
            worker.log.join()
            worker.process.stdout.close()  # type: ignore[union-attr]
        assert wait_gone(pids, 10) == []


def store_calling(app: Celery, task_id: str, meta: Dict[str, Any]) -> None:
    """Leave the CALLING record an earlier delivery of ``task_id`` would have left."""
    with warnings.catch_warnings():
        # Celery's Redis backend stores with SETEX, which the redis client deprecates.
        warnings.filterwarnings("ignore", "Call to deprecated setex", DeprecationWarning)
        app.backend.store_result(task_id, meta, CALLING)


def payload_of(excinfo: pytest.ExceptionInfo[CallToolFailed]) -> Dict[str, Any]:
    return excinfo.value.payload


# -- in one process ----------------------------------------------------------------------


def test_manager_safe_to_retry_is_the_rule_of_its_own_retry() -> None:
    with Manager({"mcpServers": {"demo": {"command": PY, "args": ["-m", "mcp_sync.demo_server"],
                                          "cwd": str(ROOT)}}}) as manager:
        assert manager.safe_to_retry("demo", "add")  # readOnlyHint, idempotentHint
        assert not manager.safe_to_retry("demo", "echo")  # no hints, fate unknown
        not_sent, sent = ConnectionClosed("lost"), ConnectionClosed("lost")
        not_sent.request_sent, sent.request_sent = False, True
        assert manager.safe_to_retry("demo", "echo", not_sent)
        assert not manager.safe_to_retry("demo", "echo", sent)
        assert manager.safe_to_retry("demo", "add", sent)
        with pytest.raises(KeyError):
            manager.safe_to_retry("nope", "add")


def test_one_manager_built_on_first_use_and_closed_by_the_worker_signals() -> None:
    app = Celery("unit", set_as_current=False)
    app.conf.mcp_servers = {"demo": {**DEMO, "cwd": str(ROOT)}}
    mcp = MCP(app, environ={"MCP_TEST_PYTHON": PY})  # for ${MCP_TEST_PYTHON}
    assert not mcp._process_manager.built  # nothing starts at import or registration
    assert CALL_TOOL in app.tasks
    for signal_ in (signals.worker_process_shutdown, signals.worker_shutdown):
        client = mcp.client()
        assert client is mcp.client("demo") and mcp.manager()["demo"] is client
        assert client.call_tool("add", {"a": 1, "b": 2}).structured == {"sum": 3}
        server = client.transport.pid  # type: ignore[attr-defined]
        assert server in child_pids()
        signal_.send(sender=None, pid=os.getpid(), exitcode=0)
        assert not mcp._process_manager.built
        assert not exists(server)  # stopped and reaped by the close


def test_missing_configuration_names_the_setting() -> None:
    mcp = MCP(Celery("unit", set_as_current=False))
    with pytest.raises(ValueError, match="mcp_servers is not set"):
        mcp.manager()


def test_call_tool_failed_survives_pickle_and_json_as_message_and_payload() -> None:
    failure = CallToolFailed("demo__echo: ConnectionClosed: lost",
                             {"type": "ConnectionClosed", "requestSent": True})
    copy = pickle.loads(pickle.dumps(failure))
    assert (str(copy), copy.payload, copy.error_type) == (
        str(failure), failure.payload, "ConnectionClosed")
    # What the JSON result serializer stores: the class's module and name, and args.
    app = Celery("unit", backend="cache+memory://", set_as_current=False)
    stored = json.loads(json.dumps(app.backend.prepare_exception(failure, "json")))
    assert stored["exc_module"] == "mcp_sync.contrib.celery"
    rebuilt = app.backend.exception_to_python(stored)
    assert type(rebuilt) is CallToolFailed and rebuilt.payload == failure.payload


# -- real workers ------------------------------------------------------------------------


def expected_add(server: str, i: int) -> Tuple[List[Any], Dict[str, Any]]:
    """The arguments of the i-th ``add`` call and its structured result."""
    if server == "demo":
        return [i, 0.5], {"sum": i + 0.5}
    return [i, 1000], {"result": i + 1000}  # the SDK's add takes integers


@pytest.mark.parametrize("server", ["demo", pytest.param("sdk", marks=pytest.mark.peer)])
def test_two_machines_and_a_threads_worker_share_200_calls(
    server: str, broker: str, caller: Celery
) -> None:
    servers = {"calc": DEMO if server == "demo" else SDK}
    workers = [("alpha", "prefork", 2), ("beta", "prefork", 2), ("gamma", "threads", 4)]
    quick_retries = {"retry_backoff": 0.2, "retry_backoff_max": 2.0, "max_retries": 20}
    with Cluster(broker, servers, workers, options=PINNED,
                 task_options=quick_retries) as cluster:
        def batch(start: int) -> None:
            sent = []
            for i in range(start, start + 100):
                if i % 2:
                    sent.append((i, call(caller, "echo", {"text": f"task {i}"})))
                else:  # qualified, with the per-call timeout
                    (a, b), _ = expected_add(server, i)
                    sent.append((i, call(caller, "calc__add", {"a": a, "b": b}, 30)))
            for i, result in sent:
                answer = result.get(timeout=60)
                assert answer["isError"] is False
                if i % 2:
                    assert answer["content"][0]["text"] == f"task {i}"
                else:
                    assert answer["structuredContent"] == expected_add(server, i)[1]

        batch(0)
        # A server child killed between two batches loses no task: calls to it are never
        # sent, so the manager (or Celery's retry) sends them again on a new connection.
        (first_pool, first_servers), *_ = cluster.workers[0].servers().items()
        (killed,) = first_servers
        os.kill(killed, signal.SIGKILL)
        assert wait_gone([killed]) == []
        batch(100)
        replaced = wait_for(lambda: [pid for pid in children(first_pool) if pid != killed],
                              30, "the killed server to be replaced")

        # The user's own tasks use the same client: MCP.client() in each process.
        whoami = [caller.send_task("tests.whoami", kwargs={"a": i, "b": 1}) for i in range(20)]
        for i, result in enumerate(whoami):
            answer = result.get(timeout=60)
            assert parent_pid(answer["server"]) == answer["pid"]
            assert answer["result"] == ({"sum": i + 1} if server == "demo" else {"result": i + 1})

        # Exactly one server child in every process that runs tasks (5 of them), each
        # started by that process itself; the killed one was replaced.
        per_process = {pid: kids for worker in cluster.workers
                       for pid, kids in worker.servers().items()}
        assert len(per_process) == 5
        assert all(len(kids) == 1 for kids in per_process.values()), per_process
        assert killed not in {kid for kids in per_process.values() for kid in kids}
        assert all(is_server(kid) for kids in per_process.values() for kid in kids)
        assert per_process[first_pool] == replaced
        for worker in cluster.workers[:2]:  # no server in a prefork worker's main process
            assert not any(is_server(pid) for pid in children(worker.pid))

        # Warm shutdown leaves nothing behind: every pool process and server is gone,
        # reaped by its parent, by the time the worker exits.
        assert cluster.stop() == []


def test_server_killed_mid_call_is_retried_only_when_safe(broker: str, caller: Celery) -> None:
    with Gate() as gate, Cluster(
        broker, {"gate": GATE}, [("threads", "threads", 4)],
        options={**PINNED, "backoff": [0.2], "retry_wait": 0.5},
        task_options={"retry_backoff": 0.2, "retry_backoff_max": 1.0, "max_retries": 30},
        gate=gate,
    ) as cluster:
        worker = cluster.workers[0]
        assert call(caller, "gate__echo", {"text": "warm"}).get(timeout=60)[
            "content"][0]["text"] == "warm"
        (first,) = gate.starts()
        assert first.ppid == worker.pid  # threads pool: the worker process's own child

        read = call(caller, "gate__hold", {"key": "read-1"})
        write = call(caller, "gate__hold_write", {"key": "write-1"})
        gate.wait_for(lambda arrivals: len(gate.calls(pid=first.pid)) == 2)
        gate.hold_starts = True  # the replacement server will wait at its start
        os.kill(first.pid, signal.SIGKILL)

        # Not annotated and already sent: fails at once, saying why; never called again.
        with pytest.raises(CallToolFailed) as failed:
            write.get(timeout=30)
        payload = payload_of(failed)
        assert payload["type"] == "ConnectionClosed"
        assert payload["classes"] == ["ConnectionClosed", "TransportError", "MCPError"]
        # The request was written; whether the server read it, nobody knows.
        assert payload["requestSent"] is not False
        assert (payload["mayHaveRun"], payload["retryable"]) == (True, False)
        assert "not retried" in str(failed.value)

        # While the new server is held at its start, calls are not sent anywhere: the
        # task is retried by Celery, with backoff, until the server is back.
        gate.wait_for(lambda arrivals: len(gate.starts()) == 2)
        during = call(caller, "gate__echo", {"text": "during"})
        wait_for(lambda: during.state == "RETRY", 30, "the echo task to be retried")
        wait_for(lambda: read.state == "RETRY", 30, "the hold task to be retried")
        gate.release_starts()
        second = gate.starts()[1]
        assert during.get(timeout=60)["content"][0]["text"] == "during"

        # readOnlyHint: called again on the new server, and answered.
        again = gate.wait_for(lambda arrivals: gate.calls(key="read-1", pid=second.pid))
        gate.release(again[0])
        assert read.get(timeout=60)["content"][0]["text"] == "read-1"
        assert [c.pid for c in gate.calls(key="write-1")] == [first.pid]

        # A message delivered again after its task succeeded (its worker was lost before
        # the acknowledgement) returns the stored result instead of calling again.
        once = call(caller, "gate__hold_write", {"key": "once"})
        gate.release(gate.wait_for(lambda arrivals: gate.calls(key="once"))[0])
        assert once.get(timeout=60)["content"][0]["text"] == "once"
        caller.send_task(CALL_TOOL, args=["gate__hold_write", {"key": "once"}], task_id=once.id)
        worker.log.wait_for(lambda lines: any(
            once.id in line and "not calling again" in line for line in lines), 30)
        assert len(gate.calls(key="once")) == 1

        # The CALLING record counts only within one round of retries. Celery publishes a
        # retry before it records RETRY for the attempt that sent it, so the retry may
        # find that attempt's CALLING: the call it made had ended, and this one goes on.
        record = {"tool": "gate__hold_write", "hostname": "lost@host", "pid": 1,
                  "delivery": 1, "retries": 0}
        store_calling(caller, "round-0-ended", record)
        retry = caller.send_task(CALL_TOOL, args=["gate__hold_write", {"key": "retry"}],
                                 task_id="round-0-ended", retries=1)
        gate.release(gate.wait_for(lambda arrivals: gate.calls(key="retry"))[0])
        assert retry.get(timeout=60)["content"][0]["text"] == "retry"
        # The same round delivered again: its call may have run; not called again.
        store_calling(caller, "round-1-lost", {**record, "retries": 1})
        lost = caller.send_task(CALL_TOOL, args=["gate__hold_write", {"key": "lost"}],
                                task_id="round-1-lost", retries=1)
        with pytest.raises(CallToolFailed) as failed:
            lost.get(timeout=60)
        assert payload_of(failed)["type"] == "WorkerLost"
        assert "on lost@host, process 1" in payload_of(failed)["message"]
        assert gate.calls(key="lost") == []

        # The worker's shutdown stops its server (which ignores EOF: only the client's
        # SIGTERM ends it) before the worker exits.
        assert cluster.stop() == []
        assert not exists(second.pid)


def test_worker_process_lost_mid_call_is_redelivered_only_when_safe(
    broker: str, caller: Celery
) -> None:
    with Gate() as gate, Cluster(broker, {"gate": GATE}, [("prefork", "prefork", 2)],
                                 options=PINNED, gate=gate) as cluster:
        read = call(caller, "gate__hold", {"key": "read-2"})
        write = call(caller, "gate__hold_write", {"key": "write-2"})
        calls = gate.wait_for(lambda arrivals: len(gate.calls()) == 2 and gate.calls())
        pools = {c.key: c.ppid for c in calls}
        assert set(pools.values()) <= set(cluster.workers[0].executors())
        assert len(set(pools.values())) == 2  # fair scheduling: one call per pool process
        assert wait_for(lambda: AsyncResult(read.id, app=caller).state == CALLING, 10,
                          "the CALLING record")
        assert AsyncResult(read.id, app=caller).info["tool"] == "gate__hold"

        # Both pool processes die mid-call; the worker requeues their messages.
        for pool in pools.values():
            os.kill(pool, signal.SIGKILL)

        # Not annotated: the earlier delivery may have called it; not called again.
        with pytest.raises(CallToolFailed) as failed:
            write.get(timeout=60)
        payload = payload_of(failed)
        assert payload["type"] == "WorkerLost" and payload["mayHaveRun"] is True
        assert f"process {pools['write-2']}" in payload["message"]
        # readOnlyHint: delivered again, called again by a new pool process.
        again = gate.wait_for(lambda arrivals: gate.calls(key="read-2")[1:])
        assert again[0].ppid not in pools.values()
        gate.release(again[0])
        assert read.get(timeout=60)["content"][0]["text"] == "read-2"
        assert len(gate.calls(key="write-2")) == 1

        # The servers of the killed processes are orphans (this one lingers after EOF;
        # a usual server exits there): stopped here. Every other server must be stopped
        # by its own pool process as it shuts down, before the worker exits.
        orphans = [c.pid for c in calls]
        for orphan in orphans:
            os.kill(orphan, signal.SIGKILL)
        assert wait_gone(orphans) == []
        servers = [s.pid for s in gate.starts() if s.pid not in orphans]
        assert len(servers) >= 1 and all(running(pid) for pid in servers)
        assert cluster.stop() == []
        assert [pid for pid in servers if exists(pid)] == []


CALLER_WITHOUT_MCP_SYNC = """
import json, sys
from celery import Celery
app = Celery("plain-caller", broker=sys.argv[1], backend=sys.argv[1])
app.conf.broker_connection_retry_on_startup = True
ok = app.send_task("mcp_sync.call_tool", args=["add", {"a": 2, "b": 3}]).get(timeout=30)
try:
    app.send_task("mcp_sync.call_tool", args=["nope"]).get(timeout=30)
except Exception as exc:
    failure = {"class": type(exc).__name__, "args": list(exc.args)}
assert "mcp_sync" not in sys.modules
print(json.dumps({"ok": ok, "failure": failure}))
"""


def test_solo_worker_results_and_failures_as_json(broker: str, caller: Celery) -> None:
    with Cluster(broker, {"demo": DEMO}, [("solo", "solo", 1)], options=PINNED) as cluster:
        worker = cluster.workers[0]
        # One server: a bare tool name is enough.
        answer = call(caller, "add", {"a": 2, "b": 3}).get(timeout=60)
        assert answer["structuredContent"] == {"sum": 5} and answer["isError"] is False
        json.dumps(answer)  # JSON data, with the wire names
        # A tool's own error is a result, not a failure.
        answer = call(caller, "add", {"a": "x", "b": 1}).get(timeout=30)
        assert answer["isError"] is True

        with pytest.raises(CallToolFailed) as failed:
            call(caller, "demo__nope", {}).get(timeout=30)
        payload = payload_of(failed)
        assert (payload["type"], payload["code"], payload["classes"]) == (
            "ServerError", -32602, ["ServerError", "MCPError"])
        assert payload["server"] == "demo" and payload["tool"] == "demo__nope"

        # The name is the sender's text: printable in the message and the payload.
        with pytest.raises(CallToolFailed) as failed:
            call(caller, "\x1b[2Jnope", {}).get(timeout=30)
        assert payload_of(failed)["tool"] == "\\x1b[2Jnope"
        assert "\x1b" not in str(failed.value)

        with pytest.raises(CallToolFailed) as failed:
            call(caller, "add", ["not", "an", "object"]).get(timeout=30)
        assert payload_of(failed)["type"] == "ValueError"
        assert "arguments must be an object" in payload_of(failed)["message"]

        with pytest.raises(CallToolFailed) as failed:
            call(caller, "count", {"n": 10, "interval": 5}, 0.5).get(timeout=30)
        assert payload_of(failed)["type"] == "RequestTimeout"
        assert payload_of(failed)["mayHaveRun"] is True and failed.value.payload["retries"] == 0

        # A caller that never imports mcp_sync gets Celery's stand-in of the same name.
        env = subprocess_env()
        env["PYTHONPATH"] = ""
        done = subprocess.run([PY, "-c", CALLER_WITHOUT_MCP_SYNC, broker], env=env,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        plain = json.loads(done.stdout)
        assert plain["ok"]["structuredContent"] == {"sum": 5}
        assert plain["failure"]["class"] == "CallToolFailed"
        message, failure = plain["failure"]["args"]
        assert failure["type"] == "ServerError" and "Unknown tool: nope" in message

        # solo: the worker process runs the tasks and owns the one server.
        me = caller.send_task("tests.whoami", kwargs={"a": 1, "b": 1}).get(timeout=30)
        assert me["pid"] == worker.pid and children(worker.pid) == [me["server"]]
        assert cluster.stop() == []


def test_one_trace_from_the_caller_through_the_task_to_the_mcp_server(
        broker: str, caller: Celery, tmp_path: Path) -> None:
    """opentelemetry-instrumentation-celery on both sides: the caller's span, the task's
    PRODUCER span in the caller, its CONSUMER span in the worker, the worker's MCP CLIENT
    span, and the server receiving that span's context in ``_meta``: one trace. The
    worker writes its spans to a file (``tests/servers/span_file.py``)."""
    from opentelemetry.instrumentation.celery import CeleryInstrumentor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    spans_file = tmp_path / "worker-spans.jsonl"

    def worker_spans() -> List[Dict[str, Any]]:
        if not spans_file.exists():
            return []
        return [json.loads(line) for line in spans_file.read_text().splitlines()]

    def named(name: str) -> Any:
        """The worker's one span ``name``, once it ended."""
        found = wait_for(lambda: [s for s in worker_spans() if s["name"] == name], 30,
                         f"the worker's {name} span")
        assert len(found) == 1, found
        return found[0]

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = CeleryInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        with Cluster(broker, {"fake": FAKE}, [("traced", "solo", 1)], options=PINNED,
                     extra_env={"MCP_TEST_SPANS": str(spans_file)}) as cluster:
            with provider.get_tracer("test").start_as_current_span("GET /report") as web:
                result = call(caller, "received", {"method": "tools/call"})
            answer = result.get(timeout=60)
            run = named("run/mcp_sync.call_tool")
            client_span = named("tools/call received")
            assert cluster.stop() == []
    finally:
        instrumentor.uninstrument()

    trace_id = f"{web.get_span_context().trace_id:032x}"
    (publish,) = [s for s in exporter.get_finished_spans()
                  if s.name == "apply_async/mcp_sync.call_tool"]
    assert publish.kind.name == "PRODUCER"
    assert publish.parent is not None
    assert publish.parent.span_id == web.get_span_context().span_id
    # The worker: the task's span is a child of the caller's, the MCP call of the task's.
    assert run["kind"] == "CONSUMER" and run["trace_id"] == trace_id
    assert run["parent_id"] == f"{publish.get_span_context().span_id:016x}"
    assert client_span["kind"] == "CLIENT" and client_span["trace_id"] == trace_id
    assert client_span["parent_id"] == run["span_id"]
    assert client_span["attributes"]["mcp.method.name"] == "tools/call"
    assert client_span["attributes"]["gen_ai.tool.name"] == "received"
    # The MCP server got the worker's CLIENT span as the parent of its work.
    calls = json.loads(answer["content"][0]["text"])
    (received,) = [m for m in calls if m["params"]["name"] == "received"]
    version, traced, parent, _flags = received["params"]["_meta"]["traceparent"].split("-")
    assert (version, traced, parent) == ("00", trace_id, client_span["span_id"])
