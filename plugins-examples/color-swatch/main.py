#!/usr/bin/env python3
"""color-swatch: returns an image it wrote in its data folder (tool: swatch_make).

Try it:
  echo '{"tool":"swatch_make","input":{"color":"#3366cc","size":32},"context":{}}' | ./main.py
"""
import struct
import zlib
from typing import Annotated

from plughost_plugin import Attachment, Context, Plugin, Result, ToolError

plugin = Plugin()

OUTPUT_SCHEMA = {
    "type": "object",
    "properties": {"rgb": {"type": "array", "items": {"type": "integer"}}, "size": {"type": "integer"}},
    "required": ["rgb", "size"],
}


def png(width, height, rgb):
    """A minimal PNG of one colour, with the standard library only."""
    row = b"\x00" + bytes(rgb) * width
    raw = row * height

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


@plugin.tool(
    description="Makes a square PNG filled with one colour and returns it as an image.",
    output_schema=OUTPUT_SCHEMA,
)
def swatch_make(
    color: Annotated[str, "The colour, as #RRGGBB", {"pattern": "^#[0-9a-fA-F]{6}$"}],
    size: Annotated[int, "Width and height in pixels", {"minimum": 1, "maximum": 512}] = 64,
    ctx: Context = None,
):
    # plughost enforces the pattern and bounds; run by hand, only the SDK's type check has run.
    try:
        if len(color) != 7 or not color.startswith("#"):
            raise ValueError
        rgb = [int(color[i : i + 2], 16) for i in (1, 3, 5)]
    except ValueError:
        raise ToolError("invalid_args", '"color" must look like "#3366cc".') from None
    if not 1 <= size <= 512:
        raise ToolError("invalid_args", '"size" must be an integer from 1 to 512.')
    folder = ctx.data_dir / "swatches"
    folder.mkdir(parents=True, exist_ok=True)
    name = f"{color[1:].lower()}-{size}.png"
    (folder / name).write_bytes(png(size, size, rgb))
    # A relative path is resolved against the data folder by plughost.
    return Result(
        f"A {size}x{size} swatch of {color.lower()}.",
        structured={"rgb": rgb, "size": size},
        attachments=[Attachment(f"swatches/{name}", mime_type="image/png", caption=f"{color.lower()} swatch")],
    )


if __name__ == "__main__":
    plugin.run()
