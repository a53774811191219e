"""plughost_plugin: write plughost plugin tools as plain Python functions.

Copy this one file next to your plugin's main.py; it needs only the standard
library (Python 3.8+).

    from plughost_plugin import Plugin, Context, ToolError

    plugin = Plugin()

    @plugin.tool(description="Greets a person by name.")
    def hello_greet(name: str, times: int = 1, ctx: Context = None) -> str:
        if not name.strip():
            raise ToolError("invalid_args", "name is empty")
        return " ".join([f"Hello, {name}!"] * times)

    if __name__ == "__main__":
        plugin.run()

The host writes one JSON request ({"tool", "input", "context"}) to stdin and
reads one JSON response ({"result", "is_error", ...}) from stdout. With
PLUGHOST_PERSISTENT=1 the process stays up and answers each request line with
one response line until stdin closes. `python3 main.py --manifest-tools` prints
the "tools" array for plugin.json.

Every call may start a new interpreter, so this module imports only json, os,
sys and the signal functions up front; anything else is imported where it is
first needed.
"""
import json
import os
import sys

try:  # the C module behind `signal`: the same functions without building its enums
    import _signal as signal
except ImportError:  # pragma: no cover - other Python implementations
    import signal

__all__ = ["Plugin", "Context", "ToolError", "Result", "Attachment", "ERROR_KINDS"]

#: The error kinds the host understands (`ToolError(kind, message)`).
ERROR_KINDS = ("invalid_args", "not_found", "not_allowed", "failed", "timeout")
MEDIA_TYPES = ("image", "audio", "video", "file")

_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.")
_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean",
               list: "array", dict: "object", type(None): "null"}
_A_TYPE = {"string": "a string", "integer": "an integer", "number": "a number",
           "boolean": "true or false", "array": "an array", "object": "an object", "null": "null"}
_MISSING = object()
_CO_VARARGS, _CO_VARKEYWORDS, _CO_COROUTINE = 0x04, 0x08, 0x80


class ToolError(Exception):
    """Raise in a tool to fail the call with a kind the host and the agent understand.

    `ToolError("not_found", "No such city")` answers
    {"result": "No such city", "is_error": true, "error": {"kind": "not_found", ...}}.
    """

    def __init__(self, kind, message):
        if kind not in ERROR_KINDS:  # a typo here would otherwise surface only on the error path
            raise ValueError(f"unknown error kind {kind!r}; use one of {', '.join(ERROR_KINDS)}")
        super().__init__(message)
        self.kind = kind
        self.message = str(message)


class Attachment:
    """A file or media item returned with a result: give `path` (relative paths
    are resolved against the data folder) or `url`. `mime_type` is guessed from
    the file name and `media_type` from the MIME type when not given."""

    __slots__ = ("path", "url", "media_type", "mime_type", "caption", "size")

    def __init__(self, path=None, *, url=None, media_type=None, mime_type=None, caption=None, size=None):
        if (path is None) == (url is None):
            raise ValueError("an Attachment needs exactly one of path= or url=")
        self.path = None if path is None else os.fspath(path)
        self.url = url
        if mime_type is None:
            import mimetypes  # only here: it reads the system's MIME tables
            mime_type = mimetypes.guess_type(self.path if url is None else url)[0]
        if media_type is None:
            top = (mime_type or "").split("/")[0]
            media_type = top if top in ("image", "audio", "video") else "file"
        if media_type not in MEDIA_TYPES:
            raise ValueError(f"unknown media_type {media_type!r}; use one of {', '.join(MEDIA_TYPES)}")
        self.media_type, self.mime_type, self.caption, self.size = media_type, mime_type, caption, size

    def to_json(self):
        out = {"media_type": self.media_type}
        for key in ("mime_type", "path", "url", "caption", "size"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out


class Result:
    """A full answer: the text the agent sees plus optional machine-readable
    `structured` data (checked against the tool's output_schema), attachments,
    and `is_error` for a failure without a specific kind."""

    __slots__ = ("text", "structured", "attachments", "is_error")

    def __init__(self, text="", structured=None, attachments=(), is_error=False):
        self.text, self.structured, self.is_error = text, structured, is_error
        self.attachments = list(attachments)

    def to_json(self):
        out = {"result": str(self.text), "is_error": bool(self.is_error)}
        if self.structured is not None:
            out["structured"] = self.structured
        if self.attachments:
            out["attachments"] = [a.to_json() if isinstance(a, Attachment) else a for a in self.attachments]
        return out


class Context:
    """What a tool knows about its call.

    plugin_dir and data_dir are pathlib.Path (pathlib is imported on first use);
    data_dir is where the plugin keeps state. When a person runs the plugin by
    hand with an empty context they fall back to $PLUGHOST_PLUGIN_DIR /
    $PLUGHOST_DATA_DIR, then to the script's folder and its `.data` subfolder.
    request_id, session_id, actor, source ("cli", "mcp", "library") and scope
    ("foreground", "background") are None when the host did not send them;
    `raw` is the context object as received.

    traceparent and tracestate are the W3C trace context the call continues
    (plughost's span of the call, or its caller's), from the request or else
    $TRACEPARENT / $TRACESTATE; None without one. `trace_carrier()` hands them
    to OpenTelemetry: `opentelemetry.propagate.extract(ctx.trace_carrier())`
    is the parent context of the tool's own spans.
    """

    def __init__(self, raw, plugin=None):
        self.raw = raw
        self._plugin = plugin
        self._paths = {}
        for key in ("request_id", "session_id", "actor", "source", "scope"):
            value = raw.get(key)
            setattr(self, key, value if isinstance(value, str) else None)
        parent = raw.get("traceparent")
        from_request = isinstance(parent, str) and bool(parent)
        if not from_request:
            parent = os.environ.get("TRACEPARENT") or None
        state = raw.get("tracestate") if from_request else os.environ.get("TRACESTATE")
        self.traceparent = parent
        self.tracestate = state if parent and isinstance(state, str) and state else None

    def trace_carrier(self):
        """The trace context as W3C headers ({"traceparent": ..., "tracestate": ...}),
        for an OpenTelemetry propagator; {} without one."""
        carrier = {}
        if self.traceparent:
            carrier["traceparent"] = self.traceparent
            if self.tracestate:
                carrier["tracestate"] = self.tracestate
        return carrier

    @property
    def plugin_dir(self):
        if "plugin" not in self._paths:
            from pathlib import Path
            given = self.raw.get("plugin_dir") or os.environ.get("PLUGHOST_PLUGIN_DIR")
            self._paths["plugin"] = Path(given or os.path.dirname(os.path.abspath(sys.argv[0] or ".")))
        return self._paths["plugin"]

    @property
    def data_dir(self):
        if "data" not in self._paths:
            from pathlib import Path
            given = self.raw.get("data_dir") or os.environ.get("PLUGHOST_DATA_DIR")
            path = Path(given) if given else self.plugin_dir / ".data"
            if not given:  # the host creates data_dir; by hand we do, so tools can rely on it
                path.mkdir(parents=True, exist_ok=True)
            self._paths["data"] = path
        return self._paths["data"]

    @property
    def cancelled(self):
        """True once the host asked the process to stop (SIGTERM). A long tool
        can check it and return early; the process exits after answering."""
        return bool(self._plugin and self._plugin._cancelled)

    def progress(self, done, total=None, message=None):
        """Reports progress as one stderr line, `::progress:: done/total message`.
        Harmless when run by hand: the line just shows on the terminal."""
        line = "::progress:: " + _number(done) + ("" if total is None else "/" + _number(total))
        if message:  # one line per report: a newline would cut the message short
            line += " " + str(message).replace("\r", " ").replace("\n", " ")
        sys.stderr.write(line + "\n")
        sys.stderr.flush()


def _number(x):
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise TypeError(f"progress numbers must be int or float, not {type(x).__name__}")
    return str(int(x)) if isinstance(x, float) and x.is_integer() else str(x)


class _Terminated(SystemExit):
    """Raised by the SIGTERM handler; never turned into an error response."""


class _Tool:
    def __init__(self, fn, name, description, input_schema, output_schema, timeout_secs):
        name = name or getattr(fn, "__name__", "")
        if not 1 <= len(name) <= 64 or not set(name) <= _NAME_CHARS:
            raise ValueError(f"tool name {name!r} must be 1-64 characters of A-Z a-z 0-9 _ - .")
        description = description or _clean_doc(getattr(fn, "__doc__", None))
        if not description:
            raise ValueError(f"tool {name}: give description= or a docstring (the model reads it)")
        self.fn, self.name = fn, name
        self.params, self.ctx_param, self.var_kw, derived = _signature(fn, strict=input_schema is None)
        self.is_async = bool(fn.__code__.co_flags & _CO_COROUTINE)
        if input_schema is None:
            input_schema = derived
        elif not isinstance(input_schema, dict) or input_schema.get("type") != "object":
            raise ValueError(f'tool {name}: input_schema must be a JSON Schema object with "type": "object"')
        self.schema = input_schema
        self.spec = {"name": name, "description": description, "input_schema": input_schema}
        if output_schema is not None:
            self.spec["output_schema"] = output_schema
        if timeout_secs is not None:
            self.spec["timeout_secs"] = timeout_secs

    def bind(self, args):
        """Checks the input against the schema and the function's parameters;
        returns the keyword arguments, or raises ToolError("invalid_args")."""
        errors = []
        args = _check(self.schema, args, "", errors)
        if not errors:
            for key in args:
                if key not in self.params and not self.var_kw:
                    errors.append(f'unknown argument "{key}"')
            for key, required in self.params.items():
                if required and key not in args:
                    errors.append(f'missing required argument "{key}"')
        if errors:
            hint = ""
            if any(e.startswith("unknown argument") for e in errors):
                hint = f" (it takes: {', '.join(self.params) or 'no arguments'})"
            raise ToolError("invalid_args", f"Invalid input for {self.name}: {'; '.join(errors)}{hint}.")
        return dict(args)


def _clean_doc(doc):
    """inspect.cleandoc without importing inspect (which costs more than this whole module)."""
    if not doc:
        return ""
    lines = doc.expandtabs().strip().splitlines()
    indent = min((len(l) - len(l.lstrip()) for l in lines[1:] if l.strip()), default=0)
    return "\n".join([lines[0]] + [l[indent:].rstrip() for l in lines[1:]])


def _signature(fn, strict):
    """Reads parameters from the code object (no inspect). Returns
    ({name: required}, context parameter or None, takes **kwargs, derived schema)."""
    code = getattr(fn, "__code__", None)
    if code is None:
        raise TypeError(f"@plugin.tool needs a plain function, not {fn!r}")
    if code.co_posonlyargcount or code.co_flags & _CO_VARARGS:
        raise TypeError(f"{fn.__name__}: tool parameters are passed by name; drop '/' and *args")
    names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    positional_defaults = fn.__defaults__ or ()
    defaults = dict(zip(names[code.co_argcount - len(positional_defaults):code.co_argcount], positional_defaults))
    defaults.update(fn.__kwdefaults__ or {})
    try:
        hints = fn.__annotations__
    except NameError:  # Python 3.14+ evaluates annotations on access; an undefined name fails
        hints = {}
    params, ctx_param, props, required = {}, None, {}, []
    for name in names:
        hint = hints.get(name, _MISSING)
        if isinstance(hint, str):  # `from __future__ import annotations` or a quoted hint
            try:
                hint = eval(hint, fn.__globals__)
            except Exception:
                pass
        if name == "ctx" or _is_context(hint):
            ctx_param = name
            continue
        default = defaults.get(name, _MISSING)
        params[name] = default is _MISSING
        schema = _schema_for(hint)
        if schema is None:
            if strict:
                raise TypeError(f"{fn.__name__}: parameter {name!r} has an annotation plughost cannot turn into "
                                f"JSON Schema ({hint!r}); use str, int, float, bool, list, dict, Optional, "
                                "Literal, Annotated, or pass input_schema=")
            schema = {}
        if default is _MISSING:
            required.append(name)
        elif default is None:
            schema = _nullable(schema)  # `x: str = None` accepts null, as the function does
        else:
            try:
                json.dumps(default, allow_nan=False)
                schema = dict(schema, default=default)
            except (TypeError, ValueError):
                pass
        props[name] = schema
    derived = {"type": "object", "properties": props}
    if required:
        derived["required"] = required
    derived["additionalProperties"] = bool(code.co_flags & _CO_VARKEYWORDS)
    return params, ctx_param, bool(code.co_flags & _CO_VARKEYWORDS), derived


def _is_context(hint):
    if hint is Context or (isinstance(hint, str) and hint.split(".")[-1] in ("Context", "Optional[Context]")):
        return True
    return Context in getattr(hint, "__args__", ())  # Optional[Context]


def _schema_for(tp):
    """JSON Schema for a type hint, or None when there is no faithful one.
    typing is never imported here: if a hint uses it, the plugin already did."""
    if tp is _MISSING:
        return {}
    if type(tp) is type:  # a plain class (list[int] and Annotated[...] are not)
        return {"type": _JSON_TYPES[tp]} if tp in _JSON_TYPES else None
    typing = sys.modules.get("typing")
    if typing is not None and tp is typing.Any:
        return {}
    origin, args = getattr(tp, "__origin__", None), getattr(tp, "__args__", ())
    metadata = getattr(tp, "__metadata__", None)
    if metadata is not None:  # Annotated[str, "what it is", {"minLength": 1}]
        schema = _schema_for(origin)
        if schema is not None:
            schema = dict(schema)
            for m in metadata:
                if isinstance(m, str):
                    schema["description"] = m
                elif isinstance(m, dict):
                    schema.update(m)
        return schema
    if typing is not None and origin is getattr(typing, "Literal", None):
        kinds = {_JSON_TYPES.get(type(a)) for a in args}
        if len(kinds) == 1 and None not in kinds:
            return {"type": kinds.pop(), "enum": list(args)}
        return {"enum": list(args)}
    if (typing is not None and origin is typing.Union) or type(tp).__name__ == "UnionType":
        branches = [_schema_for(a) for a in args]
        if None in branches:
            return None
        others = [b for b in branches if b != {"type": "null"}]
        if len(others) == 1 and len(branches) == 2:
            return _nullable(others[0])
        return {"anyOf": branches}
    if origin is list:
        item = _schema_for(args[0]) if args and type(args[0]).__name__ != "TypeVar" else {}
        return {"type": "array", "items": item} if item else {"type": "array"}
    if origin is dict:
        value = _schema_for(args[1]) if len(args) == 2 and type(args[1]).__name__ != "TypeVar" else {}
        return {"type": "object", "additionalProperties": value} if value else {"type": "object"}
    return None


def _nullable(schema):
    kind = schema.get("type")
    if not schema or kind == "null" or (isinstance(kind, list) and "null" in kind):
        return schema
    if isinstance(kind, str):
        schema = dict(schema, type=[kind, "null"])
        if "enum" in schema:
            schema["enum"] = schema["enum"] + [None]
        return schema
    return {"anyOf": [schema, {"type": "null"}]}


def _json_type(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"  # JSON Schema counts 2.0 as an integer
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    return "object" if isinstance(value, dict) else type(value).__name__


def _same(a, b):
    """JSON equality: 1 == 1.0, but true is not 1."""
    return a == b and isinstance(a, bool) == isinstance(b, bool)


def _check(schema, value, where, errors):
    """A light JSON Schema check (type, enum, items, properties, required,
    additionalProperties, anyOf): enough to give a person running the plugin by
    hand a clear message; the host validates fully. Returns the value with
    whole floats made int where an integer is expected (JSON has one number type)."""
    if not isinstance(schema, dict):
        return value
    name = f'"{where}"' if where else "input"
    if "anyOf" in schema:
        for branch in schema["anyOf"]:
            found = []
            checked = _check(branch, value, where, found)
            if not found:
                return checked
        errors.append(f"{name} does not match any allowed shape")
        return value
    kinds = schema.get("type")
    got = _json_type(value)
    if kinds is not None:
        kinds = kinds if isinstance(kinds, list) else [kinds]
        if got not in kinds and not (got == "integer" and "number" in kinds):
            errors.append(f"{name} must be {' or '.join(_A_TYPE.get(k, k) for k in kinds)}, not {_A_TYPE.get(got, got)}")
            return value
        if got == "integer" and isinstance(value, float) and "integer" in kinds and "number" not in kinds:
            value = int(value)
    if "enum" in schema and not any(_same(value, e) for e in schema["enum"]):
        errors.append(f"{name} must be one of {', '.join(json.dumps(e) for e in schema['enum'])}")
    if got == "array" and isinstance(schema.get("items"), dict):
        value = [_check(schema["items"], v, f"{where}[{i}]", errors) for i, v in enumerate(value)]
    if got == "object":
        props, extra = schema.get("properties", {}), schema.get("additionalProperties", True)
        for key in schema.get("required", ()):
            if key not in value:
                errors.append(f'missing required {"field" if where else "argument"} "{where + "." if where else ""}{key}"')
        out = {}
        for key, v in value.items():
            path = f"{where}.{key}" if where else key
            if key in props:
                out[key] = _check(props[key], v, path, errors)
            elif extra is False:
                errors.append(f'unknown {"field" if where else "argument"} "{path}"')
            else:
                out[key] = _check(extra, v, path, errors)
        value = out
    return value


def _dumps(value):
    """Compact, one-line JSON. NaN and Infinity are not JSON, so they are refused."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _encode(response):
    try:
        return _dumps(response).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: only its \u escape is valid UTF-8 JSON
        return json.dumps(response, separators=(",", ":"), allow_nan=False).encode("ascii")


def _error(kind, message):
    return {"result": message, "is_error": True, "error": {"kind": kind, "message": message}}


def _failure(exc):
    """An unexpected exception: the traceback goes to stderr (the host logs it),
    the agent gets one line."""
    import traceback
    traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    sys.stderr.flush()
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return _error("failed", text)


def _to_response(value):
    if isinstance(value, str):
        return {"result": value, "is_error": False}
    if isinstance(value, Result):
        return value.to_json()
    if value is None:
        return {"result": "", "is_error": False}
    return {"result": _dumps(value), "is_error": False, "structured": value}  # dict, list, number...


class Plugin:
    """A set of tools and the loop that serves them (see the module docstring)."""

    def __init__(self):
        self._tools = {}
        self._cancelled = False
        self._busy = False

    def tool(self, fn=None, *, name=None, description=None, input_schema=None, output_schema=None,
             timeout_secs=None):
        """Registers a function as a tool: `@plugin.tool` or `@plugin.tool(description=...)`.

        The input schema comes from the parameters' type hints unless
        input_schema= is given; a parameter named `ctx` or annotated Context
        receives the call's Context and is not part of the input.
        """
        def register(fn):
            tool = _Tool(fn, name, description, input_schema, output_schema, timeout_secs)
            if tool.name in self._tools:
                raise ValueError(f"tool {tool.name!r} is registered twice")
            self._tools[tool.name] = tool
            return fn
        return register(fn) if fn is not None else register

    def manifest_tools(self):
        """The "tools" array for plugin.json."""
        return [tool.spec for tool in self._tools.values()]

    def call(self, request):
        """Answers one request (a dict, or JSON text or bytes) in-process and
        returns the response dict: handy for unit tests of a plugin."""
        return json.loads(self._answer(request))

    def run(self, argv=None):
        """Serves calls on stdin/stdout: one call per process, or one call per
        line while PLUGHOST_PERSISTENT=1. `--manifest-tools` prints the tools."""
        argv = sys.argv[1:] if argv is None else argv
        if "--manifest-tools" in argv:
            sys.stdout.write(json.dumps(self.manifest_tools(), indent=2, ensure_ascii=False) + "\n")
            sys.stdout.flush()
            return
        requests, responses = _private_stdio()
        signal.signal(signal.SIGTERM, self._on_sigterm)
        if os.environ.get("PLUGHOST_PERSISTENT") == "1":
            while not self._cancelled:
                line = requests.readline()
                if not line:
                    break  # stdin closed: the host is done with this worker
                if line.strip():  # a blank line (someone pressing Enter) is not a request
                    self._serve(line, responses)
        else:
            self._serve(requests.read(), responses)

    def _serve(self, request, out):
        self._busy = True
        out.write(self._answer(request) + b"\n")
        out.flush()
        self._busy = False

    def _on_sigterm(self, signum, frame):
        if self._busy and not self._cancelled:
            self._cancelled = True  # let the tool finish (it can check ctx.cancelled), then exit
            return
        raise _Terminated(128 + signum)  # idle, or told twice: stop now

    def _answer(self, request):
        """One request -> one response as compact JSON bytes (no newline). Never
        raises an Exception: whatever goes wrong becomes an error response."""
        try:
            return _encode(self._respond(request))
        except Exception as e:  # e.g. structured data that is not JSON
            return _encode(_failure(e))

    def _respond(self, request):
        if isinstance(request, (bytes, str)):
            if not request.strip():
                return _error("invalid_args", 'Invalid request: stdin is empty; send one JSON object like '
                                              '{"tool": "...", "input": {...}, "context": {}}.')
            try:
                request = json.loads(request)
            except ValueError as e:
                return _error("invalid_args", f"Invalid request: not JSON ({e}).")
        if not isinstance(request, dict) or not isinstance(request.get("tool"), str):
            return _error("invalid_args", 'Invalid request: expected a JSON object with a string "tool".')
        tool = self._tools.get(request["tool"])
        if tool is None:
            known = ", ".join(self._tools) or "none"
            return _error("not_found", f'Unknown tool "{request["tool"]}"; this plugin provides: {known}.')
        args = {} if request.get("input") is None else request["input"]
        context = {} if request.get("context") is None else request["context"]
        if not isinstance(args, dict) or not isinstance(context, dict):
            return _error("invalid_args", 'Invalid request: "input" and "context" must be JSON objects.')
        try:
            kwargs = tool.bind(args)
            if tool.ctx_param:
                kwargs[tool.ctx_param] = Context(context, self)
            value = tool.fn(**kwargs)
            if tool.is_async:
                import asyncio
                value = asyncio.run(value)
            return _to_response(value)
        except ToolError as e:
            return _error(e.kind, e.message)
        except _Terminated:
            raise
        except (Exception, SystemExit) as e:  # sys.exit() in a tool must not skip the answer
            return _failure(e)


def _private_stdio():
    """Takes stdin and stdout for the protocol and points fd 0 at /dev/null and
    fd 1 at stderr, so a stray print() - or a child process writing to its
    inherited stdout - cannot corrupt the response. Returns (requests, responses)."""
    requests = os.fdopen(os.dup(0), "rb")
    responses = os.fdopen(os.dup(1), "wb")
    try:
        os.dup2(2, 1)
    except OSError:  # no stderr at all: discard stray output instead
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.close(null)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    # Not flushed first on purpose: whatever print() left in sys.stdout's buffer
    # before run() now lands on stderr. Later prints go straight to stderr, in order.
    sys.stdout = sys.stderr
    return requests, responses
