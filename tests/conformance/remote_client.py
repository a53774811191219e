"""The client the official conformance suite drives in client mode, with
plughost as the MCP client of the suite's server: the suite runs
`remote_client.py URL` (and names the scenario in MCP_CONFORMANCE_SCENARIO,
with its context in MCP_CONFORMANCE_CONTEXT). This script adds URL as a
remote plugin (`plughost add URL`), approved with --yes, serves it with
`plughost serve` on stdio, and does what the scenario asks through that
gateway with the official Python SDK (`mcp` 2.3), which answers the
elicitations the server's tools make. Everything the server sees comes from
plughost's bridge.

Environment: PLUGHOST (the binary), PYTHONPATH with the SDK (target/pydeps).
"""
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile

import mcp.types as types
from mcp import Client, StdioServerParameters

SCENARIO = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
CONTEXT = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")


def defaults(schema):
    """Every default the requested schema names (SEP-1034)."""
    props = (schema or {}).get("properties", {})
    return {k: v["default"] for k, v in props.items() if "default" in v}


async def elicitation(context, params):
    content = defaults(getattr(params, "requested_schema", None))
    if SCENARIO == "sep-2322-client-request-state":
        content = {"confirmed": True}
    return types.ElicitResult(action="accept", content=content)


async def drive(client):
    tools = {t.name: t for t in (await client.list_tools()).tools}

    async def call(name, arguments):
        result = await client.call_tool(name, arguments)
        print(f"{name}: is_error={result.is_error}", file=sys.stderr)

    if SCENARIO == "tools_call":
        await call("add_numbers", {"a": 2, "b": 3})
    elif SCENARIO == "sep-2322-client-request-state":
        await call("test_mrtr_echo_state", {})
        await call("test_mrtr_unrelated", {})
        await call("test_mrtr_no_state", {})
        await call("test_mrtr_no_result_type", {})
    elif SCENARIO == "http-standard-headers":
        for name in tools:
            await call(name, {})
        for resource in (await client.list_resources()).resources:
            await client.read_resource(resource.uri)
        for prompt in (await client.list_prompts()).prompts:
            await client.get_prompt(prompt.name, {})
    elif SCENARIO == "http-custom-headers":
        for c in CONTEXT.get("toolCalls", []):
            # plughost checks arguments against the tool's input schema, in
            # which `verbose` is a boolean: null is refused as invalid_args
            # before the server sees it. Omitted, it tests the same rule
            # (no Mcp-Param header for an argument without a value).
            arguments = {k: v for k, v in c.get("arguments", {}).items() if v is not None}
            await call(c["name"], arguments)
    elif SCENARIO == "http-invalid-tool-headers":
        await call("valid_tool", {"region": "us"})
    elif SCENARIO == "json-schema-2020-12-preservation":
        schema = tools["json_schema_2020_12_tool"].input_schema
        await call("json_schema_echo", {"schema": schema})
    elif SCENARIO == "elicitation-sep1034-client-defaults":
        await call("test_client_elicitation_defaults", {})
    elif SCENARIO == "sse-retry":
        await call("test_reconnection", {})
    elif SCENARIO.startswith("auth/"):
        # As the suite's own clients do: list, then call the server's tool
        # (step-up scenarios guard the call with more scopes than the list).
        for name in tools:
            await call(name, {})
    # initialize, request-metadata, json-schema-ref-no-deref: connecting and
    # listing is the whole scenario.


def main():
    url = sys.argv[-1]
    plughost = os.environ["PLUGHOST"]
    # The scenario's plugins and state: gone with it, however it ends.
    work = tempfile.mkdtemp(prefix="plughost-remote-client-")
    try:
        sign_in_and_drive(url, plughost, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def sign_in_and_drive(url, plughost, work):
    plugins, state = os.path.join(work, "plugins"), os.path.join(work, "state")
    base = [plughost, "--plugins-dir", plugins, "--state-dir", state]
    # The sign-in's browser follows the authorization server's redirects
    # back to plughost; a client the scenario registered beforehand, or
    # plughost's client ID metadata document, where the scenario has them.
    env = dict(os.environ)
    env["BROWSER"] = f"{sys.executable} {os.path.join(os.path.dirname(__file__), 'browser.py')}"
    sign_in = ["--client-metadata-url", "https://conformance-test.local/client-metadata.json"]
    if CONTEXT.get("client_id"):
        sign_in = ["--client-id", CONTEXT["client_id"]]
        if CONTEXT.get("client_secret"):
            env["CONFORMANCE_CLIENT_SECRET"] = CONTEXT["client_secret"]
            sign_in += ["--client-secret-env", "CONFORMANCE_CLIENT_SECRET"]
    added = subprocess.run(base + ["add", url, "--name", "remote", "--yes"] + sign_in,
                           stdout=sys.stderr, stderr=sys.stderr, env=env)
    if added.returncode != 0:
        sys.exit(f"plughost add {url} failed ({added.returncode})")
    # `serve` gets the browser too: a server may ask for a new sign-in in
    # the middle of the session (step-up, or an authorization server that
    # moved).
    server = StdioServerParameters(command=plughost, args=base[1:] + ["serve"], env=env)

    async def run():
        async with Client(server, elicitation_callback=elicitation, mode="auto",
                          cache=None) as client:
            await drive(client)

    asyncio.run(run())


main()
