"""A real MCP client (the official Python SDK) for plughost's HTTP mode.

Usage: mcp_http_client.py URL TOKEN
Prints one JSON object: what an unauthenticated request got, the tools, and
the results of a successful call and of a host error.
"""
import asyncio
import json
import sys
import urllib.error
import urllib.request

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def status_without(url, headers):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
    req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json", **headers})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


async def main(url, token):
    report = {
        "no_token_status": status_without(url, {}),
        "wrong_token_status": status_without(url, {"Authorization": "Bearer wrong"}),
    }
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with client, streamable_http_client(url, http_client=client) as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            report["server"] = init.server_info.name
            tools = await session.list_tools()
            report["tools"] = sorted(t.name for t in tools.tools)
            ok = await session.call_tool("hello_greet", {"name": "HTTP"})
            report["call"] = {"text": ok.content[0].text, "is_error": ok.is_error}
            bad = await session.call_tool("hello_greet", {"name": 3})
            report["host_error"] = {"text": bad.content[0].text, "is_error": bad.is_error}
    print(json.dumps(report))


asyncio.run(main(sys.argv[1], sys.argv[2]))
