// plughost_plugin.mjs: write plughost plugin tools as async functions (Node 18+).
//
// Copy this file (and plughost_plugin.d.ts, for editors) next to your plugin's
// main.mjs; it uses only Node's standard library.
//
//   import { Plugin, ToolError } from './plughost_plugin.mjs';
//   const plugin = new Plugin();
//   plugin.tool({
//     name: 'hello_greet',
//     description: 'Greets a person by name.',
//     inputSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
//     handler: async ({ name }, ctx) => `Hello, ${name}!`,
//   });
//   plugin.run();
//
// The host writes one JSON request ({tool, input, context}) to stdin and reads
// one JSON response ({result, is_error, ...}) from stdout. With
// PLUGHOST_PERSISTENT=1 the process stays up and answers each request line with
// one response line until stdin closes. `node main.mjs --manifest-tools` prints
// the "tools" array for plugin.json.

import fs from 'node:fs';
import path from 'node:path';

/** The error kinds the host understands. @type {readonly string[]} */
export const ERROR_KINDS = Object.freeze(['invalid_args', 'not_found', 'not_allowed', 'failed', 'timeout']);
/** @type {readonly string[]} */
export const MEDIA_TYPES = Object.freeze(['image', 'audio', 'video', 'file']);

const TOOL_NAME = /^[A-Za-z0-9_.-]{1,64}$/;
const A_TYPE = {
  string: 'a string', integer: 'an integer', number: 'a number', boolean: 'true or false',
  array: 'an array', object: 'an object', null: 'null',
};
// Enough to type the usual attachments without a MIME database.
const MIME_BY_EXT = {
  png: 'image/png', jpg: 'image/jpeg', jpeg: 'image/jpeg', gif: 'image/gif', webp: 'image/webp',
  svg: 'image/svg+xml', bmp: 'image/bmp', ico: 'image/x-icon',
  mp3: 'audio/mpeg', wav: 'audio/wav', ogg: 'audio/ogg', flac: 'audio/flac', m4a: 'audio/mp4',
  mp4: 'video/mp4', webm: 'video/webm', mov: 'video/quicktime', mkv: 'video/x-matroska',
  pdf: 'application/pdf', json: 'application/json', txt: 'text/plain', csv: 'text/csv',
  html: 'text/html', md: 'text/markdown', zip: 'application/zip',
};

/**
 * Throw in a handler to fail the call with a kind the host and the agent
 * understand: `throw new ToolError('not_found', 'No such city')`.
 */
export class ToolError extends Error {
  /** @param {string} kind one of ERROR_KINDS @param {string} message */
  constructor(kind, message) {
    // A typo here would otherwise only surface on the error path.
    if (!ERROR_KINDS.includes(kind)) {
      throw new TypeError(`unknown error kind ${JSON.stringify(kind)}; use one of ${ERROR_KINDS.join(', ')}`);
    }
    super(message);
    this.name = 'ToolError';
    this.kind = kind;
  }
}

/**
 * A full answer: the text the agent sees plus optional machine-readable
 * `structured` data (checked against the tool's outputSchema), attachments
 * ({path | url, mediaType?, mimeType?, caption?, size?}; relative paths are
 * resolved against the data folder) and `isError` for a failure without a kind.
 */
export class Result {
  /** @param {{text?: string, structured?: unknown, attachments?: object[], isError?: boolean}} [init] */
  constructor({ text = '', structured = undefined, attachments = [], isError = false } = {}) {
    this.text = text;
    this.structured = structured;
    this.attachments = attachments;
    this.isError = isError;
  }

  /** The response object as written to stdout. */
  toJSON() {
    const out = { result: String(this.text), is_error: Boolean(this.isError) };
    if (this.structured !== undefined) out.structured = this.structured;
    if (this.attachments.length) out.attachments = this.attachments.map(attachmentJSON);
    return out;
  }
}

function attachmentJSON(a) {
  const url = a.url, file = a.path;
  if ((url == null) === (file == null)) throw new TypeError('an attachment needs exactly one of path or url');
  const ext = String(file ?? new URL(url).pathname).split('.').pop().toLowerCase();
  const mime = a.mimeType ?? a.mime_type ?? MIME_BY_EXT[ext];
  let media = a.mediaType ?? a.media_type;
  if (media == null) {
    const top = String(mime ?? '').split('/')[0];
    media = ['image', 'audio', 'video'].includes(top) ? top : 'file';
  }
  if (!MEDIA_TYPES.includes(media)) throw new TypeError(`unknown mediaType ${JSON.stringify(media)}`);
  const out = { media_type: media };
  for (const [key, value] of [['mime_type', mime], ['path', file], ['url', url], ['caption', a.caption], ['size', a.size]]) {
    if (value != null) out[key] = value;
  }
  return out;
}

/**
 * What a handler knows about its call. pluginDir and dataDir are absolute paths;
 * run by hand with an empty context they fall back to $PLUGHOST_PLUGIN_DIR /
 * $PLUGHOST_DATA_DIR, then to the script's folder and its `.data` subfolder.
 * The other fields are undefined when the host did not send them.
 * traceparent and tracestate are the W3C trace context the call continues
 * (plughost's span of the call, or its caller's): the parent of the
 * handler's own OpenTelemetry spans.
 */
export class Context {
  #dataDir;

  /** @param {Record<string, unknown>} raw @param {AbortSignal} [signal] */
  constructor(raw, signal = new AbortController().signal) {
    const str = (v) => (typeof v === 'string' && v ? v : undefined);
    /** The context object as received. */
    this.raw = raw;
    this.pluginDir = str(raw.plugin_dir) ?? str(process.env.PLUGHOST_PLUGIN_DIR) ??
      path.dirname(path.resolve(process.argv[1] ?? 'main'));
    this.#dataDir = str(raw.data_dir) ?? str(process.env.PLUGHOST_DATA_DIR);
    this.requestId = str(raw.request_id);
    this.sessionId = str(raw.session_id);
    this.actor = str(raw.actor);
    this.source = str(raw.source);
    this.scope = str(raw.scope);
    // The W3C trace context the call continues: from the request, else the
    // environment (a process started for one call gets both).
    const fromRequest = str(raw.traceparent) !== undefined;
    this.traceparent = fromRequest ? str(raw.traceparent) : str(process.env.TRACEPARENT);
    this.tracestate = this.traceparent === undefined ? undefined
      : fromRequest ? str(raw.tracestate) : str(process.env.TRACESTATE);
    /** Aborted when the host asks the process to stop (SIGTERM): pass it to fetch() and friends. */
    this.signal = signal;
  }

  /** Where the plugin keeps state; created on first use when running by hand. */
  get dataDir() {
    if (this.#dataDir === undefined) {
      this.#dataDir = path.join(this.pluginDir, '.data');
      fs.mkdirSync(this.#dataDir, { recursive: true });
    }
    return this.#dataDir;
  }

  /**
   * The trace context as W3C headers, for an OpenTelemetry propagator:
   * `propagation.extract(context.active(), ctx.traceCarrier())`. `{}` without one.
   * @returns {{traceparent?: string, tracestate?: string}}
   */
  traceCarrier() {
    const carrier = {};
    if (this.traceparent) {
      carrier.traceparent = this.traceparent;
      if (this.tracestate) carrier.tracestate = this.tracestate;
    }
    return carrier;
  }

  /** True once the host asked the process to stop; the process exits after answering. */
  get cancelled() {
    return this.signal.aborted;
  }

  /**
   * Reports progress as one stderr line, `::progress:: done/total message`.
   * Harmless when run by hand: the line just shows on the terminal.
   * @param {number} done @param {number | null} [total] @param {string} [message]
   */
  progress(done, total = null, message = '') {
    if (typeof done !== 'number' || (total != null && typeof total !== 'number')) {
      throw new TypeError('progress numbers must be numbers');
    }
    let line = `::progress:: ${done}${total == null ? '' : `/${total}`}`;
    if (message) line += ` ${String(message).replace(/[\r\n]/g, ' ')}`; // one line per report
    process.stderr.write(`${line}\n`);
  }
}

function jsonType(value) {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value; // string, boolean, object
}

/**
 * A light JSON Schema check (type, enum, items, properties, required,
 * additionalProperties, anyOf): clear messages for a person running the plugin
 * by hand. The host validates fully before a call reaches the plugin.
 */
function check(schema, value, where, errors) {
  if (schema === null || typeof schema !== 'object') return;
  const name = where ? `"${where}"` : 'input';
  if (Array.isArray(schema.anyOf)) {
    if (!schema.anyOf.some((branch) => { const e = []; check(branch, value, where, e); return !e.length; })) {
      errors.push(`${name} does not match any allowed shape`);
    }
    return;
  }
  const got = jsonType(value);
  if (schema.type !== undefined) {
    const kinds = [].concat(schema.type);
    if (!kinds.includes(got) && !(got === 'integer' && kinds.includes('number'))) {
      errors.push(`${name} must be ${kinds.map((k) => A_TYPE[k] ?? k).join(' or ')}, not ${A_TYPE[got] ?? got}`);
      return;
    }
  }
  if (Array.isArray(schema.enum) && !schema.enum.some((e) => JSON.stringify(e) === JSON.stringify(value))) {
    errors.push(`${name} must be one of ${schema.enum.map((e) => JSON.stringify(e)).join(', ')}`);
  }
  if (got === 'array' && schema.items && typeof schema.items === 'object') {
    value.forEach((v, i) => check(schema.items, v, `${where}[${i}]`, errors));
  }
  if (got === 'object') {
    const props = schema.properties ?? {};
    const noun = where ? 'field' : 'argument';
    for (const key of schema.required ?? []) {
      if (!Object.hasOwn(value, key)) errors.push(`missing required ${noun} "${where ? `${where}.` : ''}${key}"`);
    }
    for (const [key, v] of Object.entries(value)) {
      const at = where ? `${where}.${key}` : key;
      if (Object.hasOwn(props, key)) check(props[key], v, at, errors);
      else if (schema.additionalProperties === false) errors.push(`unknown ${noun} "${at}"`);
      else check(schema.additionalProperties, v, at, errors);
    }
  }
}

function errorResponse(kind, message) {
  return { result: message, is_error: true, error: { kind, message } };
}

/** An unexpected throw: the stack goes to stderr (the host logs it), the agent gets one line. */
function failure(err) {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  const name = err instanceof Error ? err.name : 'Error';
  const message = err instanceof Error ? err.message : String(err);
  return errorResponse('failed', message ? `${name}: ${message}` : name);
}

function toResponse(value) {
  if (typeof value === 'string') return { result: value, is_error: false };
  if (value instanceof Result) return value.toJSON();
  if (value === undefined || value === null) return { result: '', is_error: false };
  return { result: JSON.stringify(value), is_error: false, structured: value }; // objects, arrays, numbers
}

/** Splits a byte stream into lines, decoding each whole line (never half a character). */
async function* lines(stream) {
  let pending = Buffer.alloc(0);
  for await (const chunk of stream) {
    pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
    let nl;
    while ((nl = pending.indexOf(10)) !== -1) {
      yield pending.subarray(0, nl).toString('utf8');
      pending = pending.subarray(nl + 1);
    }
  }
  if (pending.length) yield pending.toString('utf8');
}

/** A set of tools and the loop that serves them (see the top of this file). */
export class Plugin {
  #tools = new Map();
  #stop = new AbortController();
  #busy = false;

  /**
   * Registers a tool. inputSchema (a JSON Schema with type "object") defaults
   * to "no arguments". The handler gets the input object and a Context and
   * returns a string, a Result, or any JSON value (sent as text and structured).
   * @param {{name: string, description: string, inputSchema?: object, outputSchema?: object,
   *          timeoutSecs?: number, handler: (input: any, ctx: Context) => unknown}} def
   * @returns {this}
   */
  tool({ name, description, inputSchema, outputSchema, timeoutSecs, handler }) {
    if (typeof name !== 'string' || !TOOL_NAME.test(name)) {
      throw new TypeError(`tool name ${JSON.stringify(name)} must be 1-64 characters of A-Z a-z 0-9 _ - .`);
    }
    if (typeof description !== 'string' || !description.trim()) {
      throw new TypeError(`tool ${name}: a description is required (the model reads it)`);
    }
    const schema = inputSchema ?? { type: 'object', properties: {}, additionalProperties: false };
    if (schema === null || typeof schema !== 'object' || schema.type !== 'object') {
      throw new TypeError(`tool ${name}: inputSchema must be a JSON Schema object with "type": "object"`);
    }
    if (typeof handler !== 'function') throw new TypeError(`tool ${name}: handler must be a function`);
    if (this.#tools.has(name)) throw new Error(`tool ${name} is registered twice`);
    const spec = { name, description, input_schema: schema };
    if (outputSchema !== undefined) spec.output_schema = outputSchema;
    if (timeoutSecs !== undefined) spec.timeout_secs = timeoutSecs;
    this.#tools.set(name, { spec, handler });
    return this;
  }

  /** The "tools" array for plugin.json. */
  manifestTools() {
    return [...this.#tools.values()].map((t) => t.spec);
  }

  /**
   * Answers one request (an object, or JSON text) in-process; never throws.
   * Handy for unit tests of a plugin.
   * @param {unknown} request
   */
  async call(request) {
    return JSON.parse(await this.#answer(request));
  }

  /**
   * Serves calls on stdin/stdout: one per process, or one per line while
   * PLUGHOST_PERSISTENT=1; `--manifest-tools` prints the tools. Ends the process.
   * @param {string[]} [argv]
   */
  async run(argv = process.argv.slice(2)) {
    // Only responses may reach stdout: console.log and stray writes go to stderr.
    const stdout = process.stdout;
    const writeOut = stdout.write.bind(stdout);
    stdout.write = process.stderr.write.bind(process.stderr);
    const send = (text) => new Promise((resolve) => writeOut(`${text}\n`, resolve));
    try {
      if (argv.includes('--manifest-tools')) {
        await send(JSON.stringify(this.manifestTools(), null, 2));
      } else {
        process.on('SIGTERM', () => {
          if (this.#busy && !this.#stop.signal.aborted) this.#stop.abort(); // finish the call, then exit
          else process.exit(143); // idle, or told twice
        });
        if (process.env.PLUGHOST_PERSISTENT === '1') {
          for await (const line of lines(process.stdin)) {
            if (!line.trim()) continue; // a blank line (someone pressing Enter) is not a request
            await this.#serve(line, send);
            if (this.#stop.signal.aborted) break;
          }
        } else {
          const chunks = [];
          for await (const chunk of process.stdin) chunks.push(chunk);
          await this.#serve(Buffer.concat(chunks).toString('utf8'), send);
        }
      }
    } catch (err) {
      process.stderr.write(`plughost_plugin: ${err?.stack ?? err}\n`);
      process.exit(1);
    }
    // Explicitly: a handler that left a timer or socket open must not keep the process alive.
    process.exit(0);
  }

  async #serve(request, send) {
    this.#busy = true;
    await send(await this.#answer(request));
    this.#busy = false;
  }

  /** One request -> one response as compact JSON text; never throws. */
  async #answer(request) {
    try {
      return JSON.stringify(await this.#respond(request));
    } catch (err) { // e.g. a BigInt in structured data
      return JSON.stringify(failure(err));
    }
  }

  async #respond(request) {
    if (typeof request === 'string') {
      if (!request.trim()) {
        return errorResponse('invalid_args', 'Invalid request: stdin is empty; send one JSON object like ' +
          '{"tool": "...", "input": {...}, "context": {}}.');
      }
      try {
        request = JSON.parse(request);
      } catch (err) {
        return errorResponse('invalid_args', `Invalid request: not JSON (${err.message}).`);
      }
    }
    const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
    if (!isObject(request) || typeof request.tool !== 'string') {
      return errorResponse('invalid_args', 'Invalid request: expected a JSON object with a string "tool".');
    }
    const tool = this.#tools.get(request.tool);
    if (!tool) {
      const known = [...this.#tools.keys()].join(', ') || 'none';
      return errorResponse('not_found', `Unknown tool "${request.tool}"; this plugin provides: ${known}.`);
    }
    const input = request.input ?? {};
    const context = request.context ?? {};
    if (!isObject(input) || !isObject(context)) {
      return errorResponse('invalid_args', 'Invalid request: "input" and "context" must be JSON objects.');
    }
    const errors = [];
    check(tool.spec.input_schema, input, '', errors);
    if (errors.length) {
      const takes = errors.some((e) => e.startsWith('unknown argument'))
        ? ` (it takes: ${Object.keys(tool.spec.input_schema.properties ?? {}).join(', ') || 'no arguments'})` : '';
      return errorResponse('invalid_args', `Invalid input for ${request.tool}: ${errors.join('; ')}${takes}.`);
    }
    try {
      return toResponse(await tool.handler(input, new Context(context, this.#stop.signal)));
    } catch (err) {
      if (err instanceof ToolError) return errorResponse(err.kind, err.message);
      return failure(err);
    }
  }
}
