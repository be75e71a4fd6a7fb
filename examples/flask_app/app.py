"""A Flask app whose views call MCP tools through one shared client per process.

Run it from this folder with Flask's threaded development server, which listens on
port 5000::

    flask --app app run
    curl 'http://127.0.0.1:5000/add?a=2&b=3'

or with gunicorn, two pre-forked workers of eight threads each (each worker process
starts its own demo server on its first request), here on port 8000::

    gunicorn --workers 2 --threads 8 --bind 127.0.0.1:8000 app:app
    curl 'http://127.0.0.1:8000/add?a=2&b=3'

Errors are answered in JSON (``{"error": ..., "message": ...}``), never an HTML page:
400 for a request the app cannot use (``/add?a=x``), 502 or 504 when the MCP server
failed or timed out, 503 when ``POST /ask`` has no model configured (no API key) and
from ``/reports`` while the server reconnects, 500 (logged) for anything else.

``POST /ask`` lets a language model answer a question with the demo server's tools, through
:class:`mcp_sync.Toolbox`: OpenAI (Chat Completions) or Anthropic (Messages), as
``MCP_SYNC_EXAMPLE_PROVIDER`` says (``openai`` by default; ``pip install openai`` or
``anthropic``). The SDK finds its key and endpoint in its own variables::

    OPENAI_API_KEY=... flask --app app run
    MCP_SYNC_EXAMPLE_PROVIDER=anthropic ANTHROPIC_API_KEY=... flask --app app run
    curl -H 'Content-Type: application/json' -d '{"question": "What is 2.5 + 4?"}' \\
        http://127.0.0.1:5000/ask

(``OPENAI_BASE_URL`` or ``ANTHROPIC_BASE_URL`` points the SDK at another endpoint, and
``MCP_SYNC_EXAMPLE_MODEL`` chooses the model.)

``POST /reports`` starts the demo server's ``slow_report`` tool as a task and answers at
once (202) with the server's name and the task's id; ``GET /reports/<server>/<task_id>``
collects it: 202 while it works, 200 with the report when it is done::

    curl -H 'Content-Type: application/json' -d '{"topic": "tides"}' \\
        http://127.0.0.1:5000/reports              # {"server": "demo", "task": "task-1"}
    curl http://127.0.0.1:5000/reports/demo/task-1

The demo server is a child of each worker process, and its tasks live there: ask the
worker that started the task (see docs/web-apps.md).
"""

from __future__ import annotations

import math
import os
import sys
import threading
from typing import Any, List

from flask import Flask, jsonify, request, url_for
from flask.typing import ResponseReturnValue
from werkzeug.exceptions import HTTPException

import mcp_sync
from mcp_sync.contrib.flask import MCP
from mcp_sync.manager import ServerUnavailable

app = Flask(__name__)
app.config["MCP_SERVERS"] = {
    # The demo server that ships inside mcp_sync, run by this interpreter.
    "demo": {"command": sys.executable, "args": ["-m", "mcp_sync.demo_server"]},
}
app.config["MCP_OPTIONS"] = {"timeout": 20}
mcp = MCP(app)

# The model for POST /ask: the provider, the model (empty: DEFAULT_MODELS[provider]), the
# most model calls one question may take, and keyword arguments for the SDK's client
# (``timeout``, ``max_retries``...).
DEFAULT_MODELS = {"openai": "gpt-4.1-mini", "anthropic": "claude-sonnet-4-5"}
app.config["LLM_PROVIDER"] = os.environ.get("MCP_SYNC_EXAMPLE_PROVIDER", "openai")
app.config["LLM_MODEL"] = os.environ.get("MCP_SYNC_EXAMPLE_MODEL", "")
app.config["LLM_MAX_TURNS"] = 8
app.config["LLM_OPTIONS"] = {}
if app.config["LLM_PROVIDER"] not in DEFAULT_MODELS:
    raise RuntimeError("MCP_SYNC_EXAMPLE_PROVIDER must be openai or anthropic, not "
                       f"{app.config['LLM_PROVIDER']!r}")


class BadInput(Exception):
    """A request the app cannot use: answered 400 with the reason."""


def number(name: str) -> float:
    """The query argument ``name`` as a finite number (0 when absent)."""
    text = request.args.get(name, "0")
    try:
        value = float(text)
    except ValueError:
        raise BadInput(f"{name} must be a number, not {text[:40]!r}") from None
    if not math.isfinite(value):  # nan and inf parse, but no JSON number holds them
        raise BadInput(f"{name} must be a finite number, not {text[:40]!r}")
    return value


@app.errorhandler(BadInput)
def bad_input(error: BadInput) -> ResponseReturnValue:
    return jsonify(error="BadRequest", message=str(error)), 400


@app.get("/add")
def add() -> ResponseReturnValue:
    """Add ``a`` and ``b`` with the demo server's ``add`` tool."""
    a, b = number("a"), number("b")
    client = mcp.get_client("demo")  # per request: cheap, and survives a reconnect
    result = client.call_tool("add", {"a": a, "b": b})
    return jsonify(
        sum=(result.structured or {}).get("sum"),
        worker=os.getpid(),  # which process answered (several under gunicorn)
        server=getattr(client.transport, "pid", None),  # that process's demo server
    )


@app.get("/tools")
def tools() -> ResponseReturnValue:
    return jsonify(tools=[tool.name for tool in mcp.get_client("demo").list_tools()])


@app.get("/status")
def status() -> ResponseReturnValue:
    servers = mcp.get_manager().status()
    return jsonify(worker=os.getpid(), servers={n: s.to_dict() for n, s in servers.items()})


# -- a long tool: start a task now, collect it later -------------------------------------------

# How long the demo server's slow_report takes, and how long (seconds) the server keeps
# the task and its report for a later request.
app.config["REPORT_SECONDS"] = 5.0
app.config["REPORT_TTL"] = 3600


def unavailable(error: ServerUnavailable) -> ResponseReturnValue:
    # The server is down and being reconnected: the client may ask again soon.
    return jsonify(error="ServerUnavailable", message=str(error)), 503, {"Retry-After": "2"}


@app.post("/reports")
def start_report() -> ResponseReturnValue:
    """Start a report on ``{"topic": "..."}``: 202 with ``{"server", "task"}`` (and the URL
    to collect it in ``Location``), at once; the tool runs on in the demo server."""
    body = request.get_json(silent=True)
    topic = body.get("topic") if isinstance(body, dict) else None
    if not isinstance(topic, str):
        return jsonify(error="BadRequest", message='send {"topic": "..."}'), 400
    arguments = {"topic": topic, "seconds": app.config["REPORT_SECONDS"]}
    try:
        handle = mcp.get_manager().start_tool_task("demo", "slow_report", arguments,
                                                   ttl=app.config["REPORT_TTL"])
    except ServerUnavailable as error:
        return unavailable(error)
    location = url_for("report", server="demo", task_id=handle.id)
    return jsonify(server="demo", task=handle.id), 202, {"Location": location}


@app.get("/reports/<server>/<task_id>")
def report(server: str, task_id: str) -> ResponseReturnValue:
    """Collect a report: 202 ``{"status", "message"}`` while the task works, 200
    ``{"status": "completed", "text"}`` once done, 404 for a task the server does not
    know (never started, or its ttl passed), 502 for a failed task, 410 for a cancelled
    one, 503 while the server is reconnecting."""
    try:
        handle = mcp.get_manager().task(server, task_id)  # re-attach: sends nothing
        task = handle.status(timeout=5)  # one tasks/get
        if task.status in ("working", "input_required"):
            return jsonify(status=task.status, message=task.status_message), 202
        result = handle.result(timeout=10)  # it has ended: one tasks/result
    except (KeyError, mcp_sync.TaskNotFound):
        return jsonify(error="NotFound", message=f"{server} has no task {task_id!r} "
                       "(never started, or expired)"), 404
    except ServerUnavailable as error:
        return unavailable(error)
    except mcp_sync.TaskFailed as error:  # the server's JSON-RPC error
        return jsonify(status="failed", error="TaskFailed",
                       message=str(error.error or error)), 502
    except mcp_sync.TaskCancelled as error:
        return jsonify(status="cancelled", error="TaskCancelled", message=str(error)), 410
    if result.is_error:  # the tool ran and reported an error
        return jsonify(status="failed", error="ToolError", message=result.text), 502
    return jsonify(status="completed", text=result.text)


@app.get("/reports")
def reports() -> ResponseReturnValue:
    """Every task this process's servers keep (a collector's view: what is still
    working, what can be collected)."""
    listed = mcp.get_manager().list_tasks()  # (server, Task) pairs
    return jsonify(reports=[{"server": server, "task": task.task_id, "status": task.status,
                             "message": task.status_message} for server, task in listed])


# -- a language model using the tools ---------------------------------------------------------


class StillCallingTools(Exception):
    """The model still asked for tools in the last turn it was allowed."""


def ask_openai(llm: Any, toolbox: mcp_sync.Toolbox, model: str, question: str,
               max_turns: int) -> str:
    """Answer ``question`` with OpenAI's Chat Completions, running the tools it calls."""
    tools = toolbox.to_openai()
    messages: List[Any] = [{"role": "user", "content": question}]
    for _ in range(max_turns):
        response = llm.chat.completions.create(model=model, messages=messages, tools=tools)
        message = response.choices[0].message
        if not message.tool_calls:
            return message.content or ""
        messages.append(message)
        messages += toolbox.answer_openai(message)  # runs the calls; one tool message each
    raise StillCallingTools(max_turns)


def ask_anthropic(llm: Any, toolbox: mcp_sync.Toolbox, model: str, question: str,
                  max_turns: int) -> str:
    """Answer ``question`` with Anthropic's Messages, running the tools it calls."""
    tools = toolbox.to_anthropic()
    messages: List[Any] = [{"role": "user", "content": question}]
    for _ in range(max_turns):
        response = llm.messages.create(model=model, max_tokens=1024, messages=messages,
                                       tools=tools)
        answer = toolbox.answer_anthropic(response)  # runs the calls; None when there are none
        if answer is None:
            return "".join(block.text for block in response.content if block.type == "text")
        messages.append({"role": "assistant", "content": response.content})
        messages.append(answer)  # one user turn of tool_result blocks
    raise StillCallingTools(max_turns)


class ModelNotConfigured(Exception):
    """No model to ask: its SDK is not installed, or no API key is set (answered 503)."""


# The variable each SDK reads its key from, and the package that provides it.
API_KEYS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}

_llm_lock = threading.Lock()  # guards app.extensions["llm"]


def llm() -> Any:
    """This process's client of the model's API, made on first use (in each gunicorn
    worker, after the fork) and shared by the request threads, as the SDKs allow.

    Raises:
        ModelNotConfigured: the provider's SDK is missing, or its key is not set (in
            the environment or as ``api_key`` in LLM_OPTIONS).
    """
    with _llm_lock:
        if "llm" not in app.extensions:
            provider, options = app.config["LLM_PROVIDER"], app.config["LLM_OPTIONS"]
            key = API_KEYS[provider]
            if not (options.get("api_key") or os.environ.get(key)):
                raise ModelNotConfigured(f"no model is configured: set {key} (the "
                                         f"{provider} SDK reads it) and restart the app")
            try:
                if provider == "anthropic":
                    import anthropic  # reads ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL

                    app.extensions["llm"] = anthropic.Anthropic(**options)
                else:
                    import openai  # reads OPENAI_API_KEY and OPENAI_BASE_URL

                    app.extensions["llm"] = openai.OpenAI(**options)
            except ImportError as error:
                raise ModelNotConfigured(f"no model is configured: pip install {provider} "
                                         f"({error})") from error
        return app.extensions["llm"]


@app.post("/ask")
def ask() -> ResponseReturnValue:
    """Answer ``{"question": "..."}`` with ``{"answer": "..."}``: the model's last text,
    after it called the demo server's tools as often as it chose (within LLM_MAX_TURNS)."""
    body = request.get_json(silent=True)
    question = body.get("question") if isinstance(body, dict) else None
    if not isinstance(question, str) or not question.strip():
        return jsonify(error="BadRequest", message='send {"question": "..."}'), 400
    provider = app.config["LLM_PROVIDER"]
    model = app.config["LLM_MODEL"] or DEFAULT_MODELS[provider]
    toolbox = mcp_sync.Toolbox(mcp.get_manager())  # the tools are named demo__add...
    ask_model = ask_anthropic if provider == "anthropic" else ask_openai
    answer = ask_model(llm(), toolbox, model, question, app.config["LLM_MAX_TURNS"])
    return jsonify(answer=answer, provider=provider, model=model)


@app.errorhandler(ModelNotConfigured)
def model_not_configured(error: ModelNotConfigured) -> ResponseReturnValue:
    return jsonify(error="ModelNotConfigured", message=str(error)), 503


@app.errorhandler(StillCallingTools)
def still_calling_tools(error: StillCallingTools) -> ResponseReturnValue:
    message = f"the model still called tools after {error.args[0]} turns"
    return jsonify(error="StillCallingTools", message=message), 502


@app.errorhandler(mcp_sync.MCPError)
def mcp_error(error: mcp_sync.MCPError) -> ResponseReturnValue:
    # The server is down (and being reconnected), timed out, or answered with an error.
    status = 504 if isinstance(error, mcp_sync.RequestTimeout) else 502
    return jsonify(error=type(error).__name__, message=str(error)), status


@app.errorhandler(HTTPException)
def http_error(error: HTTPException) -> ResponseReturnValue:
    # Flask's own answers (404, 405, and the 500 of an unhandled exception, which Flask
    # has logged with its traceback) in JSON too, without the details of a crash.
    return jsonify(error=error.name.replace(" ", ""), message=error.description), error.code
