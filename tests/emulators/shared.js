'use strict';
// What the vendor emulators (adyen/, wechatpay/, alipay/) and their harnesses share: argument parsing,
// the port file, waiting for a condition, and the JSON-schema type test.
const fs = require('node:fs');
const path = require('node:path');

// "--name value" pairs into {name: value}; throws on a stray argument or a missing `required`.
function parseArgs(argv, required) {
  const out = {};
  for (let i = 0; i < argv.length; i += 2) {
    if (!argv[i].startsWith('--') || argv[i + 1] === undefined) throw new Error(`bad argument ${argv[i]}`);
    out[argv[i].slice(2)] = argv[i + 1];
  }
  for (const name of required) if (!out[name]) throw new Error(`--${name} is required`);
  return out;
}

// Listens on "HOST:PORT" and then writes the port to `portFile` atomically (the harnesses wait
// for the file).
function listenWithPortFile(server, listen, portFile) {
  const colon = listen.lastIndexOf(':');
  server.listen(Number(listen.slice(colon + 1)), listen.slice(0, colon), () => {
    const tmp = `${portFile}.tmp`;
    fs.writeFileSync(tmp, String(server.address().port));
    fs.renameSync(tmp, path.resolve(portFile));
  });
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Polls `predicate` (sync or async) until it returns a truthy value, which it returns; throws
// after timeoutMs.
async function waitFor(predicate, {timeoutMs = 10000, what = 'condition'} = {}) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await predicate();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

// Whether `value` is of JSON-schema `type` (any type when none is named).
function typeOk(type, value) {
  switch (type) {
    case 'object': return value !== null && typeof value === 'object' && !Array.isArray(value);
    case 'array': return Array.isArray(value);
    case 'string': return typeof value === 'string';
    case 'integer': return Number.isInteger(value);
    case 'number': return typeof value === 'number';
    case 'boolean': return typeof value === 'boolean';
    default: return true;
  }
}

module.exports = {parseArgs, listenWithPortFile, sleep, waitFor, typeOk};
