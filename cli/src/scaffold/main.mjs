#!/usr/bin/env node
// {{name}}: a plughost plugin. Try it by hand:
//   echo '{"tool":"{{tool}}","input":{"text":"hello","shout":true},"context":{}}' | ./main.mjs
//
// plughost_plugin.mjs (the SDK, next to this file) reads the request, checks the
// input against inputSchema, and writes the answer. `./main.mjs --manifest-tools`
// prints the "tools" array of plugin.json: paste it there after changing a tool
// (`plughost validate --with-code .` checks they agree).
import { Plugin, ToolError } from './plughost_plugin.mjs';

new Plugin()
  .tool({
    name: '{{tool}}',
    description: 'Echoes the text back, in capitals when shout is true.',
    inputSchema: {
      type: 'object',
      properties: {
        text: { type: 'string', minLength: 1, description: 'The text to echo' },
        shout: { type: 'boolean', description: 'Echo in capitals', default: false },
      },
      required: ['text'],
      additionalProperties: false,
    },
    handler: ({ text, shout = false }, ctx) => {
      if (!text.trim()) {
        // A tool-level error with a kind: the agent sees the message and can try again.
        throw new ToolError('invalid_args', 'Pass some text that is not only spaces.');
      }
      // Progress: one line on stderr that plughost forwards. Harmless when run by hand.
      ctx.progress(1, 2, 'reading input');
      const out = shout ? text.toUpperCase() : text;
      ctx.progress(2, 2, 'done');
      // ctx.dataDir is this plugin's folder for state.
      return out;
    },
  })
  .run();
