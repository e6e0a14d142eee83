'use strict';
// A Stripe API emulator for payorch's tests: the endpoints the `stripe` adapter uses, with
// Stripe's idempotency semantics, a durable ledger, signed webhooks and injectable faults.
//
//   node server.js --listen 127.0.0.1:0 --port-file F --ledger FILE --webhook-url URL
//                  --webhook-secret S --api-key K [--action-delay-ms N]
//
// API (https://docs.stripe.com/api): POST /v1/payment_intents (create, with confirm=true
// also confirm), GET /v1/payment_intents/:id, POST /v1/refunds, GET /v1/refunds/:id; form
// bodies; `Authorization: Bearer <key>` (or Basic with the key as user).
// Idempotency (https://docs.stripe.com/api/idempotent_requests): a key's first answer that
// reached execution is saved (successes, card errors and 500s alike) and replayed with
// `Idempotent-Replayed: true` for 24 h; other parameters under the same key answer 400
// idempotency_error; a request arriving while the first with its key still executes answers
// 409 idempotency_error/idempotency_key_in_use (Stripe's client libraries retry 409s).
// Validation errors (400) and 401s are not saved: nothing executed.
// Test payment methods (https://docs.stripe.com/testing#cards): pm_card_visa and
// pm_card_mastercard succeed; pm_card_chargeDeclined declines (generic_decline),
// pm_card_chargeDeclinedInsufficientFunds (insufficient_funds) (both also with the pm_card_visa_
// prefix), pm_card_chargeDeclinedExpiredCard
// (expired_card, code only); pm_card_authenticationRequired and pm_card_threeDSecure2Required
// stop in requires_action and succeed --action-delay-ms later (default 500; 0: only through
// POST /_emu/payment_intents/:id/authenticate), with a payment_intent.succeeded webhook.
// Control API: POST /_emu/faults {"mode","count","delay_ms"} for the next `count` API POSTs:
//   fail_before_commit  500 api_error, nothing done, nothing saved under the key
//   commit_then_5xx     done and saved, then 500 (a replay gets the saved answer)
//   commit_then_hang    done and saved, then no answer (the connection is held)
//   delayed_commit      executes for delay_ms (the key is in use meanwhile), then answers
// and switches {"duplicate_webhooks":bool,"reorder_webhooks":bool}, and {"webhook_url"} (for a
// receiver that starts after the emulator); GET /_emu/ledger.
const fs = require('node:fs');
const http = require('node:http');
const objects = require('./objects');
const { parseForm, canonical } = require('./form');
const { Ledger } = require('./ledger');
const { Webhooks } = require('./webhooks');

function parseArgs(argv) {
  const args = { listen: '127.0.0.1:0', actionDelayMs: 500 };
  for (let i = 2; i < argv.length; i += 2) {
    const name = argv[i].replace(/^--/, '').replace(/-([a-z])/g, (_, c) => c.toUpperCase());
    args[name] = argv[i + 1];
  }
  for (const required of ['ledger', 'apiKey'])
    if (!args[required]) throw new Error(`--${required} is required`);
  args.actionDelayMs = Number(args.actionDelayMs);
  return args;
}

const args = parseArgs(process.argv);
const log = (msg) => process.stderr.write(`stripe-emulator: ${msg}\n`);
const ledger = new Ledger(args.ledger);
const webhooks = new Webhooks(args.webhookUrl, args.webhookSecret ?? '', log);
const inUse = new Set();  // idempotency keys whose first request is executing
let fault = { mode: null, count: 0, delayMs: 0 };

const declines = {
  pm_card_chargeDeclined: { code: 'card_declined', decline_code: 'generic_decline' },
  pm_card_chargeDeclinedInsufficientFunds: { code: 'card_declined', decline_code: 'insufficient_funds' },
  pm_card_chargeDeclinedExpiredCard: { code: 'expired_card' },
};
declines.pm_card_visa_chargeDeclined = declines.pm_card_chargeDeclined;
declines.pm_card_visa_chargeDeclinedInsufficientFunds = declines.pm_card_chargeDeclinedInsufficientFunds;
const succeeding = new Set(['pm_card_visa', 'pm_card_mastercard']);
const authenticating = new Set(['pm_card_authenticationRequired', 'pm_card_threeDSecure2Required']);

class ApiError extends Error {
  constructor(status, body, { save = true } = {}) {
    super(body.error.message);
    this.status = status;
    this.body = body;
    this.save = save;
  }
}
const invalid = (message, extra = {}) =>
  new ApiError(400, objects.error('invalid_request_error', message, extra), { save: false });

function chargeId() { return objects.newId('ch'); }

// create+confirm: returns {status, body, records, events} without committing.
function createPaymentIntent(p, key) {
  const amount = Number(p.amount);
  if (!/^\d+$/.test(p.amount ?? '') || amount < 1) throw invalid('Missing required param: amount.', { param: 'amount', code: 'parameter_missing' });
  if (!/^[a-z]{3}$/.test(p.currency ?? '')) throw invalid('Invalid currency.', { param: 'currency', code: 'parameter_invalid_string' });
  const confirm = p.confirm === 'true';
  const apm = p.automatic_payment_methods;
  if (confirm && !p.return_url && !p.payment_method_types && !(apm && apm.allow_redirects === 'never'))
    throw invalid("This PaymentIntent is configured to accept payment methods enabled in your Dashboard. Because some of these payment methods might redirect your customer off of your page, you must provide a `return_url`. If you don't want to accept redirect-based payment methods, set `automatic_payment_methods[enabled]` to `true` and `automatic_payment_methods[allow_redirects]` to `never` when creating Setup Intents and Payment Intents.");
  const pm = p.payment_method;
  if (pm && !succeeding.has(pm) && !declines[pm] && !authenticating.has(pm))
    throw invalid(`No such PaymentMethod: '${pm}'`, { param: 'payment_method', code: 'resource_missing' });
  const pi = objects.paymentIntent({ ...p, amount });
  const out = { status: 200, body: pi, events: [] };
  if (!confirm || !pm) {
    out.events.push(objects.event('payment_intent.created', pi, key));
  } else if (succeeding.has(pm)) {
    Object.assign(pi, { status: 'succeeded', amount_received: amount, latest_charge: chargeId() });
    out.events.push(objects.event('payment_intent.created', pi, key), objects.event('payment_intent.succeeded', pi, key));
  } else if (authenticating.has(pm)) {
    Object.assign(pi, { status: 'requires_action', next_action: { type: 'use_stripe_sdk', use_stripe_sdk: { type: 'three_d_secure_redirect' } } });
    out.events.push(objects.event('payment_intent.created', pi, key), objects.event('payment_intent.requires_action', pi, key));
  } else {
    const d = declines[pm];
    const message = 'Your card was declined.';
    pi.last_payment_error = { ...d, type: 'card_error', message, payment_method: { id: pm, object: 'payment_method' } };
    pi.latest_charge = chargeId();
    out.status = 402;
    out.body = objects.error('card_error', message, { ...d, charge: pi.latest_charge, payment_intent: objects.copy(pi) });
    out.events.push(objects.event('payment_intent.created', pi, key), objects.event('payment_intent.payment_failed', pi, key));
  }
  out.records = [{ t: 'payment_intent', object: pi }];
  return out;
}

function createRefund(p, key) {
  const pi = ledger.paymentIntents.get(p.payment_intent ?? '');
  if (!pi) throw invalid(`No such payment_intent: '${p.payment_intent}'`, { param: 'payment_intent', code: 'resource_missing' });
  if (pi.status !== 'succeeded')
    throw invalid(`This PaymentIntent (${pi.id}) does not have a successful charge to refund.`, { code: 'charge_not_refundable' });
  const refunded = [...ledger.refunds.values()].filter((r) => r.payment_intent === pi.id && r.status !== 'failed' && r.status !== 'canceled')
    .reduce((sum, r) => sum + r.amount, 0);
  const remaining = pi.amount_received - refunded;
  if (remaining <= 0) throw invalid(`Charge ${pi.latest_charge} has already been refunded.`, { code: 'charge_already_refunded' });
  const amount = p.amount === undefined ? remaining : Number(p.amount);
  if (!Number.isInteger(amount) || amount < 1) throw invalid('Invalid integer: amount', { param: 'amount', code: 'parameter_invalid_integer' });
  if (amount > remaining)
    throw invalid(`Refund amount (${amount}) is greater than unrefunded amount on charge (${remaining})`, { param: 'amount', code: 'amount_too_large' });
  const refund = objects.refund({ ...p, amount }, pi);
  return { status: 200, body: refund, records: [{ t: 'refund', object: refund }], events: [objects.event('refund.created', refund, key)] };
}

const creators = { '/v1/payment_intents': createPaymentIntent, '/v1/refunds': createRefund };

function send(res, status, body, headers = {}) {
  const text = JSON.stringify(body, null, 2);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Request-Id': objects.newId('req'), ...headers });
  res.end(text);
}

function authorized(req) {
  const h = req.headers.authorization ?? '';
  if (h === `Bearer ${args.apiKey}`) return true;
  if (h.startsWith('Basic ')) return Buffer.from(h.slice(6), 'base64').toString().split(':')[0] === args.apiKey;
  return false;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function post(req, res, path, body) {
  const creator = creators[path];
  if (!creator) return send(res, 404, objects.error('invalid_request_error', `Unrecognized request URL (POST: ${path}).`));
  let params;
  try { params = parseForm(body); } catch (e) { return send(res, 400, objects.error('invalid_request_error', e.message)); }
  const key = req.headers['idempotency-key'];
  const echo = key ? { 'Idempotency-Key': key } : {};
  const paramsText = canonical(params);
  if (key) {
    const saved = ledger.savedAnswer(key, Date.now());
    if (saved) {
      if (saved.endpoint !== path || saved.params !== paramsText)
        return send(res, 400, objects.error('idempotency_error', `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${key}' if you meant to execute a different request.`), echo);
      return send(res, saved.status, saved.body, { ...echo, 'Idempotent-Replayed': 'true', 'Original-Request': saved.request_id });
    }
    if (inUse.has(key))
      return send(res, 409, objects.error('idempotency_error', 'There is currently another in-progress request using this Idempotent Key (that probably means you submitted twice, and the other request is still going through): ' + key + '. Please try again later.', { code: 'idempotency_key_in_use' }), echo);
  }
  const mode = fault.count > 0 ? fault.mode : null;
  if (mode) fault.count--;
  if (mode === 'fail_before_commit') return send(res, 500, objects.error('api_error', 'An unknown error occurred'), echo);
  if (key) inUse.add(key);
  try {
    if (mode === 'delayed_commit') await sleep(fault.delayMs);
    let out;
    try { out = creator(params, key); } catch (e) {
      if (!(e instanceof ApiError)) throw e;
      out = { status: e.status, body: e.body, records: [], events: [], save: e.save };
    }
    const requestId = objects.newId('req');
    const records = [...out.records, ...out.events.map((ev) => ({ t: 'event', object: ev }))];
    if (key && out.save !== false)
      records.push({ t: 'idempotency', key, endpoint: path, params: paramsText, status: out.status, body: out.body, at: Date.now(), request_id: requestId });
    if (records.length) ledger.commit(records);
    for (const ev of out.events) webhooks.send(ev);
    if (out.body.object === 'payment_intent' && out.body.status === 'requires_action' && args.actionDelayMs > 0)
      setTimeout(() => authenticate(out.body.id), args.actionDelayMs);
    if (mode === 'commit_then_5xx') return send(res, 500, objects.error('api_error', 'An unknown error occurred'), echo);
    if (mode === 'commit_then_hang') return;  // the connection stays open until the client gives up
    return send(res, out.status, out.body, echo);
  } finally {
    if (key) inUse.delete(key);
  }
}

// The customer completed 3-D Secure: requires_action → succeeded, with its webhook.
function authenticate(id) {
  const current = ledger.paymentIntents.get(id);
  if (!current || current.status !== 'requires_action') return null;
  const pi = objects.copy(current);
  Object.assign(pi, { status: 'succeeded', next_action: null, amount_received: pi.amount, latest_charge: chargeId() });
  const ev = objects.event('payment_intent.succeeded', pi, null);
  ledger.commit([{ t: 'payment_intent', object: pi }, { t: 'event', object: ev }]);
  webhooks.send(ev);
  return pi;
}

function control(req, res, path, body) {
  if (req.method === 'GET' && path === '/_emu/ledger')
    return send(res, 200, { ...ledger.snapshot(), webhooks_delivered: webhooks.delivered, webhooks_in_flight: webhooks.inFlight });
  if (req.method === 'POST' && path === '/_emu/faults') {
    const f = body ? JSON.parse(body) : {};
    if (f.mode !== undefined) {
      if (f.mode !== null && !['fail_before_commit', 'commit_then_5xx', 'commit_then_hang', 'delayed_commit'].includes(f.mode))
        return send(res, 400, { error: `unknown mode ${f.mode}` });
      fault = { mode: f.mode, count: f.count ?? 1, delayMs: f.delay_ms ?? 0 };
    }
    if (f.duplicate_webhooks !== undefined) webhooks.duplicate = !!f.duplicate_webhooks;
    if (f.reorder_webhooks !== undefined) webhooks.reorder = !!f.reorder_webhooks;
    if (f.webhook_url !== undefined) webhooks.url = f.webhook_url;
    return send(res, 200, { mode: fault.mode, count: fault.count, delay_ms: fault.delayMs, duplicate_webhooks: webhooks.duplicate, reorder_webhooks: webhooks.reorder });
  }
  const m = /^\/_emu\/payment_intents\/([^/]+)\/authenticate$/.exec(path);
  if (req.method === 'POST' && m) {
    const pi = authenticate(m[1]);
    return pi ? send(res, 200, pi) : send(res, 404, { error: 'no payment intent in requires_action' });
  }
  return send(res, 404, { error: 'unknown control path' });
}

function get(res, path) {
  const m = /^\/v1\/(payment_intents|refunds)\/([^/]+)$/.exec(path);
  const found = m && (m[1] === 'refunds' ? ledger.refunds : ledger.paymentIntents).get(m[2]);
  if (found) return send(res, 200, found);
  const noun = m ? (m[1] === 'refunds' ? 'refund' : 'payment_intent') : '';
  return send(res, 404, objects.error('invalid_request_error', m ? `No such ${noun}: '${m[2]}'` : `Unrecognized request URL (GET: ${path}).`,
    m ? { code: 'resource_missing', param: 'id' } : {}));
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8');
    const path = new URL(req.url, 'http://x').pathname;
    Promise.resolve().then(() => {
      if (path.startsWith('/_emu/')) return control(req, res, path, body);
      if (!authorized(req))
        return send(res, 401, objects.error('invalid_request_error', 'Invalid API Key provided.'));
      if (req.method === 'POST') return post(req, res, path, body);
      if (req.method === 'GET') return get(res, path);
      return send(res, 405, objects.error('invalid_request_error', 'Method not allowed.'));
    }).catch((e) => { log(`internal: ${e.stack}`); if (!res.headersSent) send(res, 500, objects.error('api_error', 'internal')); });
  });
});

const [host, port] = args.listen.split(/:(?=\d+$)/);
server.listen(Number(port), host, () => {
  const actual = server.address().port;
  if (args.portFile) {
    fs.writeFileSync(`${args.portFile}.tmp`, String(actual));
    fs.renameSync(`${args.portFile}.tmp`, args.portFile);
  }
  log(`listening on ${host}:${actual}`);
});
for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => process.exit(0));
