'use strict';
// An emulator of Adyen's Checkout API v71 for payorch's tests (Node standard library only):
//   node server.js --listen 127.0.0.1:0 --port-file F --ledger FILE --webhook-url URL
//                  --hmac-key HEX --api-key K [--tls-cert PEM --tls-key PEM]
//                  [--received-delay-ms N]
// Endpoints, under /v71 (payorch's base_url …/v71) and /v72 (the version @adyen/api-library
// 32 puts in its paths; the bodies used here are the same):
//   POST /vNN/payments, POST /vNN/payments/{pspReference}/refunds, POST /vNN/cancels
//   X-API-Key required (401 ServiceError otherwise).
// Idempotency (https://docs.adyen.com/development-resources/api-idempotency): a request with
// an idempotency-key that Adyen already processed gets the first answer again (whatever the
// body: the docs describe no body check), with the idempotency-key header echoed; a request
// with a key whose first request is still executing gets 409 errorCode 704 ("request already
// processed or in progress") with the header Transient-Error: true (retry later with the same
// key; https://docs.adyen.com/development-resources/api-idempotency#transient-errors, and
// Adyen's own account of the answer in github.com/Adyen/adyen-java-api-library/pull/288).
// Only answers of requests that were processed (2xx) are kept.
// Test controls (no key needed):
//   POST /_emu/faults {mode, count, delay_ms, path}: the next `count` API requests (-1: every
//     one from now on) whose path matches the regular expression `path` (any, when absent);
//     a request whose idempotency key Adyen already processed meets the fault too, in place
//     of the stored answer (fail_before_commit and commit_then_5xx: 500; commit_then_hang: no
//     answer; delayed_commit: the stored answer, late):
//     fail_before_commit  500, nothing done
//     commit_then_5xx     done and committed, then 500
//     commit_then_hang    done and committed, then no answer (the socket is closed after
//                         delay_ms when given)
//     delayed_commit      held executing for delay_ms, then done and answered
//   POST /_emu/switches {duplicate_webhooks, reorder_webhooks}
//   POST /_emu/webhook_url {url}: where webhooks go from now on (for a receiver that starts
//     after the emulator)
//   GET  /_emu/ledger   what is committed (payments, refunds, cancels, webhooks)
const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const https = require('node:https');

const checkout = require('./checkout');
const {parseArgs, listenWithPortFile, sleep} = require('../shared');
const {Ledger} = require('./ledger');
const {WebhookSender} = require('./webhooks');

function send(res, status, body, headers = {}) {
  const text = JSON.stringify(body);
  res.writeHead(status, {'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text), ...headers});
  res.end(text);
}

function main() {
  const args = parseArgs(process.argv.slice(2), ['listen', 'port-file', 'ledger', 'hmac-key', 'api-key']);
  const ledger = new Ledger(args.ledger);
  const switches = {duplicate_webhooks: false, reorder_webhooks: false};
  const sender = new WebhookSender({url: args['webhook-url'], hmacKey: args['hmac-key'], ledger, switches});
  const receivedDelayMs = Number(args['received-delay-ms'] || 300);
  const inflight = new Set();
  let fault = {mode: null, count: 0, delay_ms: 0, path: null};

  function takeFault(url) {
    if (!fault.mode || fault.count === 0) return null;
    if (fault.path && !new RegExp(fault.path).test(url)) return null;
    if (fault.count > 0) fault.count -= 1;
    return {...fault};
  }

  // A fault met by a request whose key was already processed: the stored answer is lost, late,
  // or replaced by a 500.
  async function replayWithFault(req, res, f, stored, key) {
    if (f.mode === 'commit_then_hang') {
      if (f.delay_ms) setTimeout(() => req.socket.destroy(), f.delay_ms);
      return undefined;
    }
    if (f.mode === 'delayed_commit') await sleep(f.delay_ms || 500);
    else {
      const e = checkout.serviceError(500, '000', 'Internal error', 'internal');
      return send(res, e.status, e.body);
    }
    return send(res, stored.status, stored.body, {'idempotency-key': key});
  }

  function scheduleAuthorisation(psp) {
    setTimeout(() => {
      const later = checkout.authorise(ledger, psp);
      if (!later) return;
      ledger.commit(...later.records);
      for (const item of later.webhooks) sender.queue(item);
    }, receivedDelayMs);
  }

  // After a restart: payments still Received get authorised, undelivered webhooks go out.
  for (const p of ledger.payments.values()) if (p.resultCode === 'Received') scheduleAuthorisation(p.pspReference);
  sender.kick(0);

  function route(method, url) {
    let m;
    if (method === 'POST' && (m = url.match(/^\/v7[12]\/payments$/))) return (body) => checkout.payment(ledger, body);
    if (method === 'POST' && (m = url.match(/^\/v7[12]\/payments\/([^/]+)\/refunds$/)))
      return (body) => checkout.refund(ledger, decodeURIComponent(m[1]), body);
    if (method === 'POST' && /^\/v7[12]\/cancels$/.test(url)) return (body) => checkout.cancel(ledger, body);
    return null;
  }

  async function api(req, res, raw, handler, url) {
    if (req.headers['x-api-key'] !== args['api-key']) {
      const e = checkout.serviceError(401, '000', 'HTTP Status Response - Unauthorized', 'security');
      return send(res, e.status, e.body);
    }
    let body;
    try { body = JSON.parse(raw); } catch { body = undefined; }
    if (!body || typeof body !== 'object' || Array.isArray(body)) {
      const e = checkout.serviceError(400, '000', 'Unable to parse message');
      return send(res, e.status, e.body);
    }
    const key = req.headers['idempotency-key'];
    if (key !== undefined) {
      if (inflight.has(key)) {
        const e = checkout.serviceError(409, '704', 'request already processed or in progress');
        return send(res, e.status, e.body, {'Transient-Error': 'true'});
      }
    }
    const f = takeFault(url);
    if (key !== undefined) {
      const stored = ledger.keys.get(key);
      if (stored && f) return replayWithFault(req, res, f, stored, key);
      if (stored) return send(res, stored.status, stored.body, {'idempotency-key': key});
    }
    if (f && f.mode === 'fail_before_commit') {
      const e = checkout.serviceError(500, '000', 'Internal error', 'internal');
      return send(res, e.status, e.body);
    }
    if (key !== undefined) inflight.add(key);
    try {
      if (f && f.mode === 'delayed_commit') await sleep(f.delay_ms || 500);
      const result = handler(body);
      if (result.status >= 300) return send(res, result.status, result.body);
      const records = [...result.records];
      if (key !== undefined) {
        const hash = crypto.createHash('sha256').update(raw).digest('hex');
        records.push({t: 'key', key, hash, status: result.status, body: result.body});
      }
      ledger.commit(...records);
      for (const item of result.webhooks) sender.queue(item);
      if (result.received) scheduleAuthorisation(result.received);
      if (f && f.mode === 'commit_then_5xx') {
        const e = checkout.serviceError(500, '000', 'Internal error', 'internal');
        return send(res, e.status, e.body);
      }
      if (f && f.mode === 'commit_then_hang') {
        if (f.delay_ms) setTimeout(() => req.socket.destroy(), f.delay_ms);
        return undefined;
      }
      return send(res, result.status, result.body, key !== undefined ? {'idempotency-key': key} : {});
    } finally {
      if (key !== undefined) inflight.delete(key);
    }
  }

  function control(req, res, raw) {
    if (req.method === 'GET' && req.url === '/_emu/ledger') return send(res, 200, ledger.snapshot());
    let body;
    try { body = JSON.parse(raw || '{}'); } catch { return send(res, 400, {error: 'bad json'}); }
    if (req.method === 'POST' && req.url === '/_emu/faults') {
      const modes = ['fail_before_commit', 'commit_then_5xx', 'commit_then_hang', 'delayed_commit', null];
      if (!modes.includes(body.mode ?? null)) return send(res, 400, {error: `unknown mode ${body.mode}`});
      fault = {mode: body.mode ?? null, count: body.count ?? 1, delay_ms: body.delay_ms ?? 0, path: body.path ?? null};
      return send(res, 200, fault);
    }
    if (req.method === 'POST' && req.url === '/_emu/switches') {
      for (const k of Object.keys(switches)) if (k in body) switches[k] = Boolean(body[k]);
      return send(res, 200, switches);
    }
    if (req.method === 'POST' && req.url === '/_emu/webhook_url') {
      sender.url = body.url;
      sender.kick(0);
      return send(res, 200, {url: sender.url});
    }
    return send(res, 404, {error: 'no such control'});
  }

  function onRequest(req, res) {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const url = req.url.split('?')[0];
      if (url.startsWith('/_emu/')) return control(req, res, raw);
      const handler = route(req.method, url);
      if (!handler) {
        const e = checkout.serviceError(404, '000', 'Not found', 'validation');
        return send(res, e.status, e.body);
      }
      api(req, res, raw, handler, url).catch((err) => {
        process.stderr.write(`adyen emulator: ${err.stack}\n`);
        if (!res.headersSent) send(res, 500, {status: 500, errorCode: '000', message: 'emulator error', errorType: 'internal'});
      });
      return undefined;
    });
  }

  const server = args['tls-cert']
    ? https.createServer({cert: fs.readFileSync(args['tls-cert']), key: fs.readFileSync(args['tls-key'])}, onRequest)
    : http.createServer(onRequest);
  listenWithPortFile(server, args.listen, args['port-file']);
  const stop = () => { sender.stop(); server.close(); server.closeAllConnections?.(); process.exit(0); };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main();
