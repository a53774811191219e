"""The official Python SDK's client at a chosen revision (`legacy` for
2025-11-25's handshake, `auto` for 2026-07-28) driving `plughost serve` over
stdio, where the fixture server (`tests/fixtures/mcp/server.py`) is a plugin
whose tool `greet` asks its client for a name and for its roots.

Whatever revision the server speaks, the request reaches this client the way
its own revision says: a 2025-11-25 client is sent `elicitation/create` and
`roots/list`; a 2026-07-28 client gets an `input_required` result and sends
the call again with the answers.

It also calls `log` with the log level set (per request at 2026-07-28,
with `logging/setLevel` at 2025-11-25) and reports the log messages it got.

Usage: greet_client.py MODE PLUGHOST PLUGINS_DIR STATE_DIR
Prints one JSON object; the Rust test (tests/mcp_plugins.rs) checks it.
"""
import asyncio
import json
import os
import sys

import mcp.types as types
from mcp import Client, StdioServerParameters

asked = []
logged = []


async def elicitation(context, params):
    asked.append("elicitation/create")
    return types.ElicitResult(action="accept", content={"name": "Grace"})


async def roots(context):
    asked.append("roots/list")
    # The second is outside the plugin's grants: plughost keeps it from the server.
    return types.ListRootsResult(roots=[types.Root(uri="file:///srv/project", name="project"),
                                        types.Root(uri="file:///opt/elsewhere", name="elsewhere")])


async def logging(params):
    logged.append({"level": params.level, "logger": params.logger, "data": params.data})


async def main(mode, plughost, plugins, state):
    # The whole environment, as a client configured for plughost passes it:
    # the SDK's default keeps only HOME, PATH and a few more, and the plugin
    # finds its Python where PYENV_ROOT (or the home folder) says.
    server = StdioServerParameters(
        command=plughost, args=["--plugins-dir", plugins, "--state-dir", state, "serve"],
        env=dict(os.environ))
    # At 2026-07-28 the level rides each request; at 2025-11-25 the client
    # sets it once (logging/setLevel).
    async with Client(server, elicitation_callback=elicitation, list_roots_callback=roots,
                      logging_callback=logging, log_level="info", mode=mode, cache=None) as client:
        if mode == "legacy":
            await client.session.set_logging_level("info")
        result = await client.call_tool("py_greet", {"greeting": "Hi"})
        await client.call_tool("py_log", {"message": "a line for the log"})
        # Notifications may trail the answer they came with.
        for _ in range(50):
            if logged:
                break
            await asyncio.sleep(0.1)
        report = {
            "logged": logged,
            "protocol_version": client.protocol_version,
            "text": "\n".join(c.text for c in result.content if c.type == "text"),
            "is_error": bool(result.is_error),
            "asked": sorted(asked),
        }
    print(json.dumps(report))


asyncio.run(main(*sys.argv[1:]))
