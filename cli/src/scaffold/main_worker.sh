#!/usr/bin/env bash
# {{name}}: a persistent plughost plugin. Try it by hand:
#   echo '{"tool":"{{tool}}","input":{"text":"hello","shout":true},"context":{}}' | ./main.sh
# plughost starts it once with PLUGHOST_PERSISTENT=1 and writes one request per
# line; it answers each with one line, until stdin closes. Run by hand (without
# the variable) it answers the one request on stdin and exits.
set -u

here=${BASH_SOURCE[0]%/*}
[[ $here == "${BASH_SOURCE[0]}" ]] && here=.
# json.sh: a small JSON reader and the reply helpers (reply, reply_error).
source "$here/json.sh"

# Answers the parsed request (TOOL, and the input in json.sh's tables) with one line.
handle() {
  case $TOOL in
    {{tool}})
      json_str input text
      local text=$REPLY
      if [[ -z ${text//[[:space:]]/} ]]; then
        # A tool-level error: the agent sees the message and can try again.
        reply_error 'Pass some text that is not only spaces.'
        return
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
}

if [[ ${PLUGHOST_PERSISTENT-} == 1 ]]; then
  # A worker: every answer must be exactly one line, even for a bad request,
  # or the host replaces the worker.
  while IFS= read -r line || [[ -n $line ]]; do
    [[ -z ${line//[[:space:]]/} ]] && continue # a blank line is not a request
    if ! json_parse "$line" || { json_type tool; [[ $REPLY != string ]]; }; then
      reply_error 'Invalid request: send one JSON object with a string "tool" per line.'
      continue
    fi
    json_str tool
    TOOL=$REPLY
    handle
  done
else
  read_request {{name}} # the whole of stdin: one request, maybe over several lines
  handle
fi
