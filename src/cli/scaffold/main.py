#!/usr/bin/env python3
"""{{name}}: a plughost plugin. Try it by hand:

  echo '{"tool":"{{tool}}","input":{"text":"hello","shout":true},"context":{}}' | ./main.py
"""
import json
import sys


def reply(result, is_error=False):
    print(json.dumps({"result": result, "is_error": is_error}))


def progress(done, total, message=""):
    """One line on stderr; plughost turns it into progress. Harmless when run by hand."""
    print(f"::progress:: {done}/{total} {message}", file=sys.stderr, flush=True)


def {{tool}}(inp):
    text = inp.get("text", "")
    if not isinstance(text, str) or not text.strip():
        # A tool-level error: the agent sees the message and can try again.
        return reply("Pass some text that is not only spaces.", is_error=True)
    progress(1, 2, "reading input")
    if inp.get("shout") is True:
        text = text.upper()
    progress(2, 2, "done")
    reply(text)


def main():
    try:
        request = json.load(sys.stdin)
    except json.JSONDecodeError as e:
        print(f"{{name}}: invalid request: {e}", file=sys.stderr)
        sys.exit(2)
    tool = request.get("tool")
    inp = request.get("input") or {}
    # request["context"]["data_dir"] is this plugin's folder for state.
    if tool == "{{tool}}":
        {{tool}}(inp)
    else:
        reply(f"Unknown tool {json.dumps(tool)}.", is_error=True)


if __name__ == "__main__":
    main()
