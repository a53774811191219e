// Tests for plughost_plugin.mjs. Run from the repository root: node --test sdk/node/
//
// Most tests copy the SDK into a temporary plugin folder, as `plughost new`
// does, and run a small plugin as a real subprocess, the way the host runs it.

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { Context, Plugin, Result, ToolError } from './plughost_plugin.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));

const PLUGIN = `#!/usr/bin/env node
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { Plugin, ToolError, Result } from './plughost_plugin.mjs';

const plugin = new Plugin();

plugin.tool({
  name: 'hello_greet',
  description: 'Greets a person by name.',
  inputSchema: {
    type: 'object',
    properties: { name: { type: 'string' }, times: { type: 'integer', default: 1 } },
    required: ['name'],
    additionalProperties: false,
  },
  timeoutSecs: 10,
  handler: async ({ name, times = 1 }, ctx) => {
    ctx.progress(1, 2, 'warming up');
    if (!name.trim()) throw new ToolError('invalid_args', 'name is empty');
    ctx.progress(2, 2);
    return Array(times).fill(\`Hello, \${name}!\`).join(' ');
  },
});

plugin.tool({
  name: 'weather',
  description: 'Current weather for a city.',
  inputSchema: {
    type: 'object',
    properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['c', 'f'] } },
    required: ['city'],
  },
  outputSchema: { type: 'object' },
  handler: (input, ctx) => {
    if (input.city !== 'Paris') throw new ToolError('not_found', \`No such city: \${input.city}\`);
    fs.writeFileSync(path.join(ctx.dataDir, 'chart.png'), 'png');
    return new Result({
      text: 'Sunny, 21',
      structured: { temp: 21, unit: input.unit ?? 'c' },
      attachments: [
        { path: 'chart.png', caption: 'Temperature', size: 3 },
        { url: 'https://example.com/a.mp3' },
      ],
    });
  },
});

plugin.tool({
  name: 'as_object',
  description: 'Returns an object.',
  inputSchema: { type: 'object', properties: { items: { type: 'array', items: { type: 'integer' } } } },
  handler: ({ items = [] }) => ({ sum: items.reduce((a, b) => a + b, 0), text: 'héllo' }),
});

plugin.tool({
  name: 'fail',
  description: 'Fails with the given kind.',
  inputSchema: { type: 'object', properties: { kind: { type: 'string' } } },
  handler: ({ kind }) => { throw new ToolError(kind, \`failed with \${kind}\`); },
});

plugin.tool({
  name: 'crash',
  description: 'Throws unexpectedly.',
  handler: async () => {
    console.log('about to crash');
    await new Promise((r) => setTimeout(r, 5));
    return undefined.missing;
  },
});

plugin.tool({
  name: 'noisy',
  description: 'Prints everywhere it can.',
  handler: () => {
    console.log('console.log');
    console.info('console.info');
    process.stdout.write('process.stdout.write\\n');
    setInterval(() => {}, 1000); // left running: the process must still end
    return 'quiet answer';
  },
});

plugin.tool({
  name: 'whoami',
  description: 'Echoes its context.',
  handler: (input, ctx) => ({
    pluginDir: ctx.pluginDir, dataDir: ctx.dataDir, requestId: ctx.requestId ?? null,
    sessionId: ctx.sessionId ?? null, actor: ctx.actor ?? null, source: ctx.source ?? null,
    scope: ctx.scope ?? null,
  }),
});

plugin.tool({
  name: 'slow',
  description: 'Works until cancelled.',
  handler: async (input, ctx) => {
    ctx.progress(0, null, 'started');
    await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
    return 'stopped early';
  },
});

plugin.run();
`;

const CONTEXT = {
  plugin_dir: '/p', data_dir: '/d', request_id: 'r-1', session_id: 's-1',
  actor: 'alice', source: 'cli', scope: 'foreground',
};

let dir, dataDir;

before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plughost-sdk-'));
  dataDir = path.join(dir, 'data');
  fs.mkdirSync(dataDir);
  fs.copyFileSync(path.join(HERE, 'plughost_plugin.mjs'), path.join(dir, 'plughost_plugin.mjs'));
  fs.writeFileSync(path.join(dir, 'main.mjs'), PLUGIN);
});

after(() => fs.rmSync(dir, { recursive: true, force: true }));

function env(persistent) {
  const e = { ...process.env };
  delete e.PLUGHOST_PERSISTENT;
  delete e.NODE_TEST_CONTEXT; // the test runner's marker must not leak into the plugin
  if (persistent) e.PLUGHOST_PERSISTENT = '1';
  return e;
}

function runPlugin(stdin, { args = [], persistent = false } = {}) {
  const input = typeof stdin === 'string' ? stdin : JSON.stringify(stdin);
  return spawnSync(process.execPath, ['main.mjs', ...args], {
    cwd: dir, env: env(persistent), input, encoding: 'utf8', timeout: 30000,
  });
}

/** One per-call request: checks exit 0 and exactly one line on stdout. */
function call(tool, input = {}, context = { data_dir: dataDir }) {
  const proc = runPlugin({ tool, input, context });
  assert.equal(proc.status, 0, proc.stderr);
  const lines = proc.stdout.split('\n');
  assert.equal(lines.length, 2, proc.stdout);
  assert.equal(lines[1], '');
  return { response: JSON.parse(lines[0]), stderr: proc.stderr };
}

describe('per call', () => {
  test('text result with a full context', () => {
    const proc = runPlugin({ tool: 'hello_greet', input: { name: 'Alice', times: 2 }, context: CONTEXT });
    assert.equal(proc.stdout, '{"result":"Hello, Alice! Hello, Alice!","is_error":false}\n');
    assert.equal(proc.status, 0);
  });

  test('request without context or input', () => {
    const proc = runPlugin('{"tool": "whoami"}');
    const { structured } = JSON.parse(proc.stdout);
    assert.equal(structured.pluginDir, fs.realpathSync(dir));
    assert.equal(structured.dataDir, path.join(fs.realpathSync(dir), '.data'));
    assert.ok(fs.statSync(path.join(dir, '.data')).isDirectory());
    assert.equal(structured.requestId, null);
  });

  test('context fields', () => {
    const { response } = call('whoami', {}, CONTEXT);
    assert.deepEqual(response.structured, {
      pluginDir: '/p', dataDir: '/d', requestId: 'r-1', sessionId: 's-1', actor: 'alice',
      source: 'cli', scope: 'foreground',
    });
  });

  test('pretty-printed request over several lines', () => {
    const request = JSON.stringify({ tool: 'hello_greet', input: { name: 'Bob' }, context: {} }, null, 4);
    assert.ok(request.split('\n').length > 3);
    const proc = runPlugin(`${request}\n`);
    assert.deepEqual(JSON.parse(proc.stdout), { result: 'Hello, Bob!', is_error: false });
  });

  test('structured and attachments', () => {
    const { response } = call('weather', { city: 'Paris', unit: 'f' });
    assert.deepEqual(response, {
      result: 'Sunny, 21', is_error: false, structured: { temp: 21, unit: 'f' },
      attachments: [
        { media_type: 'image', mime_type: 'image/png', path: 'chart.png', caption: 'Temperature', size: 3 },
        { media_type: 'audio', mime_type: 'audio/mpeg', url: 'https://example.com/a.mp3' },
      ],
    });
    assert.equal(fs.readFileSync(path.join(dataDir, 'chart.png'), 'utf8'), 'png');
  });

  test('an object result is compact text and structured', () => {
    const { response } = call('as_object', { items: [1, 2, 3] });
    assert.equal(response.result, '{"sum":6,"text":"héllo"}');
    assert.deepEqual(response.structured, { sum: 6, text: 'héllo' });
  });

  test('ToolError kinds', () => {
    for (const kind of ['invalid_args', 'not_found', 'not_allowed', 'failed', 'timeout']) {
      const { response } = call('fail', { kind });
      assert.deepEqual(response, {
        result: `failed with ${kind}`, is_error: true, error: { kind, message: `failed with ${kind}` },
      });
    }
    const { response } = call('fail', { kind: 'oops' });
    assert.equal(response.error.kind, 'failed');
    assert.match(response.result, /^TypeError: unknown error kind "oops"/);
  });

  test('unexpected exception: failed, stack on stderr, one line on stdout', () => {
    const proc = runPlugin({ tool: 'crash' });
    assert.equal(proc.status, 0);
    const response = JSON.parse(proc.stdout);
    assert.equal(proc.stdout, `${JSON.stringify(response)}\n`);
    assert.equal(response.error.kind, 'failed');
    assert.match(response.result, /^TypeError: Cannot read properties of undefined/);
    assert.match(proc.stderr, /about to crash/);
    assert.match(proc.stderr, /at .*main\.mjs/);
  });

  test('progress lines on stderr', () => {
    const { response, stderr } = call('hello_greet', { name: 'Al' });
    assert.equal(response.result, 'Hello, Al!');
    const progress = stderr.split('\n').filter((l) => l.startsWith('::progress::'));
    assert.deepEqual(progress, ['::progress:: 1/2 warming up', '::progress:: 2/2']);
  });

  test('stdout is protected and a leftover timer does not hold the process', () => {
    const proc = runPlugin({ tool: 'noisy' });
    assert.equal(proc.stdout, '{"result":"quiet answer","is_error":false}\n');
    for (const text of ['console.log', 'console.info', 'process.stdout.write']) assert.match(proc.stderr, new RegExp(text));
    assert.equal(proc.status, 0);
  });

  test('invalid arguments', () => {
    let { response } = call('hello_greet', { nme: 'Al', times: '2' });
    assert.equal(response.error.kind, 'invalid_args');
    assert.equal(response.result, 'Invalid input for hello_greet: missing required argument "name"; ' +
      'unknown argument "nme"; "times" must be an integer, not a string (it takes: name, times).');
    ({ response } = call('weather', { city: 'Paris', unit: 'k' }));
    assert.match(response.result, /"unit" must be one of "c", "f"/);
    ({ response } = call('as_object', { items: [1, 'x'] }));
    assert.match(response.result, /"items\[1\]" must be an integer, not a string/);
  });

  test('unknown tool', () => {
    const { response } = call('nope');
    assert.equal(response.error.kind, 'not_found');
    assert.match(response.result, /^Unknown tool "nope"; this plugin provides: hello_greet, weather, as_object/);
  });

  test('bad requests', () => {
    for (const [stdin, needle] of [
      ['not json', 'not JSON'], ['[1, 2]', 'expected a JSON object'], ['{"tool": 3}', 'string "tool"'],
      ['', 'stdin is empty'], ['{"tool": "whoami", "input": []}', '"input" and "context" must be'],
    ]) {
      const proc = runPlugin(stdin);
      assert.equal(proc.status, 0);
      const response = JSON.parse(proc.stdout);
      assert.equal(response.error.kind, 'invalid_args', stdin);
      assert.ok(response.result.includes(needle), response.result);
    }
  });

  test('--manifest-tools', () => {
    const proc = runPlugin('', { args: ['--manifest-tools'] });
    assert.equal(proc.status, 0);
    const tools = JSON.parse(proc.stdout);
    assert.deepEqual(tools.map((t) => t.name).slice(0, 3), ['hello_greet', 'weather', 'as_object']);
    assert.deepEqual(tools[0], {
      name: 'hello_greet',
      description: 'Greets a person by name.',
      input_schema: {
        type: 'object',
        properties: { name: { type: 'string' }, times: { type: 'integer', default: 1 } },
        required: ['name'],
        additionalProperties: false,
      },
      timeout_secs: 10,
    });
    assert.deepEqual(tools[1].output_schema, { type: 'object' });
    assert.deepEqual(tools[4].input_schema, { type: 'object', properties: {}, additionalProperties: false });
    assert.ok(proc.stdout.startsWith('[\n  {\n    "name"'));
  });
});

/** A worker with open pipes, and a reader for its stdout and stderr lines. */
function startWorker() {
  const child = spawn(process.execPath, ['main.mjs'], { cwd: dir, env: env(true) });
  const streams = { stdout: child.stdout, stderr: child.stderr };
  const queues = {}, waiters = {};
  for (const [name, stream] of Object.entries(streams)) {
    queues[name] = [];
    waiters[name] = [];
    let pending = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk) => {
      pending += chunk;
      let nl;
      while ((nl = pending.indexOf('\n')) !== -1) {
        const line = pending.slice(0, nl);
        pending = pending.slice(nl + 1);
        if (waiters[name].length) waiters[name].shift()(line);
        else queues[name].push(line);
      }
    });
  }
  const line = (name) => (queues[name].length ? Promise.resolve(queues[name].shift())
    : new Promise((resolve) => waiters[name].push(resolve)));
  const exited = new Promise((resolve) => child.on('exit', (code, sig) => resolve(code ?? sig)));
  return { child, line, exited };
}

describe('persistent', () => {
  test('two requests and a bad line between them', () => {
    const stdin = [
      JSON.stringify({ tool: 'hello_greet', input: { name: 'A' }, context: CONTEXT }),
      '{not json',
      '',
      JSON.stringify({ tool: 'crash', input: {}, context: CONTEXT }),
      JSON.stringify({ tool: 'noisy', input: {}, context: CONTEXT }),
      JSON.stringify({ tool: 'hello_greet', input: { name: 'B' }, context: CONTEXT }),
    ].join('\n') + '\n';
    const proc = runPlugin(stdin, { persistent: true });
    assert.equal(proc.status, 0);
    const lines = proc.stdout.split('\n');
    assert.equal(lines.pop(), '');
    const responses = lines.map((l) => JSON.parse(l));
    assert.equal(responses.length, 5);
    assert.equal(responses[0].result, 'Hello, A!');
    assert.equal(responses[1].error.kind, 'invalid_args');
    assert.equal(responses[2].error.kind, 'failed');
    assert.equal(responses[3].result, 'quiet answer');
    assert.equal(responses[4].result, 'Hello, B!');
  });

  test('lines split across chunks, answered one at a time in order', async () => {
    const { child, line, exited } = startWorker();
    const req = (name) => JSON.stringify({ tool: 'hello_greet', input: { name } });
    const bytes = Buffer.from(`${req('Zoë')}\n${req('B')}\n${req('C')}`); // the last line arrives unfinished
    for (let i = 0; i < bytes.length; i += 7) {
      child.stdin.write(bytes.subarray(i, i + 7)); // cuts through the multi-byte "ë" too
      await new Promise((r) => setTimeout(r, 1));
    }
    assert.equal(JSON.parse(await line('stdout')).result, 'Hello, Zoë!');
    assert.equal(JSON.parse(await line('stdout')).result, 'Hello, B!');
    child.stdin.end('\n');
    assert.equal(JSON.parse(await line('stdout')).result, 'Hello, C!');
    assert.equal(await exited, 0);
  });

  test('SIGTERM while busy: aborts ctx.signal, answers, exits', async () => {
    const { child, line, exited } = startWorker();
    child.stdin.write('{"tool":"slow","input":{}}\n');
    let progress;
    do progress = await line('stderr'); while (!progress.startsWith('::progress::'));
    assert.equal(progress, '::progress:: 0 started');
    child.kill('SIGTERM');
    assert.equal(JSON.parse(await line('stdout')).result, 'stopped early');
    assert.equal(await exited, 0); // stdin still open: it left on its own
  });

  test('SIGTERM while idle exits', async () => {
    const { child, line, exited } = startWorker();
    child.stdin.write('{"tool":"hello_greet","input":{"name":"A"}}\n');
    await line('stdout');
    await new Promise((r) => setTimeout(r, 200)); // let it go back to waiting for a line
    child.kill('SIGTERM');
    assert.equal(await exited, 143);
  });
});

describe('in process', () => {
  test('tool() rejects bad definitions', () => {
    const plugin = new Plugin();
    const handler = () => '';
    for (const name of ['', 'a b', 'x'.repeat(65), 'é']) {
      assert.throws(() => plugin.tool({ name, description: 'd', handler }), TypeError);
    }
    assert.throws(() => plugin.tool({ name: 't', description: '', handler }), /description/);
    assert.throws(() => plugin.tool({ name: 't', description: 'd', inputSchema: { type: 'string' }, handler }), /"type": "object"/);
    assert.throws(() => plugin.tool({ name: 't', description: 'd' }), /handler/);
    plugin.tool({ name: 'ok.name-1', description: 'd', handler });
    assert.throws(() => plugin.tool({ name: 'ok.name-1', description: 'd', handler }), /twice/);
  });

  test('ToolError checks its kind', () => {
    assert.equal(new ToolError('timeout', 'slow').kind, 'timeout');
    assert.throws(() => new ToolError('nope', 'x'), TypeError);
  });

  test('result shapes', async () => {
    const plugin = new Plugin()
      .tool({ name: 'none', description: 'd', handler: () => undefined })
      .tool({ name: 'err', description: 'd', handler: () => new Result({ text: 'partial', isError: true }) })
      .tool({ name: 'num', description: 'd', handler: () => 42 })
      .tool({ name: 'big', description: 'd', handler: () => ({ n: 1n }) })
      .tool({ name: 'badatt', description: 'd', handler: () => new Result({ attachments: [{}] }) })
      .tool({ name: 'str', description: 'd', handler: () => { throw 'plain string'; } }); // eslint-disable-line no-throw-literal
    assert.deepEqual(await plugin.call({ tool: 'none' }), { result: '', is_error: false });
    assert.deepEqual(await plugin.call({ tool: 'err' }), { result: 'partial', is_error: true });
    assert.deepEqual(await plugin.call({ tool: 'num' }), { result: '42', is_error: false, structured: 42 });
    const quiet = process.stderr.write;
    process.stderr.write = () => true; // failures print their stack
    try {
      assert.equal((await plugin.call({ tool: 'big' })).error.kind, 'failed');
      assert.match((await plugin.call({ tool: 'badatt' })).result, /exactly one of path or url/);
      assert.equal((await plugin.call('{"tool":"str"}')).result, 'Error: plain string');
    } finally {
      process.stderr.write = quiet;
    }
  });

  test('anyOf, nested objects and type lists', async () => {
    const plugin = new Plugin().tool({
      name: 't', description: 'd', handler: () => 'ok',
      inputSchema: {
        type: 'object',
        properties: {
          id: { anyOf: [{ type: 'integer' }, { type: 'string' }] },
          opt: { type: ['number', 'null'] },
          nested: { type: 'object', properties: { a: { type: 'boolean' } }, required: ['a'], additionalProperties: false },
        },
      },
    });
    assert.equal((await plugin.call({ tool: 't', input: { id: 'x', opt: null, nested: { a: true } } })).result, 'ok');
    const { result } = await plugin.call({ tool: 't', input: { id: true, opt: 'x', nested: { b: 1 } } });
    assert.equal(result, 'Invalid input for t: "id" does not match any allowed shape; "opt" must be a number or null, ' +
      'not a string; missing required field "nested.a"; unknown field "nested.b".');
  });

  test('progress format', () => {
    const ctx = new Context({});
    const written = [];
    const original = process.stderr.write;
    process.stderr.write = (s) => written.push(s);
    try {
      ctx.progress(3, 10, 'fetching page 3');
      ctx.progress(40, 100);
      ctx.progress(2.5, null, 'two\nlines');
    } finally {
      process.stderr.write = original;
    }
    assert.deepEqual(written, ['::progress:: 3/10 fetching page 3\n', '::progress:: 40/100\n', '::progress:: 2.5 two lines\n']);
    assert.equal(ctx.cancelled, false);
  });

  test('trace context', () => {
    const parent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const ctx = new Context({ traceparent: parent, tracestate: 'rojo=1' });
    assert.deepEqual([ctx.traceparent, ctx.tracestate], [parent, 'rojo=1']);
    assert.deepEqual(ctx.traceCarrier(), { traceparent: parent, tracestate: 'rojo=1' });
    const saved = [process.env.TRACEPARENT, process.env.TRACESTATE];
    try {
      delete process.env.TRACEPARENT;
      delete process.env.TRACESTATE;
      assert.deepEqual(new Context({}).traceCarrier(), {});
      process.env.TRACEPARENT = parent;
      process.env.TRACESTATE = 'congo=2';
      // A process started for one call has it in its environment.
      assert.deepEqual(new Context({}).traceCarrier(), { traceparent: parent, tracestate: 'congo=2' });
      // The request's context wins over the environment, tracestate with it.
      const other = '00-11111111111111111111111111111111-2222222222222222-00';
      assert.deepEqual(new Context({ traceparent: other }).traceCarrier(), { traceparent: other });
    } finally {
      for (const [k, v] of [['TRACEPARENT', saved[0]], ['TRACESTATE', saved[1]]]) {
        if (v === undefined) delete process.env[k]; else process.env[k] = v;
      }
    }
  });
});
