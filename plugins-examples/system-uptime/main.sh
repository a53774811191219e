#!/usr/bin/env bash
# system-uptime: reports how long this (Linux) machine has been up and its load
# average, read straight from /proc. Pure bash, no external commands.
# Try it:  echo '{"tool":"system_uptime","input":{},"context":{}}' | ./main.sh
set -u

here=${BASH_SOURCE[0]%/*}
[[ $here == "${BASH_SOURCE[0]}" ]] && here=.
# shellcheck source=json.sh
source "$here/json.sh"

read_request system-uptime

if [[ $TOOL != system_uptime ]]; then
  json_escape "$TOOL"
  reply_error "Unknown tool $REPLY: system-uptime only provides system_uptime."
  exit 0
fi

# /proc/uptime: "<seconds up> <idle seconds>"; /proc/loadavg: "<1m> <5m> <15m> ..."
if ! { read -r up _ </proc/uptime && read -r l1 l5 l15 _ </proc/loadavg; } 2>/dev/null; then
  reply_error "Cannot read /proc/uptime or /proc/loadavg: this tool only works on Linux."
  exit 0
fi
num='^[0-9]+(\.[0-9]+)?$'
if ! [[ $up =~ $num && $l1 =~ $num && $l5 =~ $num && $l15 =~ $num ]]; then
  reply_error "Unexpected contents in /proc/uptime or /proc/loadavg."
  exit 0
fi

secs=${up%%.*}
days=$((secs / 86400)) hours=$((secs % 86400 / 3600)) mins=$((secs % 3600 / 60))
text='up '
if ((days == 1)); then text+='1 day, '; elif ((days > 1)); then text+="$days days, "; fi
if ((hours > 0)); then printf -v hm '%d:%02d' "$hours" "$mins"; text+=$hm; else text+="$mins min"; fi
text+="; load average $l1 $l5 $l15"

# Load values were checked against $num above, so they are valid JSON numbers.
reply "$text" false "{\"uptime_secs\":$secs,\"load\":[$l1,$l5,$l15]}"
