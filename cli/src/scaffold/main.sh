#!/usr/bin/env bash
# {{name}}: a plughost plugin. Try it by hand:
#   echo '{"tool":"{{tool}}","input":{"text":"hello","shout":true},"context":{}}' | ./main.sh
set -u

here=${BASH_SOURCE[0]%/*}
[[ $here == "${BASH_SOURCE[0]}" ]] && here=.
# json.sh: a small JSON reader and the reply helpers (reply, reply_error).
source "$here/json.sh"

read_request {{name}}

case $TOOL in
  {{tool}})
    json_str input text
    text=$REPLY
    if [[ -z ${text//[[:space:]]/} ]]; then
      # A tool-level error: the agent sees the message and can try again.
      reply_error 'Pass some text that is not only spaces.'
      exit 0
    fi
    # Progress: one line on stderr. Harmless when run by hand.
    echo '::progress:: 1/2 reading input' >&2
    json_type input shout
    if [[ $REPLY == true ]]; then
      text=${text^^}
    fi
    echo '::progress:: 2/2 done' >&2
    reply "$text"
    ;;
  *)
    json_escape "$TOOL"
    reply_error "Unknown tool $REPLY."
    ;;
esac
