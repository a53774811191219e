#!/usr/bin/env python3
"""py-hand: the echo tool of `plughost new --lang python`, written by hand
without the SDK (as the template was before the SDK). scripts/bench compares
the two per call.

  echo '{"tool":"py_hand_echo","input":{"text":"hello","shout":true},"context":{}}' | ./main.py
"""
import json
import sys


def reply(result, is_error=False):
    print(json.dumps({"result": result, "is_error": is_error}))


def progress(done, total, message=""):
    """One line on stderr; plughost turns it into progress. Harmless when run by hand."""
    print(f"::progress:: {done}/{total} {message}", file=sys.stderr, flush=True)


def py_hand_echo(inp):
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
        print(f"py-hand: invalid request: {e}", file=sys.stderr)
        sys.exit(2)
    tool = request.get("tool")
    inp = request.get("input") or {}
    # request["context"]["data_dir"] is this plugin's folder for state.
    if tool == "py_hand_echo":
        py_hand_echo(inp)
    else:
        reply(f"Unknown tool {json.dumps(tool)}.", is_error=True)


if __name__ == "__main__":
    main()
