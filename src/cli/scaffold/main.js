#!/usr/bin/env node
// {{name}}: a plughost plugin. Try it by hand:
//   echo '{"tool":"{{tool}}","input":{"text":"hello","shout":true},"context":{}}' | ./main.js
'use strict';

function reply(result, isError = false) {
  process.stdout.write(JSON.stringify({ result, is_error: isError }) + '\n');
}

// One line on stderr; plughost turns it into progress. Harmless when run by hand.
function progress(done, total, message = '') {
  process.stderr.write(`::progress:: ${done}/${total} ${message}\n`);
}

function {{tool}}(input) {
  let text = input.text;
  if (typeof text !== 'string' || text.trim() === '') {
    // A tool-level error: the agent sees the message and can try again.
    return reply('Pass some text that is not only spaces.', true);
  }
  progress(1, 2, 'reading input');
  if (input.shout === true) text = text.toUpperCase();
  progress(2, 2, 'done');
  reply(text);
}

let raw = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => { raw += chunk; });
process.stdin.on('end', () => {
  let request;
  try {
    request = JSON.parse(raw);
  } catch (e) {
    process.stderr.write(`{{name}}: invalid request: ${e.message}\n`);
    process.exit(2);
  }
  // request.context.data_dir is this plugin's folder for state.
  const input = request.input || {};
  if (request.tool === '{{tool}}') {{tool}}(input);
  else reply(`Unknown tool ${JSON.stringify(request.tool)}.`, true);
});
