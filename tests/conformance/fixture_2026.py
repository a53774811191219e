"""An MCP server for the official conformance suite at both revisions,
written with the official Python SDK (`mcp` 2.3.0): every tool, resource
and prompt the suite's server scenarios call, for 2026-07-28 clients and for
2025-11-25 ones. The SDK serves both: a client's first request decides
(`server/discover` and per-request `_meta`, or the `initialize` handshake).

  python3 fixture_2026.py               serves on stdio (the way plughost runs it)
  python3 fixture_2026.py --http PORT   serves streamable HTTP on 127.0.0.1:PORT/mcp
                                        (the same server, for the direct baseline)

Run with the SDK on PYTHONPATH (target/pydeps).

What it asks its client goes through the SDK's resolvers (`Resolve` with
`Elicit`, `Sample` or `ListRoots`): at 2026-07-28 an `input_required` result
(a sealed `requestState`, keys the SDK names after the resolver, like
`__main__:ask_name`), at 2025-11-25 a request to the client in the middle
of the call. Where the suite names the key (`user_name` for
test_input_required_result_elicitation, `user_context` for the prompt), the
tool builds the same request itself and, at 2026-07-28, returns it under
that key.

Tools: test_simple_text, test_image_content, test_audio_content,
test_embedded_resource, test_multiple_content_types, test_tool_with_logging
(three log messages), test_tool_with_progress (0, 50, 100 of 100),
test_error_handling (isError), test_sampling, test_elicitation,
test_elicitation_sep1034_defaults, test_elicitation_sep1330_enums,
test_list_roots, test_reconnection (answers after 200 ms), test_slow (sleeps
`ms`), test_blob (`size` bytes), test_structured, json_schema_2020_12_tool;
for 2026-07-28 clients test_missing_capability (samples: without the
client's sampling capability, -32021), test_streaming_elicitation (elicits a
confirmation), test_logging_tool (one log message, sent only at the level the
request names), test_trigger_tool_change and test_trigger_prompt_change
(list changes, on `subscriptions/listen` and on a 2025-11-25 session),
test_input_required_result_elicitation (`user_name`), _sampling, _list_roots,
_request_state (answers state-ok), _multiple_inputs (elicitation, sampling
and roots in one round), _multi_round (step one, then step two),
_tampered_state, _capabilities (elicits the user's name when the client can
elicit, else asks its model).

Resources: test://static-text, test://static-binary, test://watched-resource
(an update a second while followed), test://example-resource, template
test://template/{id}/data. Prompts: test_simple_prompt,
test_prompt_with_arguments, test_prompt_with_embedded_resource,
test_prompt_with_image, test_input_required_result_prompt (elicits
`user_context`). Completions for prompt arguments; caching hints; logging
(2025-11-25 `logging/setLevel`, 2026-07-28 the level in `_meta`);
`resources/subscribe` at 2025-11-25.
"""

import asyncio
import base64
import os
import sys
import time
import warnings
from typing import Annotated, Any, Literal

import anyio
from mcp_types.version import is_version_at_least
from pydantic import BaseModel, Field, WithJsonSchema

from mcp.server.caching import CacheHint
from mcp.server.elicitation import ElicitationResult, render_elicitation_schema
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.mcpserver import Context, Elicit, ListRoots, MCPServer, Resolve, Sample
from mcp.server.mcpserver.prompts.base import UserMessage
from mcp.server.request_state import RequestStateSecurity
from mcp.shared.message import ServerMessageMetadata
from mcp.shared.subscriptions import ResourceUpdated
from mcp.types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    Completion,
    CreateMessageResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    EmbeddedResource,
    EmptyResult,
    ImageContent,
    InputRequiredResult,
    ListRootsResult,
    ResourceLink,
    SamplingMessage,
    SetLevelRequestParams,
    SubscribeRequestParams,
    TextContent,
    TextResourceContents,
    ToolAnnotations,
    UnsubscribeRequestParams,
)

warnings.filterwarnings("ignore", message=".*deprecated as of 2026-07-28.*")

# A 1x1 PNG and a tiny WAV.
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA="
WATCHED = "test://watched-resource"

# Lists for a minute, reads for ten seconds, both for this client alone.
CACHE = {
    "tools/list": CacheHint(ttl_ms=60_000, scope="private"),
    "prompts/list": CacheHint(ttl_ms=60_000, scope="private"),
    "resources/list": CacheHint(ttl_ms=60_000, scope="private"),
    "resources/templates/list": CacheHint(ttl_ms=60_000, scope="private"),
    "resources/read": CacheHint(ttl_ms=10_000, scope="private"),
}

server = MCPServer(
    name="plughost-conformance-fixture-2026",
    version="1.0.0",
    instructions="The conformance fixture on the Python SDK: one tool, resource or prompt for each MCP feature.",
    log_level="WARNING",
    cache_hints=CACHE,
    # Replicas of a fleet share the key that seals requestState, so that a
    # retry any of them gets opens; alone, the SDK's key of this process.
    **(
        {"request_state_security": RequestStateSecurity(keys=[os.environ["FIXTURE_STATE_KEY"]])}
        if os.environ.get("FIXTURE_STATE_KEY")
        else {}
    ),
)


def text(t: str) -> TextContent:
    return TextContent(type="text", text=t)


def modern(ctx: Context) -> bool:
    """Whether this request is a 2026-07-28 one (rounds, not requests to the client)."""
    return ctx.protocol_version is not None and is_version_at_least(ctx.protocol_version, "2026-07-28")


# --- Content -----------------------------------------------------------------


@server.tool(
    title="Simple text",
    description="Answers with one text block.",
    annotations=ToolAnnotations(read_only_hint=True, title="Simple text"),
)
def test_simple_text() -> CallToolResult:
    return CallToolResult(content=[text("This is a simple text response for testing.")])


@server.tool(description="Answers with an image.")
def test_image_content() -> CallToolResult:
    return CallToolResult(content=[ImageContent(type="image", data=PNG, mime_type="image/png")])


@server.tool(description="Answers with audio.")
def test_audio_content() -> CallToolResult:
    return CallToolResult(content=[AudioContent(type="audio", data=WAV, mime_type="audio/wav")])


@server.tool(description="Answers with an embedded text resource.")
def test_embedded_resource() -> CallToolResult:
    resource = TextResourceContents(
        uri="test://embedded-resource", mime_type="text/plain", text="This is an embedded resource content."
    )
    return CallToolResult(content=[EmbeddedResource(type="resource", resource=resource)])


@server.tool(description="Text, an image, an embedded resource and a link, in that order.")
def test_multiple_content_types() -> CallToolResult:
    resource = TextResourceContents(
        uri="test://mixed-content-resource", mime_type="application/json", text='{"test":"data","value":123}'
    )
    return CallToolResult(
        content=[
            text("Multiple content types test:"),
            ImageContent(type="image", data=PNG, mime_type="image/png"),
            EmbeddedResource(type="resource", resource=resource),
            ResourceLink(type="resource_link", uri="test://static-text", name="static-text", description="a link"),
        ]
    )


@server.tool(description="Sends three log messages while it runs.")
async def test_tool_with_logging(ctx: Context) -> str:
    for i, message in enumerate(["Tool execution started", "Tool processing data", "Tool execution completed"]):
        if i:
            await asyncio.sleep(0.05)
        await ctx.info(message, logger_name="fixture")
    return "logged three messages"


@server.tool(description="Reports progress 0, 50, 100 of 100.")
async def test_tool_with_progress(ctx: Context) -> str:
    for i, progress in enumerate([0, 50, 100]):
        if i:
            await asyncio.sleep(0.05)
        await ctx.report_progress(progress, 100)
    return "progress done"


@server.tool(description="Fails as a tool (isError).")
def test_error_handling() -> CallToolResult:
    return CallToolResult(content=[text("This tool intentionally returns an error for testing")], is_error=True)


@server.tool(description="Answers after 200 ms.")
async def test_reconnection() -> str:
    await asyncio.sleep(0.2)
    return "Reconnection test completed successfully"


@server.tool(description="Answers after `ms` milliseconds.")
async def test_slow(ms: int = 1000) -> str:
    await asyncio.sleep(ms / 1000)
    return f"slept {ms} ms"


@server.tool(description="Answers with an embedded blob of `size` bytes.")
def test_blob(size: int = 16) -> CallToolResult:
    blob = BlobResourceContents(
        uri="test://blob", mime_type="application/octet-stream", blob=base64.b64encode(bytes([7]) * size).decode()
    )
    return CallToolResult(content=[EmbeddedResource(type="resource", resource=blob)])


class Answer(BaseModel):
    answer: int


@server.tool(description="Answers with structured content.")
def test_structured() -> Answer:
    return Answer(answer=42)


# A tool whose input schema is JSON Schema 2020-12 with a $defs reference, as
# written (the SDK derives a schema from the signature; this one is given).
SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {"address": {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False,
}


@server.tool(description="A tool whose schema uses JSON Schema 2020-12.")
def json_schema_2020_12_tool(name: str | None = None, address: dict[str, Any] | None = None) -> str:
    return f"hello {name or '?'}"


server._tool_manager.get_tool("json_schema_2020_12_tool").parameters = SCHEMA_2020_12  # noqa: SLF001


# --- What the tools ask the client -------------------------------------------


class Name(BaseModel):
    name: str


class Confirm(BaseModel):
    ok: bool


class StepOne(BaseModel):
    name: str


class StepTwo(BaseModel):
    color: str


class Person(BaseModel):
    username: str = Field(description="User's response")
    email: str = Field(description="User's email address")


class Defaults(BaseModel):
    name: str = "John Doe"
    age: int = 30
    score: float = 95.5
    status: Literal["active", "inactive", "pending"] = "active"
    verified: bool = True


def options(*pairs: tuple[str, str]) -> list[dict[str, str]]:
    return [{"const": const, "title": title} for const, title in pairs]


# The five enum styles of SEP-1330, each field's schema as written (the SDK's
# renderer would derive one from the field's type).
class Enums(BaseModel):
    untitledSingle: Annotated[
        str,
        Field(title="Untitled single-select"),
        WithJsonSchema({"type": "string", "enum": ["option1", "option2", "option3"]}),
    ]
    titledSingle: Annotated[
        str,
        Field(title="Titled single-select"),
        WithJsonSchema(
            {
                "type": "string",
                "oneOf": options(("value1", "First Option"), ("value2", "Second Option"), ("value3", "Third Option")),
            }
        ),
    ]
    legacyEnum: Annotated[
        str,
        Field(title="Legacy titled enum"),
        WithJsonSchema(
            {
                "type": "string",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"],
            }
        ),
    ]
    untitledMulti: Annotated[
        list[str],
        Field(title="Untitled multi-select"),
        WithJsonSchema({"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}}),
    ]
    titledMulti: Annotated[
        list[str],
        Field(title="Titled multi-select"),
        WithJsonSchema(
            {
                "type": "array",
                "items": {
                    "anyOf": options(
                        ("value1", "First Choice"), ("value2", "Second Choice"), ("value3", "Third Choice")
                    )
                },
            }
        ),
    ]


def question(t: str, max_tokens: int = 100) -> Sample:
    return Sample([SamplingMessage(role="user", content=text(t))], max_tokens=max_tokens)


def said(result: CreateMessageResult) -> str:
    content = result.content[0] if isinstance(result.content, list) else result.content
    return getattr(content, "text", None) or content.model_dump_json()


def roots_of(result: ListRootsResult) -> str:
    return " ".join(str(r.uri) for r in result.roots)


def ask_person(message: str = "Who are you?") -> Elicit[Person]:
    return Elicit(message, Person)


def ask_prompt(prompt: str = "Say hi.") -> Sample:
    return question(prompt)


def ask_defaults() -> Elicit[Defaults]:
    return Elicit("Check the defaults.", Defaults)


def ask_enums() -> Elicit[Enums]:
    return Elicit("Pick.", Enums)


def ask_roots() -> ListRoots:
    return ListRoots()


def ask_name() -> Elicit[Name]:
    return Elicit("What is your name?", Name)


def ask_capital() -> Sample:
    return question("What is the capital of France?")


def ask_greeting() -> Sample:
    return question("Generate a greeting", 50)


def ask_hi() -> Sample:
    return question("Say hi", 10)


def ask_confirm() -> Elicit[Confirm]:
    return Elicit("Please confirm", Confirm)


def ask_step_one() -> Elicit[StepOne]:
    return Elicit("Step 1: What is your name?", StepOne)


def ask_step_two(first: Annotated[StepOne, Resolve(ask_step_one)]) -> Elicit[StepTwo]:
    return Elicit(f"Step 2: What is your favorite color, {first.name}?", StepTwo)


def ask_name_or_capital(ctx: Context):  # Elicit[Name] or Sample: no one marker to annotate
    capabilities = ctx.client_capabilities
    if capabilities is not None and capabilities.elicitation is not None:
        return ask_name()
    return ask_capital()


def outcome(result: ElicitationResult[Any]) -> str:
    data = getattr(result, "data", None)
    content = data.model_dump() if data is not None else {}
    return f"action={result.action}, content={content}"


@server.tool(description="Asks the client's model (sampling/createMessage).")
def test_sampling(prompt: str, answer: Annotated[CreateMessageResult, Resolve(ask_prompt)]) -> str:
    return f"LLM response: {said(answer)}"


@server.tool(description="Asks the user (elicitation/create).")
def test_elicitation(message: str, answer: Annotated[ElicitationResult[Person], Resolve(ask_person)]) -> str:
    return f"User response: {outcome(answer)}"


@server.tool(description="Elicits with defaults of each type.")
def test_elicitation_sep1034_defaults(answer: Annotated[ElicitationResult[Defaults], Resolve(ask_defaults)]) -> str:
    return f"Elicitation completed: {outcome(answer)}"


@server.tool(description="Elicits with each enum style.")
def test_elicitation_sep1330_enums(answer: Annotated[ElicitationResult[Enums], Resolve(ask_enums)]) -> str:
    return f"Elicitation completed: {outcome(answer)}"


@server.tool(description="Asks the client for its roots (roots/list).")
def test_list_roots(roots: Annotated[ListRootsResult, Resolve(ask_roots)]) -> str:
    return f"roots: {roots_of(roots)}"


@server.tool(description="Needs the client's sampling capability; without it, -32021.")
def test_missing_capability(answer: Annotated[CreateMessageResult, Resolve(ask_hi)]) -> str:
    return f"LLM said: {said(answer)}"


@server.tool(description="Elicits a confirmation, then answers.")
def test_streaming_elicitation(answer: Annotated[ElicitationResult[Confirm], Resolve(ask_confirm)]) -> str:
    return f"streamed elicitation done: {answer.action}"


@server.tool(description="Sends one log message (at 2026-07-28, only at the level the request names).")
async def test_logging_tool(ctx: Context) -> str:
    await ctx.info("test_logging_tool ran", logger_name="fixture")
    return "logged"


@server.tool(description="Sends notifications/tools/list_changed.")
async def test_trigger_tool_change(ctx: Context) -> str:
    # A 2026-07-28 client hears it on its subscriptions/listen stream, a
    # 2025-11-25 one on its session.
    await ctx.notify_tools_changed()
    if not modern(ctx):
        await ctx.session.send_tool_list_changed()
    return "tool list change sent"


@server.tool(description="Sends notifications/prompts/list_changed.")
async def test_trigger_prompt_change(ctx: Context) -> str:
    await ctx.notify_prompts_changed()
    if not modern(ctx):
        await ctx.session.send_prompt_list_changed()
    return "prompt list change sent"


# The input_required scenarios (SEP-2322).

NAME_REQUEST = ElicitRequest(
    params=ElicitRequestFormParams(message="What is your name?", requested_schema=render_elicitation_schema(Name))
)
CONTEXT_REQUEST = ElicitRequest(
    params=ElicitRequestFormParams(
        message="What context should the prompt use?",
        requested_schema={"type": "object", "properties": {"context": {"type": "string"}}, "required": ["context"]},
    )
)


async def asked(ctx: Context, key: str, request: ElicitRequest) -> ElicitResult | None:
    """The client's answer to `request`: at 2026-07-28 the retry's answer
    under `key` (None: not answered yet, ask it in a round), at 2025-11-25
    the answer to the request sent now."""
    if not modern(ctx):
        return await ctx.session.send_request(
            request, ElicitResult, metadata=ServerMessageMetadata(related_request_id=ctx.request_id)
        )
    answer = (ctx.input_responses or {}).get(key)
    return answer if isinstance(answer, ElicitResult) else None


@server.tool(description="Asks the user's name (elicitation, key user_name).")
async def test_input_required_result_elicitation(ctx: Context) -> CallToolResult | InputRequiredResult:
    answer = await asked(ctx, "user_name", NAME_REQUEST)
    if answer is None:
        return InputRequiredResult(input_requests={"user_name": NAME_REQUEST})
    if answer.action != "accept":
        return CallToolResult(content=[text(f"no name given ({answer.action})")])
    name = (answer.content or {}).get("name")
    if not isinstance(name, str):
        # Accepted without a name: asked again.
        if modern(ctx):
            return InputRequiredResult(input_requests={"user_name": NAME_REQUEST})
        return CallToolResult(content=[text("no name given")], is_error=True)
    return CallToolResult(content=[text(f"Hello, {name}!")])


@server.tool(description="Asks the client's model (sampling).")
def test_input_required_result_sampling(answer: Annotated[CreateMessageResult, Resolve(ask_capital)]) -> str:
    return said(answer)


@server.tool(description="Asks the client's roots (roots/list).")
def test_input_required_result_list_roots(roots: Annotated[ListRootsResult, Resolve(ask_roots)]) -> str:
    return f"roots: {roots_of(roots)}"


@server.tool(description="Elicits a confirmation; answers state-ok once the state it sent came back.")
def test_input_required_result_request_state(answer: Annotated[Confirm, Resolve(ask_confirm)]) -> str:
    return f"state-ok (confirmed: {answer.ok})"


@server.tool(description="Elicits, samples and lists roots, in one round.")
def test_input_required_result_multiple_inputs(
    person: Annotated[Name, Resolve(ask_name)],
    greeting: Annotated[CreateMessageResult, Resolve(ask_greeting)],
    roots: Annotated[ListRootsResult, Resolve(ask_roots)],
) -> str:
    return f"name: {person.name}; greeting: {said(greeting)}; roots: {roots_of(roots)}"


@server.tool(description="Elicits step one, then step two.")
def test_input_required_result_multi_round(
    first: Annotated[StepOne, Resolve(ask_step_one)], second: Annotated[StepTwo, Resolve(ask_step_two)]
) -> str:
    return f"{first.name} likes {second.color}"


@server.tool(description="Elicits a confirmation; a changed requestState is refused.")
def test_input_required_result_tampered_state(answer: Annotated[Confirm, Resolve(ask_confirm)]) -> str:
    return f"confirmed: {answer.ok}"


@server.tool(description="Elicits the user's name when the client can elicit, else asks its model.")
def test_input_required_result_capabilities(answer: Annotated[Any, Resolve(ask_name_or_capital)]) -> str:
    if isinstance(answer, Name):
        return f"answered by elicitation: {answer.name}"
    return f"answered by sampling: {said(answer)}"


# --- Resources ---------------------------------------------------------------


@server.resource("test://static-text", name="static-text", title="Static text", mime_type="text/plain",
                 description="A static text resource.")
def static_text() -> str:
    return "This is the content of the static text resource."


@server.resource("test://static-binary", name="static-binary", mime_type="image/png",
                 description="A static binary resource (a PNG).")
def static_binary() -> bytes:
    return base64.b64decode(PNG)


@server.resource(WATCHED, name="watched-resource", mime_type="text/plain",
                 description="Updated every second while followed.")
def watched_resource() -> str:
    return f"watched at {time.time():.3f}"


@server.resource("test://example-resource", name="example-resource", mime_type="text/plain",
                 description="An example text resource.")
def example_resource() -> str:
    return "This is the content of a static text resource."


@server.resource("test://template/{id}/data", name="template", mime_type="application/json",
                 description="Data for an id.")
def template(id: str) -> str:
    return f'{{"id":"{id}","templateTest":true,"data":"Data for ID: {id}"}}'


# 2025-11-25 sessions follow a resource with resources/subscribe; the ticker
# tells them (and 2026-07-28 listen streams) of an update every second.
followers: dict[str, set[Any]] = {}


async def subscribe(ctx, params: SubscribeRequestParams) -> EmptyResult:
    followers.setdefault(str(params.uri), set()).add(ctx.session)
    return EmptyResult()


async def unsubscribe(ctx, params: UnsubscribeRequestParams) -> EmptyResult:
    followers.get(str(params.uri), set()).discard(ctx.session)
    return EmptyResult()


async def set_level(ctx, params: SetLevelRequestParams) -> EmptyResult:
    return EmptyResult()


lowlevel = server._lowlevel_server  # noqa: SLF001 (the 2025-11-25 methods MCPServer leaves out)
lowlevel.add_request_handler("resources/subscribe", SubscribeRequestParams, subscribe)
lowlevel.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, unsubscribe)
lowlevel.add_request_handler("logging/setLevel", SetLevelRequestParams, set_level)


async def ticker() -> None:
    while True:
        await anyio.sleep(1)
        await server._subscriptions.publish(ResourceUpdated(uri=WATCHED))  # noqa: SLF001
        for session in list(followers.get(WATCHED, ())):
            try:
                await session.send_resource_updated(WATCHED)
            except Exception:
                followers[WATCHED].discard(session)


# --- Prompts -----------------------------------------------------------------


@server.prompt(description="A prompt with no arguments.")
def test_simple_prompt() -> list[UserMessage]:
    return [UserMessage("This is a simple prompt for testing.")]


@server.prompt(description="A prompt with two arguments.")
def test_prompt_with_arguments(
    arg1: Annotated[str, Field(description="First test argument")],
    arg2: Annotated[str, Field(description="Second test argument")],
) -> list[UserMessage]:
    return [UserMessage(f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'")]


@server.prompt(description="A prompt that embeds a resource.")
def test_prompt_with_embedded_resource(
    resourceUri: Annotated[str, Field(description="URI of the resource to embed")],  # noqa: N803 (the suite's name)
) -> list[UserMessage]:
    resource = TextResourceContents(
        uri=resourceUri, mime_type="text/plain", text="Embedded resource content for testing."
    )
    return [
        UserMessage(EmbeddedResource(type="resource", resource=resource)),
        UserMessage("Please process the embedded resource above."),
    ]


@server.prompt(description="A prompt with an image.")
def test_prompt_with_image() -> list[UserMessage]:
    return [
        UserMessage(ImageContent(type="image", data=PNG, mime_type="image/png")),
        UserMessage("Please analyze the image above."),
    ]


@server.prompt(description="A prompt that asks the user for its context (elicitation, key user_context).")
async def test_input_required_result_prompt(ctx: Context) -> list[UserMessage] | InputRequiredResult:
    answer = await asked(ctx, "user_context", CONTEXT_REQUEST)
    if answer is None:
        return InputRequiredResult(input_requests={"user_context": CONTEXT_REQUEST})
    context = (answer.content or {}).get("context") if answer.action == "accept" else None
    return [UserMessage(f"Context: {context if context is not None else answer.action}")]


@server.completion()
async def complete(ref, argument, context) -> Completion:
    values = [v for v in ("test", "testing", "tested") if v.startswith(argument.value)]
    return Completion(values=values, total=len(values), has_more=False)


# --- Serving -----------------------------------------------------------------


async def main() -> None:
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(ticker)
        if "--http" in sys.argv:
            import uvicorn

            port = int(sys.argv[sys.argv.index("--http") + 1])
            app = server.streamable_http_app(host="127.0.0.1")
            config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
            await uvicorn.Server(config).serve()
        else:
            from mcp.server.stdio import stdio_server

            async with stdio_server() as (read_stream, write_stream):
                # A 2025-11-25 session is told the lists change (at 2026-07-28
                # the SDK says so itself: it serves subscriptions/listen).
                changes = NotificationOptions(prompts_changed=True, resources_changed=True, tools_changed=True)
                await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options(changes))
        tasks.cancel_scope.cancel()


if __name__ == "__main__":
    anyio.run(main)
