// Types for plughost_plugin.mjs: write plughost plugin tools as async functions.

/** The error kinds the host understands. */
export type ErrorKind = 'invalid_args' | 'not_found' | 'not_allowed' | 'failed' | 'timeout';
export type MediaType = 'image' | 'audio' | 'video' | 'file';

export declare const ERROR_KINDS: readonly ErrorKind[];
export declare const MEDIA_TYPES: readonly MediaType[];

/** Throw in a handler to fail the call with a kind: `throw new ToolError('not_found', 'No such city')`. */
export declare class ToolError extends Error {
  /** Throws a TypeError for a kind not in ERROR_KINDS. */
  constructor(kind: ErrorKind, message: string);
  readonly kind: ErrorKind;
}

/** A file or media item returned with a result. Give `path` (relative to the data folder) or `url`. */
export interface Attachment {
  path?: string;
  url?: string;
  /** Defaults from mimeType: image/*, audio/*, video/*, else file. */
  mediaType?: MediaType;
  /** Defaults from the file extension for common types. */
  mimeType?: string;
  caption?: string;
  /** Size in bytes. */
  size?: number;
}

export interface ResultInit {
  /** The text the agent sees. */
  text?: string;
  /** Machine-readable result; checked against the tool's outputSchema. */
  structured?: unknown;
  attachments?: Attachment[];
  /** A failure without a specific kind. */
  isError?: boolean;
}

/** A full answer: text plus optional structured data and attachments. */
export declare class Result {
  constructor(init?: ResultInit);
  text: string;
  structured?: unknown;
  attachments: Attachment[];
  isError: boolean;
  /** The response object as written to stdout. */
  toJSON(): ResponseJSON;
}

/** The response object on the wire. */
export interface ResponseJSON {
  result: string;
  is_error: boolean;
  structured?: unknown;
  attachments?: Array<{
    media_type: MediaType;
    mime_type?: string;
    path?: string;
    url?: string;
    caption?: string;
    size?: number;
  }>;
  error?: { kind: ErrorKind; message: string };
}

/** What a handler knows about its call. */
export declare class Context {
  constructor(raw: Record<string, unknown>, signal?: AbortSignal);
  /** The context object as received. */
  readonly raw: Record<string, unknown>;
  /** Absolute path of the plugin folder (also the working directory). */
  readonly pluginDir: string;
  /** Absolute path of the plugin's data folder, for state. */
  readonly dataDir: string;
  readonly requestId?: string;
  readonly sessionId?: string;
  readonly actor?: string;
  readonly source?: 'cli' | 'mcp' | 'library' | string;
  readonly scope?: 'foreground' | 'background' | string;
  /** The W3C `traceparent` the call continues (its span's parent), from the request or `$TRACEPARENT`. */
  readonly traceparent?: string;
  /** The W3C `tracestate` that travels with `traceparent`. */
  readonly tracestate?: string;
  /** `{traceparent, tracestate}` for an OpenTelemetry propagator; `{}` without one. */
  traceCarrier(): { traceparent?: string; tracestate?: string };
  /** Aborted when the host asks the process to stop (SIGTERM). */
  readonly signal: AbortSignal;
  /** True once the host asked the process to stop. */
  readonly cancelled: boolean;
  /** Writes `::progress:: done/total message` to stderr. */
  progress(done: number, total?: number | null, message?: string): void;
}

/** A JSON Schema for a tool's input: always an object. */
export interface InputSchema {
  type: 'object';
  properties?: Record<string, unknown>;
  required?: string[];
  additionalProperties?: boolean | Record<string, unknown>;
  [keyword: string]: unknown;
}

export interface ToolDefinition<I = Record<string, any>> {
  /** 1-64 characters of A-Z a-z 0-9 _ - . */
  name: string;
  /** What the tool does; this is what the model reads. */
  description: string;
  /** Defaults to no arguments. */
  inputSchema?: InputSchema;
  /** JSON Schema for the `structured` value. */
  outputSchema?: Record<string, unknown>;
  /** Time limit for one call, in seconds. */
  timeoutSecs?: number;
  /** Returns a string, a Result, or any JSON value (sent as compact text and as structured). */
  handler: (input: I, ctx: Context) => unknown | Promise<unknown>;
}

/** One entry of plugin.json's "tools" array. */
export interface ToolSpec {
  name: string;
  description: string;
  input_schema: InputSchema;
  output_schema?: Record<string, unknown>;
  timeout_secs?: number;
}

export declare class Plugin {
  tool<I = Record<string, any>>(definition: ToolDefinition<I>): this;
  /** The "tools" array for plugin.json. */
  manifestTools(): ToolSpec[];
  /** Answers one request in-process (for unit tests); never rejects. */
  call(request: unknown): Promise<ResponseJSON>;
  /** Serves stdin/stdout (per call, or persistent when PLUGHOST_PERSISTENT=1), then ends the process. */
  run(argv?: string[]): Promise<never>;
}
