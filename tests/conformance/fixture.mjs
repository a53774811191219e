// An MCP server for plughost's gateway tests and the official conformance
// suite, on the official TypeScript SDK's low-level `Server`: every feature a
// wrapped server can offer, one handler each.
//
//   node fixture.mjs               serves on stdio (the way plughost runs it)
//   node fixture.mjs --http PORT   serves streamable HTTP on 127.0.0.1:PORT/mcp
//                                  (the same server, for the direct baseline)
//
// Tools: test_simple_text, test_image_content, test_audio_content,
// test_embedded_resource, test_multiple_content_types, test_tool_with_logging,
// test_tool_with_progress, test_error_handling, test_sampling, test_elicitation,
// test_elicitation_sep1034_defaults, test_elicitation_sep1330_enums,
// test_list_roots, test_reconnection (answers after 200 ms; the suite closes
// its stream mid-call when the server can resume), test_slow (sleeps `ms`), test_blob (bytes of `size`, base64),
// json_schema_2020_12_tool.
//
// Every server-to-client request echoes the `plughost/call` id of the request
// it is for, in its params' `_meta`, so plughost routes it exactly.
//
// Tools for MCP 2026-07-28 clients, whose server-to-client requests plughost
// turns into `input_required` results: each request names its inputRequests
// key in params._meta["plughost/inputKey"]. test_missing_capability (sampling,
// key sampling_needed; an isError result when the request fails),
// test_streaming_elicitation (elicits `confirm`), test_logging_tool (one log
// message), test_trigger_tool_change and test_trigger_prompt_change (send
// list_changed), test_input_required_result_elicitation (`user_name`),
// _sampling (`capital_question`), _list_roots (`client_roots`),
// _request_state (`confirm`), _multiple_inputs (all three at once),
// _multi_round (`step_one`, then `step_two`), _tampered_state (`confirm`),
// _capabilities (elicits `user_name`, falling back to sampling
// `capital_question` when the client cannot elicit).
//
// Resources: test://static-text, test://static-binary,
// test://watched-resource (an update a second while subscribed), template
// test://template/{id}/data. Prompts: test_simple_prompt,
// test_prompt_with_arguments, test_prompt_with_embedded_resource,
// test_prompt_with_image, test_input_required_result_prompt (elicits
// `user_context`). Completions for prompt arguments; logging.

import { createServer } from "node:http";
import { randomUUID } from "node:crypto";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";
import {
  CallToolRequestSchema,
  CompleteRequestSchema,
  CreateMessageResultSchema,
  ElicitResultSchema,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListRootsResultSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema,
  SetLevelRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";

// A 1x1 PNG and a tiny WAV, base64.
const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
const WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=";
const BINARY = Buffer.from([0, 1, 2, 3, 254, 255]).toString("base64");

const empty = { type: "object", properties: {} };

const TOOLS = [
  { name: "test_simple_text", description: "Answers with one text block.", inputSchema: empty,
    annotations: { readOnlyHint: true, title: "Simple text" }, title: "Simple text" },
  { name: "test_image_content", description: "Answers with an image.", inputSchema: empty },
  { name: "test_audio_content", description: "Answers with audio.", inputSchema: empty },
  { name: "test_embedded_resource", description: "Answers with an embedded text resource.", inputSchema: empty },
  { name: "test_multiple_content_types", description: "Text, an image and an embedded resource, annotated, in that order.", inputSchema: empty },
  { name: "test_tool_with_logging", description: "Sends three log messages while it runs.", inputSchema: empty },
  { name: "test_tool_with_progress", description: "Reports progress 0, 50, 100 of 100.", inputSchema: empty },
  { name: "test_error_handling", description: "Fails as a tool (isError).", inputSchema: empty },
  { name: "test_sampling", description: "Asks the client's model (sampling/createMessage).",
    inputSchema: { type: "object", properties: { prompt: { type: "string" } } } },
  { name: "test_elicitation", description: "Asks the user (elicitation/create).",
    inputSchema: { type: "object", properties: { message: { type: "string" } } } },
  { name: "test_elicitation_sep1034_defaults", description: "Elicits with defaults of each type.", inputSchema: empty },
  { name: "test_elicitation_sep1330_enums", description: "Elicits with each enum style.", inputSchema: empty },
  { name: "test_list_roots", description: "Asks the client for its roots (roots/list).", inputSchema: empty },
  { name: "test_reconnection", description: "Answers after 200 ms, for the SSE reconnection scenario.", inputSchema: empty },
  { name: "test_slow", description: "Answers after `ms` milliseconds.",
    inputSchema: { type: "object", properties: { ms: { type: "integer" } } } },
  { name: "test_blob", description: "Answers with an embedded blob of `size` bytes.",
    inputSchema: { type: "object", properties: { size: { type: "integer" } } } },
  { name: "test_structured", description: "Answers with structured content.",
    inputSchema: empty,
    outputSchema: { type: "object", properties: { answer: { type: "integer" } }, required: ["answer"] } },
  { name: "json_schema_2020_12_tool", description: "A tool whose schema uses JSON Schema 2020-12.",
    inputSchema: {
      $schema: "https://json-schema.org/draft/2020-12/schema",
      type: "object",
      $defs: { address: { type: "object", properties: { street: { type: "string" }, city: { type: "string" } } } },
      properties: { name: { type: "string" }, address: { $ref: "#/$defs/address" } },
      additionalProperties: false,
    } },
  { name: "test_missing_capability", description: "Needs the client's sampling capability; an error result without it.", inputSchema: empty },
  { name: "test_streaming_elicitation", description: "Elicits a confirmation, then answers.", inputSchema: empty },
  { name: "test_logging_tool", description: "Sends one log message.", inputSchema: empty },
  { name: "test_trigger_tool_change", description: "Sends notifications/tools/list_changed.", inputSchema: empty },
  { name: "test_trigger_prompt_change", description: "Sends notifications/prompts/list_changed.", inputSchema: empty },
  { name: "test_input_required_result_elicitation", description: "Asks the user's name (elicitation, key user_name).", inputSchema: empty },
  { name: "test_input_required_result_sampling", description: "Asks the client's model (sampling, key capital_question).", inputSchema: empty },
  { name: "test_input_required_result_list_roots", description: "Asks the client's roots (roots/list, key client_roots).", inputSchema: empty },
  { name: "test_input_required_result_request_state", description: "Elicits a confirmation (key confirm); answers state-ok.", inputSchema: empty },
  { name: "test_input_required_result_multiple_inputs", description: "Elicits, samples and lists roots at once.", inputSchema: empty },
  { name: "test_input_required_result_multi_round", description: "Elicits step_one, then step_two.", inputSchema: empty },
  { name: "test_input_required_result_tampered_state", description: "Elicits a confirmation (key confirm).", inputSchema: empty },
  { name: "test_input_required_result_capabilities", description: "Elicits if the client can, else samples.", inputSchema: empty },
];

const RESOURCES = [
  { uri: "test://static-text", name: "static-text", title: "Static text", mimeType: "text/plain" },
  { uri: "test://static-binary", name: "static-binary", mimeType: "application/octet-stream" },
  { uri: "test://watched-resource", name: "watched-resource", mimeType: "text/plain" },
  { uri: "test://example-resource", name: "example-resource", mimeType: "text/plain" },
];

const PROMPTS = [
  { name: "test_simple_prompt", description: "A prompt with no arguments." },
  { name: "test_prompt_with_arguments", description: "A prompt with two arguments.",
    arguments: [{ name: "arg1", description: "The first.", required: true },
                { name: "arg2", description: "The second.", required: true }] },
  { name: "test_prompt_with_embedded_resource", description: "A prompt that embeds a resource.",
    arguments: [{ name: "resourceUri", description: "The resource.", required: true }] },
  { name: "test_prompt_with_image", description: "A prompt with an image." },
  { name: "test_input_required_result_prompt", description: "A prompt that asks the user for its context (elicitation, key user_context)." },
];

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Any result: the suite answers some rounds with shapes of its own ({ok:true}).
const AnyResult = z.object({}).passthrough();

// A server-to-client request on behalf of the request `extra` belongs to,
// echoing the call id plughost sent with that request (`plughost/call`), so
// that plughost routes it to that call's client exactly, whatever else is in
// flight on this server.
const send = (extra, request, schema) => {
  const call = extra._meta?.["plughost/call"];
  if (call === undefined) return extra.sendRequest(request, schema);
  const params = request.params ?? {};
  const meta = { ...(params._meta ?? {}), "plughost/call": call };
  return extra.sendRequest({ ...request, params: { ...params, _meta: meta } }, schema);
};

// The same, naming the inputRequests key plughost files it under for
// 2026-07-28 clients.
const ask = (extra, key, method, params, schema) =>
  send(extra, { method, params: { ...params, _meta: { "plughost/inputKey": key } } }, schema);

const askName = (extra, schema = ElicitResultSchema) => ask(extra, "user_name", "elicitation/create", {
  message: "What is your name?",
  requestedSchema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
}, schema);
const askCapital = (extra) => ask(extra, "capital_question", "sampling/createMessage", {
  messages: [{ role: "user", content: { type: "text", text: "What is the capital of France?" } }],
  maxTokens: 100,
}, CreateMessageResultSchema);
const askRoots = (extra) => ask(extra, "client_roots", "roots/list", {}, ListRootsResultSchema);
const askConfirm = (extra, key = "confirm") => ask(extra, key, "elicitation/create", {
  message: "Continue?",
  requestedSchema: { type: "object", properties: { ok: { type: "boolean" } } },
}, AnyResult);

// The text of a sampling answer (one content block, or the first of several).
const said = (result) => {
  const content = Array.isArray(result.content) ? result.content[0] : result.content;
  return content?.text ?? JSON.stringify(content);
};
const named = (result) =>
  result.action === "accept" && typeof result.content?.name === "string" ? result.content.name : undefined;

function makeServer() {
  const server = new Server(
    { name: "plughost-gateway-fixture", version: "1.0.0" },
    {
      capabilities: {
        tools: { listChanged: true },
        resources: { subscribe: true, listChanged: true },
        prompts: { listChanged: true },
        logging: {},
        completions: {},
      },
      instructions: "The gateway fixture: one tool, resource or prompt for each MCP feature.",
    },
  );
  const watched = new Map();

  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: TOOLS }));

  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const args = request.params.arguments ?? {};
    const text = (t) => ({ type: "text", text: t });
    switch (request.params.name) {
      case "test_simple_text":
        return { content: [text("This is a simple text response for testing.")] };
      case "test_image_content":
        return { content: [{ type: "image", data: PNG, mimeType: "image/png" }] };
      case "test_audio_content":
        return { content: [{ type: "audio", data: WAV, mimeType: "audio/wav" }] };
      case "test_embedded_resource":
        return { content: [{ type: "resource", resource: { uri: "test://embedded", mimeType: "text/plain", text: "embedded text" } }] };
      case "test_multiple_content_types":
        return { content: [
          { type: "text", text: "first", annotations: { audience: ["user"], priority: 0.5 } },
          { type: "image", data: PNG, mimeType: "image/png" },
          { type: "resource", resource: { uri: "test://mixed", mimeType: "application/json", text: "{\"a\":1}" } },
          { type: "resource_link", uri: "test://static-text", name: "static-text", description: "a link" },
        ], _meta: { "fixture/note": "mixed" } };
      case "test_tool_with_logging":
        for (const [level, data] of [["info", "starting"], ["debug", "working"], ["info", "done"]]) {
          await server.sendLoggingMessage({ level, logger: "fixture", data }, extra.sessionId);
          await sleep(20);
        }
        return { content: [text("logged three messages")] };
      case "test_tool_with_progress": {
        const token = request.params._meta?.progressToken;
        for (const progress of [0, 50, 100]) {
          if (token !== undefined) {
            await extra.sendNotification({ method: "notifications/progress",
              params: { progressToken: token, progress, total: 100 } });
          }
          await sleep(20);
        }
        return { content: [text("progress done")] };
      }
      case "test_error_handling":
        return { isError: true, content: [text("This tool failed on purpose.")] };
      case "test_sampling": {
        const result = await send(extra, { method: "sampling/createMessage", params: {
          messages: [{ role: "user", content: { type: "text", text: args.prompt ?? "Say hi." } }],
          maxTokens: 100 } }, CreateMessageResultSchema);
        return { content: [text(`LLM said: ${result.content?.text ?? JSON.stringify(result.content)}`)] };
      }
      case "test_elicitation": {
        const result = await send(extra, { method: "elicitation/create", params: {
          message: args.message ?? "Who are you?",
          requestedSchema: { type: "object", properties: {
            username: { type: "string", description: "Your user name" },
            email: { type: "string", description: "Your email" } }, required: ["username"] } } },
          ElicitResultSchema);
        return { content: [text(`elicitation: ${result.action} ${JSON.stringify(result.content ?? {})}`)] };
      }
      case "test_elicitation_sep1034_defaults": {
        const result = await send(extra, { method: "elicitation/create", params: {
          message: "Check the defaults.",
          requestedSchema: { type: "object", properties: {
            name: { type: "string", default: "John Doe" },
            age: { type: "integer", default: 30 },
            score: { type: "number", default: 95.5 },
            status: { type: "string", enum: ["active", "inactive", "pending"], default: "active" },
            verified: { type: "boolean", default: true } } } } }, ElicitResultSchema);
        return { content: [text(`elicitation: ${result.action}`)] };
      }
      case "test_elicitation_sep1330_enums": {
        const result = await send(extra, { method: "elicitation/create", params: {
          message: "Pick.",
          requestedSchema: { type: "object", properties: {
            untitledSingle: { type: "string", enum: ["a", "b", "c"] },
            titledSingle: { type: "string", oneOf: [{ const: "a", title: "A" }, { const: "b", title: "B" }] },
            legacyEnum: { type: "string", enum: ["x", "y"], enumNames: ["X", "Y"] },
            untitledMulti: { type: "array", items: { type: "string", enum: ["a", "b"] } },
            titledMulti: { type: "array", items: { anyOf: [{ const: "a", title: "A" }, { const: "b", title: "B" }] } },
          } } } }, ElicitResultSchema);
        return { content: [text(`elicitation: ${result.action}`)] };
      }
      case "test_list_roots": {
        const result = await send(extra, { method: "roots/list" }, ListRootsResultSchema);
        return { content: [text(`roots: ${result.roots.map((r) => r.uri).join(" ")}`)] };
      }
      case "test_reconnection":
        await sleep(200);
        return { content: [text("Reconnection test completed successfully")] };
      case "test_slow":
        await sleep(args.ms ?? 1000);
        return { content: [text(`slept ${args.ms ?? 1000} ms`)] };
      case "test_blob": {
        const bytes = Buffer.alloc(args.size ?? 16, 7);
        return { content: [{ type: "resource", resource: { uri: "test://blob", mimeType: "application/octet-stream", blob: bytes.toString("base64") } }] };
      }
      case "test_structured":
        return { content: [text("{\"answer\":42}")], structuredContent: { answer: 42 } };
      case "json_schema_2020_12_tool":
        return { content: [text(`hello ${args.name ?? "?"}`)] };
      case "test_missing_capability": {
        let result;
        try {
          result = await ask(extra, "sampling_needed", "sampling/createMessage", {
            messages: [{ role: "user", content: { type: "text", text: "Say hi" } }], maxTokens: 10,
          }, CreateMessageResultSchema);
        } catch {
          return { isError: true, content: [text("test_missing_capability needs the client's sampling capability")] };
        }
        return { content: [text(`LLM said: ${said(result)}`)] };
      }
      case "test_streaming_elicitation":
        await askConfirm(extra);
        return { content: [text("streamed elicitation done")] };
      case "test_logging_tool":
        await extra.sendNotification({ method: "notifications/message",
          params: { level: "info", logger: "fixture", data: "test_logging_tool ran" } });
        return { content: [text("logged")] };
      case "test_trigger_tool_change":
        await server.sendToolListChanged();
        return { content: [text("tool list change sent")] };
      case "test_trigger_prompt_change":
        await server.sendPromptListChanged();
        return { content: [text("prompt list change sent")] };
      case "test_input_required_result_elicitation": {
        const name = named(await askName(extra));
        return { content: [text(name === undefined ? "no name given" : `Hello, ${name}`)] };
      }
      case "test_input_required_result_sampling":
        return { content: [text(said(await askCapital(extra)))] };
      case "test_input_required_result_list_roots": {
        const result = await askRoots(extra);
        return { content: [text(`roots: ${result.roots.map((r) => r.uri).join(" ")}`)] };
      }
      case "test_input_required_result_request_state":
        await askConfirm(extra);
        return { content: [text("state-ok")] };
      case "test_input_required_result_multiple_inputs": {
        const [person, capital, roots] = await Promise.all([askName(extra), askCapital(extra), askRoots(extra)]);
        return { content: [text(`name: ${named(person) ?? "none"}; capital: ${said(capital)}; `
          + `roots: ${roots.roots.map((r) => r.uri).join(" ")}`)] };
      }
      case "test_input_required_result_multi_round":
        await askConfirm(extra, "step_one");
        await askConfirm(extra, "step_two");
        return { content: [text("both rounds done")] };
      case "test_input_required_result_tampered_state":
        await askConfirm(extra);
        return { content: [text("ok")] };
      case "test_input_required_result_capabilities": {
        let person;
        try {
          person = await askName(extra);
        } catch {
          return { content: [text(`answered by sampling: ${said(await askCapital(extra))}`)] };
        }
        return { content: [text(`answered by elicitation: ${named(person) ?? person.action}`)] };
      }
      default:
        throw new Error(`no tool ${request.params.name}`);
    }
  });

  server.setRequestHandler(ListResourcesRequestSchema, async () => ({ resources: RESOURCES }));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({
    resourceTemplates: [{ uriTemplate: "test://template/{id}/data", name: "template", mimeType: "application/json" }],
  }));
  server.setRequestHandler(ReadResourceRequestSchema, async (request) => {
    const uri = request.params.uri;
    if (uri === "test://static-text" || uri === "test://example-resource") {
      return { contents: [{ uri, mimeType: "text/plain", text: "This is the content of a static text resource." }] };
    }
    if (uri === "test://static-binary") {
      return { contents: [{ uri, mimeType: "application/octet-stream", blob: BINARY }] };
    }
    if (uri === "test://watched-resource") {
      return { contents: [{ uri, mimeType: "text/plain", text: `watched at ${Date.now()}` }] };
    }
    const m = /^test:\/\/template\/([^/]+)\/data$/.exec(uri);
    if (m) {
      return { contents: [{ uri, mimeType: "application/json", text: JSON.stringify({ id: m[1] }) }] };
    }
    throw new Error(`no resource ${uri}`);
  });
  server.setRequestHandler(SubscribeRequestSchema, async (request) => {
    const uri = request.params.uri;
    if (!watched.has(uri)) {
      watched.set(uri, setInterval(() => {
        server.sendResourceUpdated({ uri }).catch(() => {});
      }, 1000));
    }
    return {};
  });
  server.setRequestHandler(UnsubscribeRequestSchema, async (request) => {
    clearInterval(watched.get(request.params.uri));
    watched.delete(request.params.uri);
    return {};
  });

  server.setRequestHandler(ListPromptsRequestSchema, async () => ({ prompts: PROMPTS }));
  server.setRequestHandler(GetPromptRequestSchema, async (request, extra) => {
    const args = request.params.arguments ?? {};
    const user = (content) => ({ role: "user", content });
    switch (request.params.name) {
      case "test_simple_prompt":
        return { messages: [user({ type: "text", text: "This is a simple prompt for testing." })] };
      case "test_prompt_with_arguments":
        return { messages: [user({ type: "text", text: `Prompt with arguments: arg1='${args.arg1}', arg2='${args.arg2}'` })] };
      case "test_prompt_with_embedded_resource":
        return { messages: [
          user({ type: "resource", resource: { uri: args.resourceUri, mimeType: "text/plain", text: "Embedded resource content for testing." } }),
          user({ type: "text", text: "Please process the embedded resource above." }),
        ] };
      case "test_prompt_with_image":
        return { messages: [user({ type: "image", data: PNG, mimeType: "image/png" }),
                            user({ type: "text", text: "Please analyze the image above." })] };
      case "test_input_required_result_prompt": {
        const answer = await ask(extra, "user_context", "elicitation/create", {
          message: "What context should the prompt use?",
          requestedSchema: { type: "object", properties: { context: { type: "string" } } },
        }, AnyResult);
        return { messages: [user({ type: "text", text: `Context: ${JSON.stringify(answer)}` })] };
      }
      default:
        throw new Error(`no prompt ${request.params.name}`);
    }
  });

  server.setRequestHandler(CompleteRequestSchema, async (request) => {
    const value = request.params.argument.value;
    const values = ["test", "testing", "tested"].filter((v) => v.startsWith(value));
    return { completion: { values, total: values.length, hasMore: false } };
  });
  server.setRequestHandler(SetLevelRequestSchema, async () => ({}));
  server.onclose = () => {
    for (const timer of watched.values()) clearInterval(timer);
  };
  return server;
}

const port = process.argv.indexOf("--http");
if (port < 0) {
  await makeServer().connect(new StdioServerTransport());
} else {
  const transports = new Map();
  const http = createServer(async (req, res) => {
    if (!req.url.startsWith("/mcp")) {
      res.writeHead(404).end();
      return;
    }
    const host = req.headers.host ?? "";
    if (!/^(127\.0\.0\.1|localhost|\[::1\])(:\d+)?$/.test(host)) {
      res.writeHead(403).end("forbidden host");
      return;
    }
    const id = req.headers["mcp-session-id"];
    let transport = id && transports.get(id);
    if (!transport) {
      if (id) {
        res.writeHead(404).end("no such session");
        return;
      }
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sid) => transports.set(sid, transport),
      });
      transport.onclose = () => transport.sessionId && transports.delete(transport.sessionId);
      await makeServer().connect(transport);
    }
    await transport.handleRequest(req, res);
  });
  http.listen(Number(process.argv[port + 1]), "127.0.0.1");
}
