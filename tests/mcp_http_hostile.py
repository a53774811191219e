"""Real MCP clients (the official Python SDK) that behave badly, or time a
call while others do, for plughost's HTTP mode.

Usage:
  mcp_http_hostile.py hang URL TOKEN TOOL    # starts a call, says "calling", waits forever
  mcp_http_hostile.py fast URL TOKEN TOOL ARGS_JSON
      # one call; prints {"ms", "text", "is_error"}; closing the session
      # (DELETE) happens on exit, and any warning of the SDK goes to stderr
  mcp_http_hostile.py ready-fast URL TOKEN TOOL ARGS_JSON
      # "fast", but says "ready" once initialized and calls when a line arrives on stdin
"""
import asyncio
import json
import logging
import sys
import time

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

logging.basicConfig(level=logging.WARNING, stream=sys.stderr)


async def main(mode, url, token, tool, args):
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with client, streamable_http_client(url, http_client=client) as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write) as session:
            await session.initialize()
            if mode == "hang":
                call = asyncio.ensure_future(session.call_tool(tool, args))
                await asyncio.sleep(0.2)
                print("calling", flush=True)
                await call
                await asyncio.Event().wait()
            if mode == "ready-fast":
                print("ready", flush=True)
                await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
            start = time.monotonic()
            result = await session.call_tool(tool, args)
            ms = (time.monotonic() - start) * 1000
            report = {"ms": ms, "text": result.content[0].text, "is_error": result.is_error}
    print(json.dumps(report), flush=True)


mode, url, token, tool = sys.argv[1:5]
args = json.loads(sys.argv[5]) if len(sys.argv) > 5 else {}
asyncio.run(main(mode, url, token, tool, args))
