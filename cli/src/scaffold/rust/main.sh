#!/bin/sh
# {{name}}: the plugin's entrypoint runs the binary that ./build.sh puts in bin/.
case $0 in */*) here=${0%/*} ;; *) here=. ;; esac
if [ ! -x "$here/bin/{{crate}}" ]; then
  echo "{{name}} is not built yet: run ./build.sh in $here (it needs cargo)" >&2
  exit 1
fi
exec "$here/bin/{{crate}}" "$@"
