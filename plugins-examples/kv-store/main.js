#!/usr/bin/env node
// kv-store: a tiny persistent key-value store (tools: kv_set, kv_get, kv_delete, kv_list).
// State lives in <data_dir>/store.json, replaced atomically on every write.
// Try it:  echo '{"tool":"kv_set","input":{"key":"a","value":"1"},"context":{}}' | ./main.js
'use strict';

const crypto = require('crypto');
const fs = require('fs');
const path = require('path');

const MAX_KEY_CHARS = 256;

function reply(result, isError = false, structured = undefined) {
  const out = { result, is_error: isError };
  if (structured !== undefined) out.structured = structured;
  process.stdout.write(JSON.stringify(out) + '\n');
}

// A tool-level problem the agent can fix (bad key, missing key...).
class ToolError extends Error {}

// context.data_dir, else $PLUGHOST_DATA_DIR, else ./.data next to this script (runs by hand).
function dataDir(context) {
  const dir = (context && typeof context.data_dir === 'string' && context.data_dir) ||
    process.env.PLUGHOST_DATA_DIR || path.join(__dirname, '.data');
  ensureDir(dir);
  return dir;
}

// mkdir -p. (Not fs.mkdirSync's {recursive: true}: it loops forever on some
// paths that cannot be created, e.g. under /proc.)
function ensureDir(dir) {
  try {
    fs.mkdirSync(dir);
  } catch (e) {
    if (e.code === 'EEXIST') return;
    if (e.code !== 'ENOENT' || path.dirname(dir) === dir) throw e;
    ensureDir(path.dirname(dir));
    fs.mkdirSync(dir);
  }
}

function checkKey(input) {
  const key = input.key;
  // Count code points (like JSON Schema's maxLength), not UTF-16 units.
  if (typeof key !== 'string' || key.length === 0 || [...key].length > MAX_KEY_CHARS) {
    throw new ToolError(`"key" must be a string of 1 to ${MAX_KEY_CHARS} characters.`);
  }
  return key;
}

// A Map, so that keys like "__proto__" or "constructor" are just keys.
function load(file) {
  let text;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    if (e.code === 'ENOENT') return new Map();
    throw e;
  }
  let data;
  try {
    data = JSON.parse(text);
  } catch (e) {
    throw new ToolError(`The store file ${file} is corrupt (${e.message}); fix or remove it.`);
  }
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    throw new ToolError(`The store file ${file} does not hold a JSON object; fix or remove it.`);
  }
  return new Map(Object.entries(data));
}

// Write a temp file in the same folder, flush it, then rename over the old one:
// readers see either the old or the new store, never half of one.
function save(file, map) {
  const tmp = `${file}.${process.pid}.${crypto.randomBytes(4).toString('hex')}.tmp`;
  try {
    const fd = fs.openSync(tmp, 'wx', 0o600);
    try {
      fs.writeSync(fd, JSON.stringify(Object.fromEntries(map), null, 2) + '\n');
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(tmp, file);
  } catch (e) {
    fs.rmSync(tmp, { force: true });
    throw e;
  }
}

// Calls can run in parallel (one process each), so read-modify-write is done
// under a lock directory (mkdir is atomic). A lock older than 10 s is stale.
function withLock(dir, fn) {
  const lock = path.join(dir, 'store.lock');
  const deadline = Date.now() + 5000;
  for (;;) {
    try {
      fs.mkdirSync(lock);
      break;
    } catch (e) {
      if (e.code !== 'EEXIST') throw e;
    }
    try {
      if (Date.now() - fs.statSync(lock).mtimeMs > 10000) fs.rmdirSync(lock);
    } catch { /* released meanwhile */ }
    if (Date.now() > deadline) throw new ToolError('The store is busy (locked by another call); try again.');
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10); // sleep 10 ms
  }
  try {
    return fn();
  } finally {
    fs.rmdirSync(lock);
  }
}

const tools = {
  kv_set(input, dir) {
    const key = checkKey(input);
    if (typeof input.value !== 'string') throw new ToolError('"value" must be a string.');
    const file = path.join(dir, 'store.json');
    const existed = withLock(dir, () => {
      const store = load(file);
      const had = store.has(key);
      store.set(key, input.value);
      save(file, store);
      return had;
    });
    reply(`${existed ? 'Updated' : 'Stored'} ${JSON.stringify(key)}.`, false, { key, created: !existed });
  },

  kv_get(input, dir) {
    const key = checkKey(input);
    const store = load(path.join(dir, 'store.json'));
    if (!store.has(key)) {
      throw new ToolError(`No value stored under ${JSON.stringify(key)}. Use kv_list to see existing keys.`);
    }
    const value = store.get(key);
    const text = typeof value === 'string' ? value : JSON.stringify(value);
    reply(text, false, { key, value: text });
  },

  kv_delete(input, dir) {
    const key = checkKey(input);
    const file = path.join(dir, 'store.json');
    const existed = withLock(dir, () => {
      const store = load(file);
      if (!store.delete(key)) return false;
      save(file, store);
      return true;
    });
    reply(existed ? `Deleted ${JSON.stringify(key)}.` : `Nothing to delete: ${JSON.stringify(key)} was not set.`,
      false, { key, deleted: existed });
  },

  kv_list(input, dir) {
    const prefix = input.prefix === undefined ? '' : input.prefix;
    if (typeof prefix !== 'string') throw new ToolError('"prefix" must be a string.');
    const keys = [...load(path.join(dir, 'store.json')).keys()].filter((k) => k.startsWith(prefix)).sort();
    let text;
    if (keys.length === 0) {
      text = prefix ? `No keys start with ${JSON.stringify(prefix)}.` : 'The store is empty.';
    } else {
      // Keys are shown JSON-quoted, so ones holding spaces or newlines stay unambiguous.
      text = `${keys.length} key${keys.length === 1 ? '' : 's'}:\n` + keys.map((k) => JSON.stringify(k)).join('\n');
    }
    reply(text, false, { keys });
  },
};

function protocolError(message) {
  process.stderr.write(`kv-store: invalid request: ${message}\n`);
  process.exitCode = 2;
}

async function main() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  let request;
  try {
    request = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch (e) {
    return protocolError(`stdin is not valid JSON (${e.message})`);
  }
  if (request === null || typeof request !== 'object' || Array.isArray(request) || typeof request.tool !== 'string') {
    return protocolError('expected a JSON object with a string "tool"');
  }
  const input = request.input ?? {};
  if (typeof input !== 'object' || Array.isArray(input)) return protocolError('"input" must be an object');

  // Object.hasOwn: "toString" or "__proto__" must not count as tools.
  if (!Object.hasOwn(tools, request.tool)) {
    return reply(`Unknown tool ${JSON.stringify(request.tool)}: kv-store provides ${Object.keys(tools).join(', ')}.`, true);
  }
  try {
    tools[request.tool](input, dataDir(request.context));
  } catch (e) {
    if (e instanceof ToolError) return reply(e.message, true);
    if (e.code) return reply(`Storage error: ${e.message}`, true); // EACCES, ENOSPC...
    throw e;
  }
}

main();
