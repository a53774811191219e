"""A real MCP client (the official Python SDK) that drives `plughost serve`
(stdio) serving `@modelcontextprotocol/server-everything` as an MCP plugin,
and reports what came back through the gateway.

Usage: gateway_client.py PLUGHOST PLUGINS_DIR STATE_DIR
Prints one JSON object; the Rust test (tests/gateway.rs) checks it.
"""
import asyncio
import base64
import gzip
import json
import sys
import time

import mcp.types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

ROOT = "file:///srv/project"
ELSEWHERE = "file:///opt/elsewhere"
BLOB_TEXT = b"bytes that must arrive intact \x00\x01\xfe\xff" * 64


async def sampling(context, params):
    asked = params.messages[0].content.text
    return types.CreateMessageResult(
        role="assistant", model="test-model",
        content=types.TextContent(type="text", text=f"sampled: {asked}"))


async def elicitation(context, params):
    return types.ElicitResult(action="accept", content={"name": "Ada Lovelace", "check": True})


async def roots(context):
    # The second is outside the plugin's grants: plughost keeps it from the server.
    return types.ListRootsResult(roots=[types.Root(uri=ROOT, name="project"),
                                        types.Root(uri=ELSEWHERE, name="elsewhere")])


async def main(plughost, plugins, state):
    logs = []

    async def logging(params):
        logs.append({"level": params.level, "logger": params.logger})

    report = {}
    server = StdioServerParameters(
        command=plughost, args=["--plugins-dir", plugins, "--state-dir", state, "serve"])
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write, sampling_callback=sampling,
                                 elicitation_callback=elicitation, list_roots_callback=roots,
                                 logging_callback=logging) as session:
            init = await session.initialize()
            caps = init.capabilities
            report["capabilities"] = sorted(
                k for k in ("resources", "prompts", "logging", "completions")
                if getattr(caps, k, None) is not None)
            report["instructions"] = init.instructions or ""
            tools = {t.name: t for t in (await session.list_tools()).tools}
            report["tools"] = sorted(tools)
            roots_tool = tools.get("ev_get-roots-list")
            report["roots_tool"] = None if roots_tool is None else {
                "title": roots_tool.title,
                "annotations": roots_tool.annotations.model_dump(exclude_none=True, by_alias=True)
                if roots_tool.annotations else None,
            }

            def text(result):
                return "\n".join(c.text for c in result.content if c.type == "text")

            r = await session.call_tool("ev_trigger-sampling-request",
                                        {"prompt": "the weather?", "maxTokens": 20})
            report["sampling"] = text(r)
            r = await session.call_tool("ev_trigger-elicitation-request", {})
            report["elicitation"] = text(r)
            r = await session.call_tool("ev_get-roots-list", {})
            report["roots"] = text(r)

            # Embedded blob: a data URI gzipped by the server, returned as an
            # embedded resource whose bytes must survive the gateway.
            data_uri = "data:application/octet-stream;base64," + base64.b64encode(BLOB_TEXT).decode()
            r = await session.call_tool("ev_gzip-file-as-resource",
                                        {"name": "blob.gz", "data": data_uri, "outputType": "resource"})
            blob = [c for c in r.content if c.type == "resource"]
            report["blob_intact"] = bool(blob) and \
                gzip.decompress(base64.b64decode(blob[0].resource.blob)) == BLOB_TEXT
            report["blob_kinds"] = [c.type for c in r.content]

            # Content annotations and order, as the server sent them.
            r = await session.call_tool("ev_get-annotated-message",
                                        {"messageType": "error", "includeImage": True})
            report["annotated"] = [
                {"type": c.type, "annotations": c.annotations.model_dump(exclude_none=True, by_alias=True)
                 if c.annotations else None} for c in r.content]

            resources = (await session.list_resources()).resources
            report["resources"] = sorted(str(r.uri) for r in resources)
            templates = (await session.list_resource_templates()).resource_templates
            report["templates"] = sorted(t.uri_template for t in templates)
            read = await session.read_resource("demo://resource/dynamic/text/7")
            report["read_text"] = read.contents[0].text
            read = await session.read_resource("demo://resource/dynamic/blob/7")
            report["read_blob"] = base64.b64decode(read.contents[0].blob).decode()

            prompts = (await session.list_prompts()).prompts
            report["prompts"] = sorted(p.name for p in prompts)
            got = await session.get_prompt("ev_args-prompt", {"city": "Lyon", "state": "Rhone"})
            report["prompt"] = got.messages[0].content.text
            done = await session.complete(
                types.PromptReference(type="ref/prompt", name="ev_completable-prompt"),
                {"name": "department", "value": "Eng"})
            report["completion"] = done.completion.values

            await session.set_logging_level("debug")
            await session.call_tool("ev_toggle-simulated-logging", {})
            deadline = time.monotonic() + 15
            while not logs and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            await session.call_tool("ev_toggle-simulated-logging", {})
            report["logs"] = logs[:3]

            # Three slow calls at once share the server's connection.
            one = time.monotonic()
            await session.call_tool("ev_trigger-long-running-operation", {"duration": 2, "steps": 2})
            report["one_slow_call_s"] = time.monotonic() - one
            start = time.monotonic()
            await asyncio.gather(*(
                session.call_tool("ev_trigger-long-running-operation", {"duration": 2, "steps": 2})
                for _ in range(3)))
            report["three_slow_calls_s"] = time.monotonic() - start
    print(json.dumps(report))


asyncio.run(main(*sys.argv[1:4]))
