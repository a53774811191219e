#!/usr/bin/env python3
"""color-swatch: returns an image it wrote in its data folder (tool: swatch_make).

Try it:
  echo '{"tool":"swatch_make","input":{"color":"#3366cc","size":32},"context":{}}' | ./main.py
"""
import json
import os
import struct
import sys
import zlib


def reply(result, is_error=False, **extra):
    print(json.dumps({"result": result, "is_error": is_error, **extra}))


def png(width, height, rgb):
    """A minimal PNG of one colour, with the standard library only."""
    row = b"\x00" + bytes(rgb) * width
    raw = row * height

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def data_dir(request):
    """The data folder from the request, else $PLUGHOST_DATA_DIR, else ./.data (by hand)."""
    path = (request.get("context") or {}).get("data_dir") or os.environ.get("PLUGHOST_DATA_DIR")
    if not path:
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), ".data")
    os.makedirs(path, exist_ok=True)
    return path


def swatch_make(request):
    inp = request.get("input") or {}
    color = inp.get("color", "")
    size = inp.get("size", 64)
    if not (isinstance(color, str) and len(color) == 7 and color.startswith("#")):
        return reply('"color" must look like "#3366cc".', is_error=True)
    try:
        rgb = [int(color[i : i + 2], 16) for i in (1, 3, 5)]
    except ValueError:
        return reply('"color" must look like "#3366cc".', is_error=True)
    if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= 512:
        return reply('"size" must be an integer from 1 to 512.', is_error=True)
    folder = os.path.join(data_dir(request), "swatches")
    os.makedirs(folder, exist_ok=True)
    name = f"{color[1:].lower()}-{size}.png"
    with open(os.path.join(folder, name), "wb") as f:
        f.write(png(size, size, rgb))
    # A relative path is resolved against the data folder by plughost.
    reply(
        f"A {size}x{size} swatch of {color.lower()}.",
        attachments=[{"media_type": "image", "mime_type": "image/png", "path": f"swatches/{name}", "caption": f"{color.lower()} swatch"}],
        structured={"rgb": rgb, "size": size},
    )


def main():
    try:
        request = json.load(sys.stdin)
    except json.JSONDecodeError as e:
        print(f"color-swatch: invalid request: {e}", file=sys.stderr)
        sys.exit(2)
    if request.get("tool") == "swatch_make":
        swatch_make(request)
    else:
        reply(f"Unknown tool {json.dumps(request.get('tool'))}: color-swatch only provides swatch_make.", is_error=True)


if __name__ == "__main__":
    main()
