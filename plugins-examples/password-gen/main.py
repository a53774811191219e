#!/usr/bin/env python3
"""password-gen: cryptographically secure passwords (tool: password_generate).

Try it:
  echo '{"tool":"password_generate","input":{"length":20,"count":3},"context":{}}' | ./main.py
"""
import json
import secrets
import string
import sys

# Symbols that are safe to paste into shells, URLs-in-quotes and config files:
# no quotes, backslash, backtick or space.
SYMBOLS = "!#$%&()*+,-./:;<=>?@[]^_{|}~"


def reply(result, is_error=False):
    print(json.dumps({"result": result, "is_error": is_error}))


def protocol_error(message):
    """A malformed request is not a tool error: explain on stderr, exit 2."""
    print(f"password-gen: invalid request: {message}", file=sys.stderr)
    sys.exit(2)


def get_int(inp, key, default, lo, hi):
    value = inp.get(key, default)
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # JSON Schema counts 16.0 as an integer too
    # bool is a subclass of int in Python: reject true/false explicitly.
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ValueError(f'"{key}" must be an integer from {lo} to {hi} (got {json.dumps(value)}).')
    return value


def generate(length, use_symbols):
    classes = [string.ascii_lowercase, string.ascii_uppercase, string.digits]
    if use_symbols:
        classes.append(SYMBOLS)
    alphabet = "".join(classes)
    while True:  # retry until every character class appears (rarely needs a 2nd try)
        password = "".join(secrets.choice(alphabet) for _ in range(length))
        if all(any(c in cls for c in password) for cls in classes):
            return password


def password_generate(inp):
    try:
        length = get_int(inp, "length", 16, 8, 128)
        count = get_int(inp, "count", 1, 1, 20)
        use_symbols = inp.get("symbols", True)
        if not isinstance(use_symbols, bool):
            raise ValueError('"symbols" must be true or false.')
    except ValueError as e:
        return reply(str(e), is_error=True)
    passwords = []
    for i in range(1, count + 1):
        passwords.append(generate(length, use_symbols))
        if count > 1:  # progress lines go to stderr; plughost forwards them
            print(f"::progress:: {i}/{count} passwords generated", file=sys.stderr, flush=True)
    reply("\n".join(passwords))


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

    if request["tool"] == "password_generate":
        password_generate(inp)
    else:
        reply(f"Unknown tool {json.dumps(request['tool'])}: password-gen only provides password_generate.",
              is_error=True)


if __name__ == "__main__":
    main()
