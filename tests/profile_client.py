"""The official Python SDK's client running a plan of steps in ONE session of
`plughost serve`, over stdio or streamable HTTP, for the profile and tool
search tests (tests/mcp_profiles.rs).

Usage: profile_client.py stdio PLUGHOST ARGS_JSON PLAN_JSON
       profile_client.py http URL TOKEN PLAN_JSON

Steps: {"op": "list"} gives the tool names; {"op": "call", "name", "args"}
gives {is_error, text, structured}; {"op": "write", "path", "text"} writes a
file (a profile edited while the session is open); {"op": "list_until",
"has": NAME or "lacks": NAME, "within": SECS} lists until it holds;
{"op": "annotations"} gives each tool's annotations by name;
{"op": "subscribe", "uri"} gives {ok, error}; {"op": "heard", "after": SECS}
waits, then gives the log messages' data and the updated resources' URIs
the session received since the last "heard" (each sorted, once).
Prints one JSON array, a result per step.
"""
import asyncio
import json
import os
import sys
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


HEARD = {"logs": set(), "updated": set()}


async def on_log(params):
    HEARD["logs"].add(str(params.data))


async def on_message(message):
    if getattr(message, "method", None) == "notifications/resources/updated":
        HEARD["updated"].add(str(message.params.uri))


async def run(session, plan):
    out = []
    for step in plan:
        op = step["op"]
        if op == "list":
            tools = (await session.list_tools()).tools
            out.append(sorted(t.name for t in tools))
        elif op == "call":
            r = await session.call_tool(step["name"], step.get("args", {}))
            out.append({
                "is_error": bool(r.is_error),
                "text": "\n".join(c.text for c in r.content if c.type == "text"),
                "structured": r.structured_content,
            })
        elif op == "write":
            with open(step["path"], "w") as f:
                f.write(step["text"])
            out.append(None)
        elif op == "list_until":
            deadline = time.monotonic() + step.get("within", 10)
            while True:
                names = sorted(t.name for t in (await session.list_tools()).tools)
                ok = step["has"] in names if "has" in step else step["lacks"] not in names
                if ok or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.2)
            out.append({"ok": ok, "tools": names})
        elif op == "annotations":
            tools = (await session.list_tools()).tools
            out.append({t.name: (t.annotations.model_dump(by_alias=True, exclude_none=True)
                                 if t.annotations else {}) for t in tools})
        elif op == "subscribe":
            try:
                await session.subscribe_resource(step["uri"])
                out.append({"ok": True, "error": None})
            except Exception as e:
                out.append({"ok": False, "error": str(e)})
        elif op == "heard":
            await asyncio.sleep(step.get("after", 1))
            out.append({k: sorted(v) for k, v in HEARD.items()})
            for v in HEARD.values():
                v.clear()
    return out


async def main(mode, *args):
    if mode == "stdio":
        plughost, server_args, plan = args[0], json.loads(args[1]), json.loads(args[2])
        params = StdioServerParameters(command=plughost, args=server_args, env=dict(os.environ))
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, logging_callback=on_log, message_handler=on_message) as session:
                await session.initialize()
                result = await run(session, plan)
    else:
        url, token, plan = args[0], args[1], json.loads(args[2])
        client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with client, streamable_http_client(url, http_client=client) as streams:
            async with ClientSession(streams[0], streams[1], logging_callback=on_log, message_handler=on_message) as session:
                await session.initialize()
                result = await run(session, plan)
    print(json.dumps(result))


# A server that never answers fails the test instead of hanging it.
asyncio.run(asyncio.wait_for(main(*sys.argv[1:]), 90))
