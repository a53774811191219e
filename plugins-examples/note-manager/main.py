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
import unicodedata
from datetime import datetime, timezone
from typing import Annotated

from plughost_plugin import Context, Plugin, Result, ToolError

MAX_TITLE = 200
MAX_BODY = 100_000
SHOWN_BODY = 2_000  # search results quote at most this much of each body

plugin = Plugin()


def notes_dir(ctx):
    """<data_dir>/notes; by hand (empty context) the SDK's data_dir is ./.data."""
    path = os.path.join(ctx.data_dir, "notes")
    os.makedirs(path, exist_ok=True)
    return path


def check_text(key, value, max_len, allow_empty=False):
    """plughost enforces the schema's lengths; run by hand, only the SDK's type check has run."""
    if not allow_empty and not value.strip():
        raise ToolError("invalid_args", f'"{key}" must not be empty.')
    if len(value) > max_len:
        raise ToolError("invalid_args", f'"{key}" is too long ({len(value)} characters, at most {max_len}).')
    return value


def storage_error(e):
    """An unwritable data_dir, a full disk...: the tool's own failure, said plainly."""
    return ToolError("failed", f"Storage error: {e}")


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


@plugin.tool(description="Creates a note with a title and a body. Returns the new note's id.", timeout_secs=10)
def note_create(
    title: Annotated[str, "Short title", {"minLength": 1, "maxLength": MAX_TITLE}],
    body: Annotated[str, "The note's text", {"maxLength": MAX_BODY}],
    ctx: Context = None,
):
    title = " ".join(check_text("title", title, MAX_TITLE).split())  # one line, tidy spaces
    body = check_text("body", body, MAX_BODY, allow_empty=True)
    try:
        folder = notes_dir(ctx)
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
    except OSError as e:
        raise storage_error(e)
    return Result(f"Created note {json.dumps(title)} (id: {note_id}).", structured={"id": note_id, **note})


@plugin.tool(
    description="Finds notes whose title or body contains the query (case-insensitive) and returns them with their text.",
    timeout_secs=30,
)
def note_search(
    query: Annotated[str, "Text to look for", {"minLength": 1, "maxLength": MAX_TITLE}],
    ctx: Context = None,
):
    query = check_text("query", query, MAX_TITLE).strip()
    needle = query.casefold()
    try:
        notes = load_notes(notes_dir(ctx))
    except OSError as e:
        raise storage_error(e)
    step = max(1, len(notes) // 10)  # at most ~10 progress lines
    matches = []
    for i, n in enumerate(notes, 1):
        if needle in n["title"].casefold() or needle in n["body"].casefold():
            matches.append(n)
        if i % step == 0 or i == len(notes):
            ctx.progress(i, len(notes), "notes searched")
    if not matches:
        return Result(f"No notes match {json.dumps(query)}.", structured={"notes": []})
    parts = [f"{len(matches)} note{'s match' if len(matches) != 1 else ' matches'} {json.dumps(query)}:"]
    for n in matches:
        body = n["body"]
        if len(body) > SHOWN_BODY:
            body = body[:SHOWN_BODY] + f"\n[... {len(n['body']) - SHOWN_BODY} more characters]"
        parts.append(f"## {n['title']} (id: {n['id']}, created {n.get('created', '?')})\n{body}")
    return Result("\n\n".join(parts), structured={"notes": matches})


@plugin.tool(description="Lists all notes (title, id and creation time), oldest first.", timeout_secs=10)
def note_list(ctx: Context = None):
    try:
        notes = load_notes(notes_dir(ctx))
    except OSError as e:
        raise storage_error(e)
    if not notes:
        return Result("No notes yet. Create one with note_create.", structured={"notes": []})
    lines = [f"{len(notes)} note{'s' if len(notes) != 1 else ''}:"]
    for n in notes:
        lines.append(f"- {n['title']} (id: {n['id']}, created {n.get('created', '?')})")
    return Result("\n".join(lines), structured={"notes": [
        {"id": n["id"], "title": n["title"], "created": n.get("created")} for n in notes]})


if __name__ == "__main__":
    plugin.run()
