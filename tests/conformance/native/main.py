#!/usr/bin/env python3
"""The native (stdio-json) conformance fixture: one request on stdin, one
response on stdout, progress as `::progress::` lines on stderr."""
import json
import sys
import time

PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8"
       "z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA="

tool = json.load(sys.stdin)["tool"]
if tool == "test_simple_text":
    answer = {"result": "This is a simple text response for testing."}
elif tool == "test_image_content":
    answer = {"result": "An image.", "attachments": [
        {"media_type": "image", "mime_type": "image/png", "data": PNG}]}
elif tool == "test_audio_content":
    answer = {"result": "A sound.", "attachments": [
        {"media_type": "audio", "mime_type": "audio/wav", "data": WAV}]}
elif tool == "test_error_handling":
    answer = {"is_error": True, "result": "This tool always fails.",
              "error": {"kind": "failed", "message": "This tool always fails."}}
elif tool == "test_tool_with_progress":
    for step in (0, 50, 100):
        print(f"::progress:: {step}/100 step", file=sys.stderr, flush=True)
        time.sleep(0.05)
    answer = {"result": "Progress reported."}
else:
    answer = {"is_error": True, "result": f"unknown tool {tool}"}
print(json.dumps(answer))
