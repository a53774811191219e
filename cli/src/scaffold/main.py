#!/usr/bin/env python3
"""{{name}}: a plughost plugin. Try it by hand:

  echo '{"tool":"{{tool}}","input":{"text":"hello","shout":true},"context":{}}' | ./main.py

plughost_plugin.py (the SDK, next to this file) reads the request, checks the
input against the tool's input_schema, and writes the answer.
`./main.py --manifest-tools` prints the "tools" array of plugin.json: paste it
there after changing a tool (`plughost validate --with-code .` checks they agree).
"""
from plughost_plugin import Context, Plugin, ToolError

plugin = Plugin()

# The input schema is written out. The SDK can derive it from type hints instead
# (`text: Annotated[str, "The text to echo", {"minLength": 1}]`), but importing
# typing adds about 4 ms to every call of a plugin that starts per call.
ECHO_INPUT = {
    "type": "object",
    "properties": {
        "text": {"type": "string", "minLength": 1, "description": "The text to echo"},
        "shout": {"type": "boolean", "description": "Echo in capitals", "default": False},
    },
    "required": ["text"],
    "additionalProperties": False,
}


@plugin.tool(description="Echoes the text back, in capitals when shout is true.", input_schema=ECHO_INPUT)
def {{tool}}(text: str, shout: bool = False, ctx: Context = None) -> str:
    if not text.strip():
        # A tool-level error with a kind: the agent sees the message and can try again.
        raise ToolError("invalid_args", "Pass some text that is not only spaces.")
    # Progress: one line on stderr that plughost forwards. Harmless when run by hand.
    ctx.progress(1, 2, "reading input")
    if shout:
        text = text.upper()
    ctx.progress(2, 2, "done")
    # ctx.data_dir is this plugin's folder for state.
    return text


if __name__ == "__main__":
    plugin.run()
