#!/usr/bin/env bash
# hello-world: the smallest useful plughost plugin, in pure bash (no jq or python).
# Try it:  echo '{"tool":"hello_greet","input":{"name":"Alice"},"context":{}}' | ./main.sh
set -u

here=${BASH_SOURCE[0]%/*}
[[ $here == "${BASH_SOURCE[0]}" ]] && here=.
# shellcheck source=json.sh
source "$here/json.sh"

read_request hello-world

case $TOOL in
  hello_greet)
    json_type input name
    if [[ $REPLY != string ]]; then
      reply_error 'Missing "name": pass the name of the person to greet as a string.'
      exit 0
    fi
    json_str input name
    if [[ -z ${REPLY//[[:space:]]/} ]]; then
      reply_error '"name" is empty: pass the name of the person to greet.'
      exit 0
    fi
    reply "Hello, $REPLY!"
    ;;
  *)
    json_escape "$TOOL"
    reply_error "Unknown tool $REPLY: hello-world only provides hello_greet."
    ;;
esac
