"""The official Python SDK's client (MODE: `auto` for 2026-07-28, `legacy`
for 2025-11-25) driving `plughost serve` over stdio, where the remote
server of tests/fixtures/remote/oauth_server.py is the plugin `fx`, signed
in to already. It calls the tools named on the command line, in order (a
`-` between two posts to the fixture's /revoke first, so the next call finds
its sign-in refused), and prints one JSON list: each call's text, or its
error.

The environment is passed whole: `serve` opens the sign-in's browser
($BROWSER) when the server asks for one in the middle of the session.

Usage: sign_in_client.py MODE PLUGHOST PLUGINS_DIR STATE_DIR PORT TOOL|- …
"""
import asyncio
import json
import os
import sys
import urllib.request

from mcp import Client, StdioServerParameters


async def main(mode, plughost, plugins, state, port, steps):
    server = StdioServerParameters(
        command=plughost, args=["--plugins-dir", plugins, "--state-dir", state, "serve"],
        env=dict(os.environ))
    answers = []
    async with Client(server, mode=mode, cache=None) as client:
        for step in steps:
            if step == "-":
                urllib.request.urlopen(urllib.request.Request(
                    f"http://127.0.0.1:{port}/revoke", data=b"", method="POST")).read()
                continue
            try:
                result = await client.call_tool(step, {})
                answers.append(result.content[0].text if not result.is_error
                               else "error: " + result.content[0].text)
            except Exception as e:  # an MCP error: the call's refusal
                answers.append(f"error: {e}")
    print(json.dumps(answers))


asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6:]))
