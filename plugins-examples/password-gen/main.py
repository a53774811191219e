#!/usr/bin/env python3
"""password-gen: cryptographically secure passwords (tool: password_generate).

A persistent plugin ("persistent": {} in plugin.json): plughost starts Python
once and sends one request per line, instead of a new interpreter per call.
plughost_plugin.py (the SDK) handles both ways of running.

Try it:
  echo '{"tool":"password_generate","input":{"length":20,"count":3},"context":{}}' | ./main.py
"""
import secrets
import string
from typing import Annotated

from plughost_plugin import Context, Plugin, ToolError

# Symbols that are safe to paste into shells, URLs-in-quotes and config files:
# no quotes, backslash, backtick or space.
SYMBOLS = "!#$%&()*+,-./:;<=>?@[]^_{|}~"

plugin = Plugin()


def generate(length, use_symbols):
    classes = [string.ascii_lowercase, string.ascii_uppercase, string.digits]
    if use_symbols:
        classes.append(SYMBOLS)
    alphabet = "".join(classes)
    while True:  # retry until every character class appears (rarely needs a 2nd try)
        password = "".join(secrets.choice(alphabet) for _ in range(length))
        if all(any(c in cls for c in password) for cls in classes):
            return password


def check_range(key, value, lo, hi):
    """plughost enforces the schema's bounds; run by hand, only the SDK's type check has run."""
    if not lo <= value <= hi:
        raise ToolError("invalid_args", f'"{key}" must be an integer from {lo} to {hi} (got {value}).')


@plugin.tool(
    description="Generates cryptographically secure random passwords, one per line. Each password contains "
    "lowercase and uppercase letters, digits and (unless symbols is false) symbols.",
    timeout_secs=10,
)
def password_generate(
    length: Annotated[int, "Characters per password", {"minimum": 8, "maximum": 128}] = 16,
    count: Annotated[int, "How many passwords to generate", {"minimum": 1, "maximum": 20}] = 1,
    symbols: Annotated[bool, "Include symbols such as !#$%&*"] = True,
    ctx: Context = None,
) -> str:
    check_range("length", length, 8, 128)
    check_range("count", count, 1, 20)
    passwords = []
    for i in range(1, count + 1):
        passwords.append(generate(length, symbols))
        if count > 1:
            ctx.progress(i, count, "passwords generated")
    return "\n".join(passwords)


if __name__ == "__main__":
    plugin.run()
