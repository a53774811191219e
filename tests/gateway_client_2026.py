"""A real MCP 2026-07-28 client (the official Python SDK's `mcp.Client`) that
drives `plughost serve` serving `@modelcontextprotocol/server-everything` (a
2025-11-25 server) as an MCP plugin, and reports what came back.

The server asks its client for an elicitation, a sample and the roots while
a tool call runs; a 2026-07-28 client is never sent a request, so plughost
answers the call with `input_required` results, and the SDK fulfils their
input requests through its callbacks and retries with the answers and the
`requestState`. This client records each round it saw.

Usage: gateway_client_2026.py PLUGHOST PLUGINS_DIR STATE_DIR stdio
       gateway_client_2026.py PLUGHOST PLUGINS_DIR STATE_DIR http URL TOKEN
Prints one JSON object; the Rust test (tests/gateway.rs) checks it.
"""
import asyncio
import json
import sys

import mcp.types as types
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

ROOT = "file:///srv/project"
ELSEWHERE = "file:///opt/elsewhere"
VERSION = "2026-07-28"

# What each callback was asked, with the key it was asked under: in a round
# the SDK passes the input request's key as the context's request id (a
# server-to-client request would carry a JSON-RPC id instead).
asked = []


async def sampling(context, params):
    asked.append({"callback": "sampling", "key": context.request_id})
    question = params.messages[0].content.text
    return types.CreateMessageResult(
        role="assistant", model="test-model",
        content=types.TextContent(type="text", text=f"sampled: {question}"))


async def elicitation(context, params):
    asked.append({"callback": "elicitation", "key": context.request_id})
    return types.ElicitResult(action="accept", content={"name": "Grace Hopper", "check": True})


async def roots(context):
    asked.append({"callback": "roots", "key": context.request_id})
    # The second is outside the plugin's grants: plughost keeps it from the server.
    return types.ListRootsResult(roots=[types.Root(uri=ROOT, name="project"),
                                        types.Root(uri=ELSEWHERE, name="elsewhere")])


def text(result):
    return "\n".join(c.text for c in result.content if c.type == "text")


async def drive(client, report):
    session = client.session
    report["protocol_version"] = client.protocol_version
    # `mode="auto"` probes server/discover and falls back to initialize only
    # when the server is not a 2026-07-28 one: exactly one of these is set.
    report["discovered"] = session.discover_result is not None
    report["initialized"] = session.initialize_result is not None
    report["supported_versions"] = (
        session.discover_result.supported_versions if session.discover_result else [])

    # Every tools/call leg the SDK sends, and what it got: `Client.call_tool`
    # drives the rounds through `session.call_tool(..., allow_input_required=True)`.
    legs = []
    plain_call_tool = session.call_tool

    async def call_tool(name, arguments=None, **kw):
        leg = {
            "tool": name,
            "sent_responses": sorted(kw.get("input_responses") or {}),
            "sent_state": kw.get("request_state") is not None,
        }
        legs.append(leg)
        result = await plain_call_tool(name, arguments, **kw)
        if isinstance(result, types.InputRequiredResult):
            leg["got"] = "input_required"
            leg["input_requests"] = {
                k: r.method for k, r in (result.input_requests or {}).items()}
            leg["got_state"] = bool(result.request_state)
        else:
            leg["got"] = "complete"
        return result

    session.call_tool = call_tool

    tools = (await client.list_tools()).tools
    report["tools"] = sorted(t.name for t in tools)

    r = await client.call_tool("ev_echo", {"message": "hello 2026"})
    report["echo"] = {"text": text(r), "is_error": bool(r.is_error)}
    # server-everything asks for the roots on its own 350 ms after its
    # session starts (the call above started it). Asked while no call runs,
    # plughost refuses it and the server keeps no roots; asked during the
    # next call, it would join that call's round. Let it pass first, so each
    # round below holds exactly the request its tool makes.
    await asyncio.sleep(1.0)

    for tool, args, key in [
        ("ev_trigger-elicitation-request", {}, "elicitation"),
        ("ev_trigger-sampling-request", {"prompt": "the tide?", "maxTokens": 20}, "sampling"),
        ("ev_get-roots-list", {}, "roots"),
    ]:
        r = await client.call_tool(tool, args)
        report[key] = {"text": text(r), "is_error": bool(r.is_error)}

    report["legs"] = legs
    report["asked"] = asked


async def main(plughost, plugins, state, transport, *rest):
    report = {"transport": transport}
    callbacks = dict(sampling_callback=sampling, elicitation_callback=elicitation,
                     list_roots_callback=roots, mode="auto", cache=None)
    if transport == "stdio":
        server = StdioServerParameters(
            command=plughost, args=["--plugins-dir", plugins, "--state-dir", state, "serve"])
        async with Client(server, **callbacks) as client:
            await drive(client, report)
    elif transport == "http":
        url, token = rest
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with http, Client(streamable_http_client(url, http_client=http), **callbacks) as client:
            await drive(client, report)
    else:
        raise SystemExit(f"unknown transport {transport!r}")
    print(json.dumps(report))


asyncio.run(main(*sys.argv[1:]))
