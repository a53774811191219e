#!/usr/bin/env python3
"""note-manager: create, list and search notes (tools: note_create, note_list, note_search).

Each note is one JSON file in <data_dir>/notes/. The file name is a slug of the
title plus a random suffix, made only of [a-z0-9-], so a title can never pick
the path (no "../", no "/", no hidden files).

Try it:
  echo '{"tool":"note_create","input":{"title":"Groceries","body":"milk, eggs"},"context":{}}' | ./main.py
  echo '{"tool":"note_search","input":{"query":"MILK"},"context":{}}' | ./main.py
"""
import json
import os
import re
import secrets
import sys
import unicodedata
from datetime import datetime, timezone

MAX_TITLE = 200
MAX_BODY = 100_000
SHOWN_BODY = 2_000  # search results quote at most this much of each body


class ToolError(Exception):
    """A problem the agent can fix; reported with is_error: true."""


def reply(result, is_error=False, structured=None):
    out = {"result": result, "is_error": is_error}
    if structured is not None:
        out["structured"] = structured
    print(json.dumps(out))


def protocol_error(message):
    """A malformed request is not a tool error: explain on stderr, exit 2."""
    print(f"note-manager: invalid request: {message}", file=sys.stderr)
    sys.exit(2)


def notes_dir(context):
    """context.data_dir, else $PLUGHOST_DATA_DIR, else ./.data next to this script."""
    data = context.get("data_dir") if isinstance(context, dict) else None
    if not isinstance(data, str) or not data:
        data = os.environ.get("PLUGHOST_DATA_DIR") or os.path.join(
            os.path.dirname(os.path.abspath(__file__)), ".data")
    path = os.path.join(data, "notes")
    os.makedirs(path, exist_ok=True)
    return path


def get_text(inp, key, max_len, allow_empty=False):
    value = inp.get(key)
    if not isinstance(value, str):
        raise ToolError(f'"{key}" must be a string.')
    if not allow_empty and not value.strip():
        raise ToolError(f'"{key}" must not be empty.')
    if len(value) > max_len:
        raise ToolError(f'"{key}" is too long ({len(value)} characters, at most {max_len}).')
    return value


def slugify(title):
    """'Café: ../../etc' -> 'cafe-etc'. ASCII letters, digits and '-' only."""
    ascii_title = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_title.lower()).strip("-")
    return slug[:40].strip("-") or "note"


def load_notes(folder):
    """All readable notes, oldest first. Temp files and strays are skipped."""
    notes = []
    for name in os.listdir(folder):
        if name.startswith(".") or not name.endswith(".json"):
            continue
        try:
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                note = json.load(f)
        except (OSError, ValueError):
            continue
        if isinstance(note, dict) and isinstance(note.get("title"), str) and isinstance(note.get("body"), str):
            note["id"] = name[:-len(".json")]
            notes.append(note)
    notes.sort(key=lambda n: (str(n.get("created", "")), n["id"]))
    return notes


def note_create(inp, folder):
    title = " ".join(get_text(inp, "title", MAX_TITLE).split())  # one line, tidy spaces
    body = get_text(inp, "body", MAX_BODY, allow_empty=True)
    slug = slugify(title)
    while True:
        note_id = f"{slug}-{secrets.token_hex(4)}"
        path = os.path.join(folder, note_id + ".json")
        if not os.path.exists(path):
            break
    note = {"title": title, "body": body,
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    # Write to a hidden temp file, then rename: readers never see half a note.
    tmp = os.path.join(folder, f".{note_id}.tmp")
    try:
        with open(tmp, "x", encoding="utf-8") as f:
            json.dump(note, f, indent=2)
            f.write("\n")
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    reply(f"Created note {json.dumps(title)} (id: {note_id}).", structured={"id": note_id, **note})


def note_list(inp, folder):
    notes = load_notes(folder)
    if not notes:
        return reply("No notes yet. Create one with note_create.", structured={"notes": []})
    lines = [f"{len(notes)} note{'s' if len(notes) != 1 else ''}:"]
    for n in notes:
        lines.append(f"- {n['title']} (id: {n['id']}, created {n.get('created', '?')})")
    reply("\n".join(lines), structured={"notes": [
        {"id": n["id"], "title": n["title"], "created": n.get("created")} for n in notes]})


def note_search(inp, folder):
    query = get_text(inp, "query", MAX_TITLE).strip()
    needle = query.casefold()
    notes = load_notes(folder)
    step = max(1, len(notes) // 10)  # at most ~10 progress lines
    matches = []
    for i, n in enumerate(notes, 1):
        if needle in n["title"].casefold() or needle in n["body"].casefold():
            matches.append(n)
        if i % step == 0 or i == len(notes):
            print(f"::progress:: {i}/{len(notes)} notes searched", file=sys.stderr, flush=True)
    if not matches:
        return reply(f"No notes match {json.dumps(query)}.", structured={"notes": []})
    parts = [f"{len(matches)} note{'s match' if len(matches) != 1 else ' matches'} {json.dumps(query)}:"]
    for n in matches:
        body = n["body"]
        if len(body) > SHOWN_BODY:
            body = body[:SHOWN_BODY] + f"\n[... {len(n['body']) - SHOWN_BODY} more characters]"
        parts.append(f"## {n['title']} (id: {n['id']}, created {n.get('created', '?')})\n{body}")
    reply("\n\n".join(parts), structured={"notes": matches})


TOOLS = {"note_create": note_create, "note_list": note_list, "note_search": note_search}


def main():
    try:
        request = json.loads(sys.stdin.buffer.read())
    except ValueError as e:
        protocol_error(f"stdin is not valid JSON ({e})")
    if not isinstance(request, dict) or not isinstance(request.get("tool"), str):
        protocol_error('expected a JSON object with a string "tool"')
    inp = request.get("input")
    if inp is None:
        inp = {}
    if not isinstance(inp, dict):
        protocol_error('"input" must be an object')

    tool = TOOLS.get(request["tool"])
    if tool is None:
        return reply(f"Unknown tool {json.dumps(request['tool'])}: note-manager provides "
                     f"{', '.join(TOOLS)}.", is_error=True)
    try:
        tool(inp, notes_dir(request.get("context")))
    except ToolError as e:
        reply(str(e), is_error=True)
    except OSError as e:  # unwritable data_dir, disk full...
        reply(f"Storage error: {e}", is_error=True)


if __name__ == "__main__":
    main()
