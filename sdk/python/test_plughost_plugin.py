"""Tests for plughost_plugin.py. Run from the repository root:

    python3 -m unittest discover -s sdk/python -p 'test_*.py'

Most tests copy the SDK into a temporary plugin folder, as `plughost new` does,
and run a small plugin as a real subprocess, the way the host runs it.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from plughost_plugin import Attachment, Context, Plugin, Result, ToolError  # noqa: E402

PLUGIN = textwrap.dedent('''\
    #!/usr/bin/env python3
    import os, subprocess, sys, time
    from typing import List, Literal, Optional
    from plughost_plugin import Plugin, Context, ToolError, Result, Attachment

    plugin = Plugin()

    @plugin.tool(description="Greets a person by name.", timeout_secs=10)
    def hello_greet(name: str, times: int = 1, ctx: Context = None) -> str:
        ctx.progress(1, 2, "warming up")
        if not name.strip():
            raise ToolError("invalid_args", "name is empty")
        ctx.progress(2, 2)
        return " ".join([f"Hello, {name}!"] * times)

    @plugin.tool(output_schema={"type": "object"})
    def weather(city: str, unit: Literal["c", "f"] = "c", ctx: Context = None):
        """Current weather for a city."""
        if city != "Paris":
            raise ToolError("not_found", f"No such city: {city}")
        chart = ctx.data_dir / "chart.png"
        chart.write_bytes(b"png")
        return Result(text="Sunny, 21", structured={"temp": 21, "unit": unit},
                      attachments=[Attachment("chart.png", caption="Temperature", size=3),
                                   Attachment(url="https://example.com/a.mp3")])

    @plugin.tool(description="Returns a dict.")
    def as_dict(items: List[int], label: Optional[str] = None):
        return {"sum": sum(items), "label": label, "text": "héllo"}

    @plugin.tool(description="Fails with the given kind.")
    def fail(kind: str):
        raise ToolError(kind, f"failed with {kind}")

    @plugin.tool(description="Raises an unexpected exception.")
    def crash():
        print("about to crash")
        return {}["missing"]

    @plugin.tool(description="Prints everywhere it can.")
    def noisy(ctx: Context):
        print("print()")
        sys.stdout.write("sys.stdout.write\\n")
        os.write(1, b"os.write(1)\\n")
        subprocess.run(["echo", "child process"], check=True)
        return "quiet answer"

    @plugin.tool(description="Echoes its context.")
    def whoami(ctx: Context):
        return {"plugin_dir": str(ctx.plugin_dir), "data_dir": str(ctx.data_dir),
                "request_id": ctx.request_id, "session_id": ctx.session_id, "actor": ctx.actor,
                "source": ctx.source, "scope": ctx.scope}

    @plugin.tool(description="Works until cancelled.")
    def slow(ctx: Context):
        ctx.progress(0, None, "started")
        while not ctx.cancelled:
            time.sleep(0.01)
        return "stopped early"

    @plugin.tool(description="An async tool.")
    async def later(x: float):
        return Result(text=str(x * 2.5))

    @plugin.tool(description="Calls sys.exit.")
    def quits():
        sys.exit(3)

    if __name__ == "__main__":
        plugin.run()
''')

CONTEXT = {"plugin_dir": "/p", "data_dir": "/d", "request_id": "r-1", "session_id": "s-1",
           "actor": "alice", "source": "cli", "scope": "foreground"}


class PluginProcess(unittest.TestCase):
    """Runs PLUGIN as a subprocess in a fresh plugin folder."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="plughost-sdk-")
        self.addCleanup(shutil.rmtree, self.dir)
        self.data = os.path.join(self.dir, "data")
        os.mkdir(self.data)
        shutil.copy(os.path.join(HERE, "plughost_plugin.py"), self.dir)
        with open(os.path.join(self.dir, "main.py"), "w") as f:
            f.write(PLUGIN)

    def run_plugin(self, stdin, args=(), persistent=False):
        env = dict(os.environ)
        env.pop("PLUGHOST_PERSISTENT", None)
        if persistent:
            env["PLUGHOST_PERSISTENT"] = "1"
        if isinstance(stdin, dict):
            stdin = json.dumps(stdin)
        return subprocess.run([sys.executable, "main.py", *args], cwd=self.dir, env=env, timeout=30,
                              input=stdin.encode(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def call(self, tool, inp=None, context=None):
        """One per-call request; returns (response, stderr) and checks that stdout
        held exactly one line and the process exited 0."""
        request = {"tool": tool, "input": inp or {}, "context": context or {"data_dir": self.data}}
        proc = self.run_plugin(request)
        self.assertEqual(proc.returncode, 0, proc.stderr.decode())
        lines = proc.stdout.decode().splitlines()
        self.assertEqual(len(lines), 1, proc.stdout)
        return json.loads(lines[0]), proc.stderr.decode()


class PerCall(PluginProcess):
    def test_text_result_with_full_context(self):
        request = {"tool": "hello_greet", "input": {"name": "Alice", "times": 2}, "context": CONTEXT}
        proc = self.run_plugin(request)
        self.assertEqual(proc.stdout, b'{"result":"Hello, Alice! Hello, Alice!","is_error":false}\n')
        self.assertEqual(proc.returncode, 0)

    def test_request_without_context_or_input(self):
        proc = self.run_plugin('{"tool": "whoami"}')
        response = json.loads(proc.stdout)
        self.assertEqual(response["structured"]["plugin_dir"], os.path.realpath(self.dir))
        self.assertEqual(response["structured"]["data_dir"], os.path.join(os.path.realpath(self.dir), ".data"))
        self.assertTrue(os.path.isdir(os.path.join(self.dir, ".data")))
        self.assertIsNone(response["structured"]["request_id"])

    def test_context_fields(self):
        response, _ = self.call("whoami", context=CONTEXT)
        self.assertEqual(response["structured"], {**CONTEXT, "plugin_dir": "/p", "data_dir": "/d"})

    def test_pretty_printed_request(self):
        request = json.dumps({"tool": "hello_greet", "input": {"name": "Bob"}, "context": {}}, indent=4)
        self.assertGreater(request.count("\n"), 3)
        proc = self.run_plugin(request + "\n")
        self.assertEqual(json.loads(proc.stdout), {"result": "Hello, Bob!", "is_error": False})

    def test_structured_and_attachments(self):
        response, _ = self.call("weather", {"city": "Paris", "unit": "f"})
        self.assertEqual(response, {
            "result": "Sunny, 21", "is_error": False, "structured": {"temp": 21, "unit": "f"},
            "attachments": [
                {"media_type": "image", "mime_type": "image/png", "path": "chart.png",
                 "caption": "Temperature", "size": 3},
                {"media_type": "audio", "mime_type": "audio/mpeg", "url": "https://example.com/a.mp3"},
            ]})
        self.assertTrue(os.path.exists(os.path.join(self.data, "chart.png")))

    def test_dict_result_is_compact_text_and_structured(self):
        response, _ = self.call("as_dict", {"items": [1, 2, 3.0]})
        self.assertEqual(response["result"], '{"sum":6,"label":null,"text":"héllo"}')
        self.assertEqual(response["structured"], {"sum": 6, "label": None, "text": "héllo"})

    def test_tool_error_kinds(self):
        for kind in ("invalid_args", "not_found", "not_allowed", "failed", "timeout"):
            response, _ = self.call("fail", {"kind": kind})
            self.assertEqual(response, {"result": f"failed with {kind}", "is_error": True,
                                        "error": {"kind": kind, "message": f"failed with {kind}"}})
        response, _ = self.call("weather", {"city": "Atlantis"})
        self.assertEqual(response["error"], {"kind": "not_found", "message": "No such city: Atlantis"})

    def test_unknown_error_kind_is_a_programming_error(self):
        response, stderr = self.call("fail", {"kind": "oops"})
        self.assertEqual(response["error"]["kind"], "failed")
        self.assertIn("ValueError: unknown error kind 'oops'", response["result"])

    def test_unexpected_exception(self):
        proc = self.run_plugin({"tool": "crash", "input": {}})
        self.assertEqual(proc.returncode, 0)
        self.assertEqual(proc.stdout, b'{"result":"KeyError: \'missing\'","is_error":true,'
                                      b'"error":{"kind":"failed","message":"KeyError: \'missing\'"}}\n')
        stderr = proc.stderr.decode()
        self.assertIn("Traceback (most recent call last)", stderr)
        self.assertIn("about to crash", stderr)

    def test_sys_exit_in_a_tool_still_answers(self):
        response, _ = self.call("quits")
        self.assertEqual(response["error"], {"kind": "failed", "message": "SystemExit: 3"})

    def test_progress_lines_on_stderr(self):
        response, stderr = self.call("hello_greet", {"name": "Al"})
        self.assertEqual(response["result"], "Hello, Al!")
        progress = [line for line in stderr.splitlines() if line.startswith("::progress::")]
        self.assertEqual(progress, ["::progress:: 1/2 warming up", "::progress:: 2/2"])

    def test_stdout_is_protected(self):
        proc = self.run_plugin({"tool": "noisy"})
        self.assertEqual(proc.stdout, b'{"result":"quiet answer","is_error":false}\n')
        for text in ("print()", "sys.stdout.write", "os.write(1)", "child process"):
            self.assertIn(text, proc.stderr.decode())

    def test_invalid_arguments(self):
        response, _ = self.call("hello_greet", {"nme": "Al", "times": "2"})
        self.assertEqual(response["error"]["kind"], "invalid_args")
        self.assertEqual(response["result"], 'Invalid input for hello_greet: missing required argument "name"; '
                                             'unknown argument "nme"; "times" must be an integer, not a string '
                                             '(it takes: name, times).')
        response, _ = self.call("weather", {"city": "Paris", "unit": "k"})
        self.assertIn('"unit" must be one of "c", "f"', response["result"])
        response, _ = self.call("as_dict", {"items": [1, "x"]})
        self.assertIn('"items[1]" must be an integer, not a string', response["result"])

    def test_unknown_tool(self):
        response, _ = self.call("nope")
        self.assertEqual(response["error"]["kind"], "not_found")
        self.assertIn('Unknown tool "nope"; this plugin provides: hello_greet, weather, as_dict', response["result"])

    def test_bad_requests(self):
        for stdin, needle in (("not json", "not JSON"), ("[1, 2]", "expected a JSON object"),
                              ('{"tool": 3}', 'string "tool"'), ("", "stdin is empty"),
                              ('{"tool": "whoami", "input": []}', '"input" and "context" must be')):
            proc = self.run_plugin(stdin)
            self.assertEqual(proc.returncode, 0)
            response = json.loads(proc.stdout)
            self.assertEqual(response["error"]["kind"], "invalid_args", stdin)
            self.assertIn(needle, response["result"])

    def test_async_tool(self):
        response, _ = self.call("later", {"x": 2})
        self.assertEqual(response["result"], "5.0")

    def test_manifest_tools(self):
        proc = self.run_plugin("", args=["--manifest-tools"])
        self.assertEqual(proc.returncode, 0)
        tools = json.loads(proc.stdout)
        self.assertEqual([t["name"] for t in tools][:3], ["hello_greet", "weather", "as_dict"])
        self.assertEqual(tools[0], {
            "name": "hello_greet", "description": "Greets a person by name.",
            "input_schema": {"type": "object",
                             "properties": {"name": {"type": "string"}, "times": {"type": "integer", "default": 1}},
                             "required": ["name"], "additionalProperties": False},
            "timeout_secs": 10})
        self.assertEqual(tools[1]["description"], "Current weather for a city.")
        self.assertEqual(tools[1]["output_schema"], {"type": "object"})
        self.assertEqual(tools[1]["input_schema"]["properties"]["unit"],
                         {"type": "string", "enum": ["c", "f"], "default": "c"})
        self.assertTrue(proc.stdout.startswith(b'[\n  {\n    "name"'))  # pretty, for pasting into plugin.json


class Persistent(PluginProcess):
    def test_two_requests_and_a_bad_line_between(self):
        stdin = "\n".join([
            json.dumps({"tool": "hello_greet", "input": {"name": "A"}, "context": CONTEXT}),
            "{not json",
            "",
            json.dumps({"tool": "crash", "input": {}, "context": CONTEXT}),
            json.dumps({"tool": "noisy", "input": {}, "context": CONTEXT}),
            json.dumps({"tool": "hello_greet", "input": {"name": "B"}, "context": CONTEXT}),
        ]) + "\n"
        proc = self.run_plugin(stdin, persistent=True)
        self.assertEqual(proc.returncode, 0)
        lines = proc.stdout.decode().split("\n")
        self.assertEqual(lines[-1], "")  # every response ends with a newline
        responses = [json.loads(line) for line in lines[:-1]]
        self.assertEqual(len(responses), 5)
        self.assertEqual(responses[0]["result"], "Hello, A!")
        self.assertEqual(responses[1]["error"]["kind"], "invalid_args")
        self.assertEqual(responses[2]["error"]["kind"], "failed")
        self.assertEqual(responses[3]["result"], "quiet answer")
        self.assertEqual(responses[4]["result"], "Hello, B!")

    def test_one_at_a_time_over_an_open_pipe(self):
        proc = self.start(persistent=True)
        for name in ("A", "B", "C"):
            proc.stdin.write(json.dumps({"tool": "hello_greet", "input": {"name": name}}).encode() + b"\n")
            proc.stdin.flush()
            self.assertEqual(json.loads(proc.stdout.readline())["result"], f"Hello, {name}!")
        proc.stdin.close()
        self.assertEqual(proc.wait(timeout=10), 0)

    def test_sigterm_while_busy_answers_then_exits(self):
        proc = self.start(persistent=True)
        proc.stdin.write(b'{"tool":"slow","input":{}}\n')
        proc.stdin.flush()
        self.assertEqual(self.read_progress(proc), "::progress:: 0 started")
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(json.loads(proc.stdout.readline())["result"], "stopped early")
        self.assertEqual(proc.wait(timeout=10), 0)  # stdin still open: it left on its own

    def test_sigterm_while_idle_exits(self):
        proc = self.start(persistent=True)
        proc.stdin.write(b'{"tool":"hello_greet","input":{"name":"A"}}\n')
        proc.stdin.flush()
        proc.stdout.readline()
        time.sleep(0.2)  # let it go back to waiting for the next line
        proc.send_signal(signal.SIGTERM)
        # 143 when idle; 0 when the signal won the race with the end of the
        # previous answer (then it counts as arriving during that call).
        self.assertIn(proc.wait(timeout=10), (128 + signal.SIGTERM, 0))
        self.assertEqual(proc.stdout.read(), b"")

    def start(self, persistent):
        env = dict(os.environ, PLUGHOST_PERSISTENT="1" if persistent else "0")
        proc = subprocess.Popen([sys.executable, "main.py"], cwd=self.dir, env=env, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.addCleanup(lambda: (proc.poll() is None and proc.kill(), proc.wait(),
                                 [f.close() for f in (proc.stdin, proc.stdout, proc.stderr) if not f.closed]))
        return proc

    @staticmethod
    def read_progress(proc):
        while True:
            line = proc.stderr.readline().decode()
            if not line or line.startswith("::progress::"):
                return line.rstrip("\n")


class InProcess(unittest.TestCase):
    """The schema derivation and checks, without a subprocess."""

    def test_schema_from_type_hints(self):
        from typing import Any, Dict, List, Literal, Optional, Union
        plugin = Plugin()

        @plugin.tool(name="all.types-1")
        def f(s: str, i: int, n: float, b: bool, l: List[str], bare: list, d: Dict[str, int], o: dict,
              opt: Optional[int], lit: Literal["a", "b"], mixed: Literal[1, "x"], u: Union[int, str],
              anything: Any, untyped,
              dflt: str = "x", none: str = None, ctx=None, **more):
            """First line.

                Indented detail."""

        spec = plugin.manifest_tools()[0]
        self.assertEqual(spec["name"], "all.types-1")
        self.assertEqual(spec["description"], "First line.\n\nIndented detail.")
        schema = spec["input_schema"]
        self.assertEqual(schema["properties"], {
            "s": {"type": "string"}, "i": {"type": "integer"}, "n": {"type": "number"},
            "b": {"type": "boolean"}, "l": {"type": "array", "items": {"type": "string"}},
            "bare": {"type": "array"}, "d": {"type": "object", "additionalProperties": {"type": "integer"}},
            "o": {"type": "object"}, "opt": {"type": ["integer", "null"]},
            "lit": {"type": "string", "enum": ["a", "b"]}, "mixed": {"enum": [1, "x"]},
            "u": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
            "anything": {}, "untyped": {}, "dflt": {"type": "string", "default": "x"},
            "none": {"type": ["string", "null"]},
        })
        self.assertEqual(schema["required"], ["s", "i", "n", "b", "l", "bare", "d", "o", "opt", "lit", "mixed",
                                              "u", "anything", "untyped"])
        self.assertIs(schema["additionalProperties"], True)  # **more

    def test_annotated_adds_description_and_keywords(self):
        if sys.version_info < (3, 9):
            self.skipTest("typing.Annotated needs Python 3.9")
        from typing import Annotated
        plugin = Plugin()

        @plugin.tool(description="d")
        def f(name: Annotated[str, "Who to greet", {"minLength": 1}]):
            pass

        self.assertEqual(plugin.manifest_tools()[0]["input_schema"]["properties"],
                         {"name": {"type": "string", "description": "Who to greet", "minLength": 1}})

    def test_pep604_and_builtin_generics(self):
        if sys.version_info < (3, 10):
            self.skipTest("needs Python 3.10")
        plugin = Plugin()
        namespace = {"plugin": plugin}
        exec("@plugin.tool(description='d')\ndef g(a: list[int], b: str | None = None): pass", namespace)
        props = plugin.manifest_tools()[0]["input_schema"]["properties"]
        self.assertEqual(props, {"a": {"type": "array", "items": {"type": "integer"}},
                                 "b": {"type": ["string", "null"]}})

    def test_string_annotations_and_context_by_type(self):
        plugin = Plugin()
        namespace = {"plugin": plugin}
        exec("from __future__ import annotations\nfrom plughost_plugin import Context\n"
             "@plugin.tool(description='d')\ndef h(x: int, c: Context): return c.source", namespace)
        spec = plugin.manifest_tools()[0]
        self.assertEqual(spec["input_schema"]["properties"], {"x": {"type": "integer"}})
        response = plugin.call({"tool": "h", "input": {"x": 1}, "context": {"source": "mcp"}})
        self.assertEqual(response, {"result": "mcp", "is_error": False})

    def test_explicit_input_schema(self):
        plugin = Plugin()
        schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}

        @plugin.tool(description="d", input_schema=schema)
        def search(**input):
            return sorted(input)

        self.assertIs(plugin.manifest_tools()[0]["input_schema"], schema)
        self.assertEqual(plugin.call({"tool": "search", "input": {"q": "x", "extra": 1}})["structured"],
                         ["extra", "q"])
        self.assertIn('missing required argument "q"', plugin.call({"tool": "search", "input": {}})["result"])
        with self.assertRaises(ValueError):
            plugin.tool(description="d", input_schema={"type": "string"})(lambda: None)

    def test_registration_errors(self):
        plugin = Plugin()
        for bad in ("", "a b", "x" * 65, "é"):
            with self.assertRaises(ValueError):
                plugin.tool(name=bad, description="d")(lambda: None)
        with self.assertRaises(ValueError):  # no description
            plugin.tool(lambda: None)
        with self.assertRaises(TypeError):  # not expressible as JSON Schema
            @plugin.tool(description="d")
            def t(when: complex): pass
        with self.assertRaises(TypeError):
            @plugin.tool(description="d")
            def u(*args): pass
        plugin.tool(name="dup", description="d")(lambda: None)
        with self.assertRaises(ValueError):
            plugin.tool(name="dup", description="d")(lambda: None)

    def test_tool_error_checks_kind(self):
        self.assertEqual(ToolError("timeout", "slow").kind, "timeout")
        with self.assertRaises(ValueError):
            ToolError("nope", "x")

    def test_coercion_and_enums(self):
        plugin = Plugin()

        @plugin.tool(description="d")
        def t(i: int, flag: bool = False):
            return [type(i).__name__, i, flag]

        self.assertEqual(plugin.call({"tool": "t", "input": {"i": 2.0}})["structured"], ["int", 2, False])
        self.assertIn('"i" must be an integer, not a number', plugin.call({"tool": "t", "input": {"i": 2.5}})["result"])
        self.assertIn('"i" must be an integer, not true or false',
                      plugin.call({"tool": "t", "input": {"i": True}})["result"])
        self.assertIn('"flag" must be true or false, not an integer',
                      plugin.call({"tool": "t", "input": {"i": 1, "flag": 1}})["result"])

    def test_result_shapes(self):
        plugin = Plugin()
        plugin.tool(name="none", description="d")(lambda: None)
        plugin.tool(name="err", description="d")(lambda: Result("partial", is_error=True))
        plugin.tool(name="nan", description="d")(lambda: float("nan"))
        self.assertEqual(plugin.call({"tool": "none"}), {"result": "", "is_error": False})
        self.assertEqual(plugin.call({"tool": "err"}), {"result": "partial", "is_error": True})
        import contextlib
        import io
        with contextlib.redirect_stderr(io.StringIO()) as err:  # the traceback goes to stderr
            self.assertEqual(plugin.call({"tool": "nan"})["error"]["kind"], "failed")
        self.assertIn("Out of range float values", err.getvalue())

    def test_attachment(self):
        self.assertEqual(Attachment("out/a.pdf").to_json(),
                         {"media_type": "file", "mime_type": "application/pdf", "path": "out/a.pdf"})
        self.assertEqual(Attachment(url="https://x/v", media_type="video", mime_type="video/mp4").to_json(),
                         {"media_type": "video", "mime_type": "video/mp4", "url": "https://x/v"})
        with self.assertRaises(ValueError):
            Attachment()
        with self.assertRaises(ValueError):
            Attachment("a", url="b")
        with self.assertRaises(ValueError):
            Attachment("a", media_type="picture")

    def test_progress_format(self):
        import io
        ctx, err = Context({}), io.StringIO()
        old, sys.stderr = sys.stderr, err
        try:
            ctx.progress(3, 10, "fetching page 3")
            ctx.progress(40.0, 100)
            ctx.progress(2.5, message="two\nlines")
        finally:
            sys.stderr = old
        self.assertEqual(err.getvalue(), "::progress:: 3/10 fetching page 3\n::progress:: 40/100\n"
                                         "::progress:: 2.5 two lines\n")

    def test_trace_context(self):
        parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        ctx = Context({"traceparent": parent, "tracestate": "rojo=1"})
        self.assertEqual((ctx.traceparent, ctx.tracestate), (parent, "rojo=1"))
        self.assertEqual(ctx.trace_carrier(), {"traceparent": parent, "tracestate": "rojo=1"})
        saved = {k: os.environ.pop(k, None) for k in ("TRACEPARENT", "TRACESTATE")}
        try:
            self.assertEqual(Context({}).trace_carrier(), {})
            os.environ["TRACEPARENT"], os.environ["TRACESTATE"] = parent, "congo=2"
            ctx = Context({})  # a process started for one call has it in its environment
            self.assertEqual(ctx.trace_carrier(), {"traceparent": parent, "tracestate": "congo=2"})
            # The request's context wins over the environment, tracestate with it.
            other = "00-11111111111111111111111111111111-2222222222222222-00"
            self.assertEqual(Context({"traceparent": other}).trace_carrier(), {"traceparent": other})
        finally:
            for k, v in saved.items():
                os.environ.pop(k, None)
                if v is not None:
                    os.environ[k] = v


if __name__ == "__main__":
    unittest.main()
