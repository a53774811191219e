#!/usr/bin/env bash
# Builds {{name}} (release) and copies the binary to bin/, where main.sh runs it.
# Arguments go to `cargo build` (e.g. --offline). Build output goes to
# $CARGO_TARGET_DIR, by default a folder shared by every plugin built this way
# (outside the plugins folder, so the watcher does not see it, and the
# dependencies are compiled once).
set -euo pipefail
cd "$(dirname "$0")"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/plughost/cargo-target}
exe=$(cargo build --release --message-format=json-render-diagnostics "$@" |
  sed -n 's/^{"reason":"compiler-artifact".*"executable":"\([^"]*\)".*/\1/p' | tail -n 1)
if [[ -z $exe ]]; then
  echo "build.sh: cargo reported no executable" >&2
  exit 1
fi
mkdir -p bin
# Copy, then rename: a worker still running the old binary keeps it.
cp "$exe" bin/.{{crate}}.new
mv -f bin/.{{crate}}.new bin/{{crate}}
echo "built bin/{{crate}}" >&2
