#!/usr/bin/env node
// kv-store: a tiny persistent key-value store (tools: kv_set, kv_get, kv_delete, kv_list).
// State lives in <data_dir>/store.json, replaced atomically on every write.
// plughost_plugin.mjs (the SDK) reads the request, checks it and writes the answer.
// Try it:  echo '{"tool":"kv_set","input":{"key":"a","value":"1"},"context":{}}' | ./main.mjs
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

import { Plugin, Result, ToolError } from './plughost_plugin.mjs';

const MAX_KEY_CHARS = 256;
const KEY = { type: 'string', minLength: 1, maxLength: MAX_KEY_CHARS, description: 'The key' };

// The store's folder, created if needed. (Not fs.mkdirSync's {recursive: true}:
// it loops forever on some paths that cannot be created, e.g. under /proc.)
function ensureDir(dir) {
  try {
    fs.mkdirSync(dir);
  } catch (e) {
    if (e.code === 'EEXIST') return dir;
    if (e.code !== 'ENOENT' || path.dirname(dir) === dir) throw e;
    ensureDir(path.dirname(dir));
    fs.mkdirSync(dir);
  }
  return dir;
}

// plughost enforces the schema; run by hand, the SDK checks types but not lengths.
function checkKey(input) {
  const key = input.key;
  // Count code points (like JSON Schema's maxLength), not UTF-16 units.
  if (key.length === 0 || [...key].length > MAX_KEY_CHARS) {
    throw new ToolError('invalid_args', `"key" must be a string of 1 to ${MAX_KEY_CHARS} characters.`);
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
    throw new ToolError('failed', `The store file ${file} is corrupt (${e.message}); fix or remove it.`);
  }
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    throw new ToolError('failed', `The store file ${file} does not hold a JSON object; fix or remove it.`);
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
    if (Date.now() > deadline) throw new ToolError('timeout', 'The store is busy (locked by another call); try again.');
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10); // sleep 10 ms
  }
  try {
    return fn();
  } finally {
    fs.rmdirSync(lock);
  }
}

// Runs a tool against <data_dir>; file system failures (EACCES, ENOSPC...) are the tool's own error.
function withStore(ctx, fn) {
  try {
    return fn(ensureDir(ctx.dataDir));
  } catch (e) {
    if (e instanceof ToolError || !e.code) throw e;
    throw new ToolError('failed', `Storage error: ${e.message}`);
  }
}

const storeFile = (dir) => path.join(dir, 'store.json');

new Plugin()
  .tool({
    name: 'kv_set',
    description: 'Stores a string value under a key, replacing any previous value.',
    inputSchema: {
      type: 'object',
      properties: { key: KEY, value: { type: 'string', description: 'The value to store' } },
      required: ['key', 'value'],
      additionalProperties: false,
    },
    timeoutSecs: 10,
    handler: (input, ctx) => withStore(ctx, (dir) => {
      const key = checkKey(input);
      const existed = withLock(dir, () => {
        const store = load(storeFile(dir));
        const had = store.has(key);
        store.set(key, input.value);
        save(storeFile(dir), store);
        return had;
      });
      return new Result({ text: `${existed ? 'Updated' : 'Stored'} ${JSON.stringify(key)}.`,
        structured: { key, created: !existed } });
    }),
  })
  .tool({
    name: 'kv_get',
    description: 'Returns the value stored under a key. Fails if the key is not set.',
    inputSchema: { type: 'object', properties: { key: KEY }, required: ['key'], additionalProperties: false },
    timeoutSecs: 10,
    handler: (input, ctx) => withStore(ctx, (dir) => {
      const key = checkKey(input);
      const store = load(storeFile(dir));
      if (!store.has(key)) {
        throw new ToolError('not_found', `No value stored under ${JSON.stringify(key)}. Use kv_list to see existing keys.`);
      }
      const value = store.get(key);
      const text = typeof value === 'string' ? value : JSON.stringify(value);
      return new Result({ text, structured: { key, value: text } });
    }),
  })
  .tool({
    name: 'kv_delete',
    description: 'Deletes a key and its value. Deleting a key that is not set is not an error.',
    inputSchema: { type: 'object', properties: { key: KEY }, required: ['key'], additionalProperties: false },
    timeoutSecs: 10,
    handler: (input, ctx) => withStore(ctx, (dir) => {
      const key = checkKey(input);
      const existed = withLock(dir, () => {
        const store = load(storeFile(dir));
        if (!store.delete(key)) return false;
        save(storeFile(dir), store);
        return true;
      });
      return new Result({
        text: existed ? `Deleted ${JSON.stringify(key)}.` : `Nothing to delete: ${JSON.stringify(key)} was not set.`,
        structured: { key, deleted: existed },
      });
    }),
  })
  .tool({
    name: 'kv_list',
    description: 'Lists the stored keys in sorted order, optionally only those starting with a prefix.',
    inputSchema: {
      type: 'object',
      properties: { prefix: { type: 'string', description: 'Only list keys starting with this' } },
      additionalProperties: false,
    },
    timeoutSecs: 10,
    handler: ({ prefix = '' }, ctx) => withStore(ctx, (dir) => {
      const keys = [...load(storeFile(dir)).keys()].filter((k) => k.startsWith(prefix)).sort();
      let text;
      if (keys.length === 0) {
        text = prefix ? `No keys start with ${JSON.stringify(prefix)}.` : 'The store is empty.';
      } else {
        // Keys are shown JSON-quoted, so ones holding spaces or newlines stay unambiguous.
        text = `${keys.length} key${keys.length === 1 ? '' : 's'}:\n` + keys.map((k) => JSON.stringify(k)).join('\n');
      }
      return new Result({ text, structured: { keys } });
    }),
  })
  .run();
