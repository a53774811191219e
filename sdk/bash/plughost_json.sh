# json.sh - a small, strict JSON reader/writer in pure bash (no jq, no python),
# plus the plughost request/response helpers. Sourced by main.sh.
#
# After `json_parse "$text"`, every value in the document is recorded in
# JSON_TYPE (object/array/string/number/true/false/null) and, for scalars, its
# decoded value in JSON_VAL. Both are keyed by a path built from the root "$"
# plus "/<byte length>:<key>" per object key and "[<i>]" per array index, so
# keys containing any character (even "/" or ":") can never collide.
# Use the helpers instead of building paths by hand:
#   json_type input name   -> REPLY=string  (or "" when absent)
#   json_str  input name   -> REPLY=<decoded string value>

LC_ALL=C # parse bytes, not characters: UTF-8 passes through untouched

declare -A JSON_TYPE=() JSON_VAL=()
_J='' _P=0 _JSON_S=''
_JSON_MAX_DEPTH=64
_JSON_CTL=$'[\x01-\x1f]'
_JSON_NUM_RE='^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?'

json_parse() { # $1 = text; returns 1 unless it is exactly one valid JSON value (max 64 levels deep)
  _J=$1 _P=0
  JSON_TYPE=() JSON_VAL=()
  _json_value '$' 0 || return 1
  _json_ws
  ((_P == ${#_J})) # nothing but whitespace may follow
}

_json_ws() {
  while [[ ${_J:_P:1} == [$' \t\n\r'] ]]; do ((++_P)); done
}

_json_value() { # $1 = path, $2 = depth
  local path=$1 depth=$2 c i key
  ((depth <= _JSON_MAX_DEPTH)) || return 1
  _json_ws
  c=${_J:_P:1}
  case $c in
    '{')
      ((++_P)); JSON_TYPE[$path]=object; _json_ws
      if [[ ${_J:_P:1} == '}' ]]; then ((++_P)); return 0; fi
      while :; do
        _json_ws
        _json_string || return 1
        key=$_JSON_S
        _json_ws
        [[ ${_J:_P:1} == : ]] || return 1
        ((++_P))
        _json_value "$path/${#key}:$key" $((depth + 1)) || return 1
        _json_ws
        c=${_J:_P:1}; ((++_P))
        [[ $c == '}' ]] && return 0
        [[ $c == , ]] || return 1
      done ;;
    '[')
      ((++_P)); JSON_TYPE[$path]=array; _json_ws
      if [[ ${_J:_P:1} == ']' ]]; then ((++_P)); return 0; fi
      for ((i = 0; ; i++)); do
        _json_value "$path[$i]" $((depth + 1)) || return 1
        _json_ws
        c=${_J:_P:1}; ((++_P))
        [[ $c == ']' ]] && return 0
        [[ $c == , ]] || return 1
      done ;;
    '"')
      _json_string || return 1
      JSON_TYPE[$path]=string JSON_VAL[$path]=$_JSON_S ;;
    t|f|n)
      for key in true false null; do
        if [[ ${_J:_P:${#key}} == "$key" ]]; then
          ((_P += ${#key})); JSON_TYPE[$path]=$key JSON_VAL[$path]=$key; return 0
        fi
      done
      return 1 ;;
    -|[0-9])
      [[ ${_J:_P} =~ $_JSON_NUM_RE ]] || return 1
      ((_P += ${#BASH_REMATCH[0]}))
      JSON_TYPE[$path]=number JSON_VAL[$path]=${BASH_REMATCH[0]} ;;
    *) return 1 ;;
  esac
}

_json_string() { # parses the string token at _P into _JSON_S (decoded)
  [[ ${_J:_P:1} == '"' ]] || return 1
  local rest=${_J:_P+1} out='' chunk c hex cp lo
  ((++_P))
  while :; do
    chunk=${rest%%[\"\\]*} # everything before the next quote or backslash
    [[ $chunk == *$_JSON_CTL* ]] && return 1 # raw control characters are invalid
    out+=$chunk
    rest=${rest:${#chunk}}
    ((_P += ${#chunk} + 1))
    case ${rest:0:1} in
      '"') break ;;
      '\') ;;
      *) return 1 ;; # unterminated string
    esac
    c=${rest:1:1} rest=${rest:2}
    ((++_P))
    case $c in
      '"'|'\'|/) out+=$c ;;
      b) out+=$'\b' ;; f) out+=$'\f' ;; n) out+=$'\n' ;;
      r) out+=$'\r' ;; t) out+=$'\t' ;;
      u)
        hex=${rest:0:4}
        [[ $hex == [0-9a-fA-F][0-9a-fA-F][0-9a-fA-F][0-9a-fA-F] ]] || return 1
        rest=${rest:4} cp=$((16#$hex))
        ((_P += 4))
        if ((cp >= 0xD800 && cp <= 0xDBFF)); then # high surrogate: needs its pair
          hex=${rest:2:4}
          if [[ ${rest:0:2} == '\u' && $hex == [dD][c-fC-F][0-9a-fA-F][0-9a-fA-F] ]]; then
            lo=$((16#$hex)) rest=${rest:6}
            ((_P += 6))
            cp=$((0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00)))
          else
            cp=0xFFFD # lone surrogate: not representable in UTF-8
          fi
        elif ((cp >= 0xDC00 && cp <= 0xDFFF)); then
          cp=0xFFFD
        fi
        ((cp == 0)) && cp=0xFFFD # bash strings cannot hold NUL
        _json_utf8 "$cp"; out+=$REPLY ;;
      *) return 1 ;; # invalid escape
    esac
  done
  _JSON_S=$out
}

_json_utf8() { # code point $1 -> UTF-8 bytes in REPLY (printf builtin, no subshell)
  local cp=$1 fmt
  if ((cp < 0x80)); then
    printf -v fmt '\\x%02x' "$cp"
  elif ((cp < 0x800)); then
    printf -v fmt '\\x%02x\\x%02x' $((0xC0 | cp >> 6)) $((0x80 | (cp & 0x3F)))
  elif ((cp < 0x10000)); then
    printf -v fmt '\\x%02x\\x%02x\\x%02x' $((0xE0 | cp >> 12)) \
      $((0x80 | (cp >> 6 & 0x3F))) $((0x80 | (cp & 0x3F)))
  else
    printf -v fmt '\\x%02x\\x%02x\\x%02x\\x%02x' $((0xF0 | cp >> 18)) \
      $((0x80 | (cp >> 12 & 0x3F))) $((0x80 | (cp >> 6 & 0x3F))) $((0x80 | (cp & 0x3F)))
  fi
  printf -v REPLY "$fmt"
}

_json_path() { # keys... -> REPLY = path as stored in JSON_TYPE / JSON_VAL
  local k
  REPLY='$'
  for k; do REPLY+="/${#k}:$k"; done
}

json_type() { _json_path "$@"; REPLY=${JSON_TYPE[$REPLY]-}; }
json_str() { _json_path "$@"; REPLY=${JSON_VAL[$REPLY]-}; }

json_escape() { # $1 -> REPLY = JSON string literal, quotes included
  local s=$1 i hex c
  s=${s//'\'/'\\'}
  s=${s//'"'/'\"'}
  s=${s//$'\n'/'\n'}
  s=${s//$'\r'/'\r'}
  s=${s//$'\t'/'\t'}
  if [[ $s == *$_JSON_CTL* ]]; then # rarer control characters become \u00XX
    for ((i = 1; i < 32; i++)); do
      printf -v hex '%02x' "$i"
      printf -v c "\\x$hex"
      s=${s//"$c"/"\\u00$hex"}
    done
  fi
  REPLY="\"$s\""
}

# ---- plughost protocol ------------------------------------------------------

reply() { # $1 = text the agent sees, $2 = is_error (default false), $3 = raw JSON for "structured"
  json_escape "$1"
  if [[ -n ${3-} ]]; then
    printf '{"result":%s,"is_error":%s,"structured":%s}\n' "$REPLY" "${2:-false}" "$3"
  else
    printf '{"result":%s,"is_error":%s}\n' "$REPLY" "${2:-false}"
  fi
}

reply_error() { reply "$1" true; }

# Reads the request from stdin and sets TOOL. A request that is not valid JSON
# (or not shaped like a request) is a protocol error: message on stderr, exit 2.
read_request() {
  local name=$1 text
  IFS= read -r -d '' text # whole of stdin (read stops at EOF, status ignored)
  if ! json_parse "$text"; then
    printf '%s: invalid request: stdin is not a single valid JSON value\n' "$name" >&2
    exit 2
  fi
  json_type; [[ $REPLY == object ]] || { printf '%s: invalid request: not a JSON object\n' "$name" >&2; exit 2; }
  json_type tool; [[ $REPLY == string ]] || { printf '%s: invalid request: "tool" must be a string\n' "$name" >&2; exit 2; }
  json_type input; [[ $REPLY == object || -z $REPLY ]] || { printf '%s: invalid request: "input" must be an object\n' "$name" >&2; exit 2; }
  json_str tool; TOOL=$REPLY
}
