"""The official Python SDK's client (MODE: `auto` for 2026-07-28, `legacy`
for 2025-11-25) driving `plughost serve` over stdio, where the remote
server of tests/fixtures/remote/oauth_server.py is the plugin `fx`, signed
in to already. It calls the tools named on the command line, in order, and
prints one JSON list: each call's text, or its error. Other steps:
  -          posts to the fixture's /revoke (the next call finds its sign-in
             refused);
  ~          waits 2.5 s (a token of the fixture's that lives 2 s expires);
  note=TEXT  gives the fixture's tool `note` the description TEXT;
  approve    approves `fx` again (`plughost approve fx --yes`);
  TOOL!      calls TOOL until it succeeds, for 10 s at most (the answer is
             its last).

The environment is passed whole: `serve` opens the sign-in's browser
($BROWSER) when the server asks for one in the middle of the session.

Usage: sign_in_client.py MODE PLUGHOST PLUGINS_DIR STATE_DIR PORT TOOL|- …
"""
import asyncio
import json
import os
import subprocess
import sys
import time
import urllib.request

from mcp import Client, StdioServerParameters


async def main(mode, plughost, plugins, state, port, steps):
    server = StdioServerParameters(
        command=plughost, args=["--plugins-dir", plugins, "--state-dir", state, "serve"],
        env=dict(os.environ))
    def post(path, body=b""):
        urllib.request.urlopen(urllib.request.Request(
            f"http://127.0.0.1:{port}{path}", data=body, method="POST")).read()

    async def call(client, tool):
        try:
            result = await client.call_tool(tool, {})
            return (result.content[0].text if not result.is_error
                    else "error: " + result.content[0].text)
        except Exception as e:  # an MCP error: the call's refusal
            return f"error: {e}"

    answers = []
    async with Client(server, mode=mode, cache=None) as client:
        for step in steps:
            if step == "-":
                post("/revoke")
            elif step == "~":
                await asyncio.sleep(2.5)
            elif step.startswith("note="):
                post("/note", step[len("note="):].encode())
            elif step == "approve":
                subprocess.run([plughost, "--plugins-dir", plugins, "--state-dir", state,
                                "approve", "fx", "--yes"], check=True,
                               stdout=subprocess.DEVNULL, stderr=sys.stderr)
            elif step.endswith("!"):
                deadline = time.monotonic() + 10
                answer = await call(client, step[:-1])
                while answer.startswith("error: ") and time.monotonic() < deadline:
                    await asyncio.sleep(0.2)
                    answer = await call(client, step[:-1])
                answers.append(answer)
            else:
                answers.append(await call(client, step))
    print(json.dumps(answers))


asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6:]))
