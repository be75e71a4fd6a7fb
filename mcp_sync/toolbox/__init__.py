"""MCP tools in front of a language model, from blocking code.

::

    toolbox = mcp_sync.Toolbox(manager)        # or Toolbox(client), Toolbox([c1, c2])
    response = openai_client.chat.completions.create(
        model=model, messages=messages, tools=toolbox.to_openai())
    message = response.choices[0].message
    messages.append(message)
    messages += toolbox.answer_openai(message)   # runs every tool call of the turn

A :class:`Toolbox` lists the tools of its sources (clients and managers), names each one
for the model (``<server>__<tool>``, made valid for the providers: see
:mod:`mcp_sync.toolbox._names`), hands their schemas over in each provider's format, and runs
the tool calls a model answers with. It never imports a provider's SDK: the ``to_*``
methods return plain dicts the SDKs take, and the ``answer_*`` methods read the SDKs'
response objects and plain dicts alike. LangChain is imported by :meth:`to_langchain`
only.

The calls of one turn run in parallel, at most ``max_workers`` at a time. A client's
calls are sent from the caller's thread as futures (:meth:`Client.call_tool_future`), so
no thread is started for them; a manager's calls (which may wait for a server to come up)
run on threads named ``mcp-sync-toolbox-<n>`` that live for that turn only. A single call
runs on the caller's thread. Each call is bounded by ``timeout``: the
client cancels it on the wire when it passes; a :class:`~mcp_sync.Manager` may add one
retry after a reconnect, when that is safe. The turn waits for its calls no longer than
those bounds allow (three timeouts, ``wait_for_server`` and a few seconds per round of
calls); a call still running then is answered as timed out and its thread left to end
with it.

Deferred tools: a :class:`~mcp_sync.Manager` keeps listing the tools of a server that is
reconnecting (its last listing), or still connecting (its listing saved on disk, with
``Manager(tool_cache=...)``). A call to one waits for its server to be connected, at most
``wait_for_server`` seconds, before the call itself starts; past that, the model reads
that the server is unavailable. The toolbox's first listing waits up to
``startup_wait`` for servers that are still connecting, so that it lists their live
tools when they come up quickly, and their saved ones otherwise.
"""

from ._toolbox import (
    Toolbox,
)

__all__ = [
    "Toolbox",
]
