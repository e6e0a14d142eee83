'use strict';
// The Stripe emulator (server.js) driven by Stripe's official Node library (stripe@23.1.0,
// pinned in ../package.json): every answer must parse into the library's objects and errors,
// with exactly the field sets of Stripe's fixtures, and its webhooks must pass the library's
// signature check. Run: node --test tests/emulators/stripe/
const assert = require('node:assert/strict');
const { test, before, after } = require('node:test');
const Stripe = require('stripe');
const fixtures = require('./fixtures.json');
const { API_KEY, WEBHOOK_SECRET, startEmulator, startReceiver, waitFor } = require('./harness');

let emulator;
let receiver;
let stripe;

const keys = (o) => Object.keys(o).filter((k) => k !== 'lastResponse').sort();
const client = (port) => new Stripe(API_KEY, { host: '127.0.0.1', port, protocol: 'http', maxNetworkRetries: 0 });
let n = 0;
const freshKey = () => `ck_test_${process.pid}_${++n}`;

// What payorch's stripe adapter sends (providers/stripe/stripe_adapter.cpp).
const intentParams = (key, paymentMethod = 'pm_card_visa', amount = 1250) => ({
  amount, currency: 'eur', payment_method: paymentMethod, confirm: true,
  automatic_payment_methods: { enabled: true, allow_redirects: 'never' },
  metadata: { client_key: key, payee: 'acct_merchant_7' },
});

const eventsFor = (id) => receiver.deliveries.map((d) => JSON.parse(d.body)).filter((e) => e.data.object.id === id);

before(async () => {
  receiver = await startReceiver();
  emulator = await startEmulator({ webhookUrl: receiver.url });
  stripe = client(emulator.port);
});
after(async () => { await emulator.stop(); await receiver.close(); });

test('create+confirm succeeds, parses into a PaymentIntent with Stripe\'s field set, and retrieves', async () => {
  const key = freshKey();
  const pi = await stripe.paymentIntents.create(intentParams(key), { idempotencyKey: key });
  assert.equal(pi.object, 'payment_intent');
  assert.equal(pi.status, 'succeeded');
  assert.equal(pi.amount, 1250);
  assert.equal(pi.currency, 'eur');
  assert.deepEqual(pi.metadata, { client_key: key, payee: 'acct_merchant_7' });
  assert.deepEqual(keys(pi), keys(fixtures.payment_intent));
  const again = await stripe.paymentIntents.retrieve(pi.id);
  assert.deepEqual(again, pi);
  await waitFor(() => eventsFor(pi.id).some((e) => e.type === 'payment_intent.succeeded'), 'payment_intent.succeeded');
});

test('the same key and parameters replay the saved answer; other parameters are an idempotency error', async () => {
  const key = freshKey();
  const first = await stripe.paymentIntents.create(intentParams(key), { idempotencyKey: key });
  const replay = await stripe.paymentIntents.create(intentParams(key), { idempotencyKey: key });
  assert.equal(replay.id, first.id);
  assert.equal(replay.lastResponse.headers['idempotent-replayed'], 'true');
  await assert.rejects(stripe.paymentIntents.create(intentParams(key, 'pm_card_visa', 999), { idempotencyKey: key }),
    (e) => e instanceof Stripe.errors.StripeIdempotencyError && e.type === 'StripeIdempotencyError' && e.statusCode === 400);
  const ledger = await emulator.control('/_emu/ledger');
  assert.equal(ledger.payment_intents.filter((p) => p.metadata.client_key === key).length, 1);
});

test('a declined card is a StripeCardError carrying the PaymentIntent, replayed as such', async () => {
  const key = freshKey();
  const check = (e) => {
    assert.ok(e instanceof Stripe.errors.StripeCardError);
    assert.equal(e.statusCode, 402);
    assert.equal(e.code, 'card_declined');
    assert.equal(e.decline_code, 'insufficient_funds');
    assert.equal(e.payment_intent.status, 'requires_payment_method');
    assert.equal(e.payment_intent.last_payment_error.decline_code, 'insufficient_funds');
    assert.deepEqual(keys(e.payment_intent), keys(fixtures.payment_intent));
    return true;
  };
  const params = intentParams(key, 'pm_card_chargeDeclinedInsufficientFunds');
  await assert.rejects(stripe.paymentIntents.create(params, { idempotencyKey: key }), check);
  await assert.rejects(stripe.paymentIntents.create(params, { idempotencyKey: key }), check);
  const ledger = await emulator.control('/_emu/ledger');
  const pis = ledger.payment_intents.filter((p) => p.metadata.client_key === key);
  assert.equal(pis.length, 1);
  await waitFor(() => eventsFor(pis[0].id).some((e) => e.type === 'payment_intent.payment_failed'), 'payment_failed');
});

test('confirm without return_url needs allow_redirects=never (or payment_method_types)', async () => {
  const key = freshKey();
  const params = intentParams(key);
  delete params.automatic_payment_methods;
  await assert.rejects(stripe.paymentIntents.create(params, { idempotencyKey: key }),
    (e) => e instanceof Stripe.errors.StripeInvalidRequestError && e.statusCode === 400);
  // Nothing executed, so the key is still free (https://docs.stripe.com/api/idempotent_requests).
  const pi = await stripe.paymentIntents.create(intentParams(key), { idempotencyKey: key });
  assert.equal(pi.status, 'succeeded');
});

test('3-D Secure: requires_action, then succeeded with a webhook', async () => {
  const key = freshKey();
  const pi = await stripe.paymentIntents.create(intentParams(key, 'pm_card_authenticationRequired'), { idempotencyKey: key });
  assert.equal(pi.status, 'requires_action');
  assert.equal(pi.next_action.type, 'use_stripe_sdk');
  await waitFor(() => eventsFor(pi.id).some((e) => e.type === 'payment_intent.succeeded'), 'the succeeded webhook');
  assert.equal((await stripe.paymentIntents.retrieve(pi.id)).status, 'succeeded');
});

test('refunds: full field set, partial amounts, over-refund refused, replay', async () => {
  const key = freshKey();
  const pi = await stripe.paymentIntents.create(intentParams(key), { idempotencyKey: key });
  const rk = freshKey();
  const refund = await stripe.refunds.create({ payment_intent: pi.id, amount: 500, metadata: { client_key: rk } }, { idempotencyKey: rk });
  assert.equal(refund.object, 'refund');
  assert.equal(refund.status, 'succeeded');
  assert.equal(refund.amount, 500);
  assert.equal(refund.payment_intent, pi.id);
  assert.deepEqual(keys(refund), keys(fixtures.refund));
  assert.deepEqual(await stripe.refunds.retrieve(refund.id), refund);
  const replay = await stripe.refunds.create({ payment_intent: pi.id, amount: 500, metadata: { client_key: rk } }, { idempotencyKey: rk });
  assert.equal(replay.id, refund.id);
  const over = freshKey();
  await assert.rejects(stripe.refunds.create({ payment_intent: pi.id, amount: 751, metadata: { client_key: over } }, { idempotencyKey: over }),
    (e) => e instanceof Stripe.errors.StripeInvalidRequestError && e.code === 'amount_too_large');
  await waitFor(() => eventsFor(refund.id).some((e) => e.type === 'refund.created'), 'refund.created');
});

test('bad API key: StripeAuthenticationError', async () => {
  const other = new Stripe('sk_test_wrong', { host: '127.0.0.1', port: emulator.port, protocol: 'http', maxNetworkRetries: 0 });
  await assert.rejects(other.paymentIntents.retrieve('pi_x'), (e) => e instanceof Stripe.errors.StripeAuthenticationError);
});

test('webhooks verify with the library\'s constructEvent; events have Stripe\'s field set; a bad signature is refused', async () => {
  await waitFor(() => receiver.deliveries.length > 0, 'a webhook');
  for (const d of receiver.deliveries) {
    const event = stripe.webhooks.constructEvent(d.body, d.signature, WEBHOOK_SECRET);
    assert.equal(event.object, 'event');
    assert.deepEqual(keys(event), keys(fixtures.event));
  }
  const d = receiver.deliveries[0];
  assert.throws(() => stripe.webhooks.constructEvent(d.body, d.signature, 'whsec_other'),
    Stripe.errors.StripeSignatureVerificationError);
  assert.throws(() => stripe.webhooks.constructEvent(d.body + ' ', d.signature, WEBHOOK_SECRET),
    Stripe.errors.StripeSignatureVerificationError);
  const header = stripe.webhooks.generateTestHeaderString({ payload: d.body, secret: WEBHOOK_SECRET });
  assert.equal(stripe.webhooks.constructEvent(d.body, header, WEBHOOK_SECRET).id, JSON.parse(d.body).id);
});

test('commit_then_5xx: the library sees a 500, the replay under the same key returns the one PaymentIntent', async () => {
  const key = freshKey();
  await emulator.control('/_emu/faults', { mode: 'commit_then_5xx', count: 1 });
  await assert.rejects(stripe.paymentIntents.create(intentParams(key), { idempotencyKey: key }),
    (e) => e instanceof Stripe.errors.StripeAPIError && e.statusCode === 500);
  const pi = await stripe.paymentIntents.create(intentParams(key), { idempotencyKey: key });
  assert.equal(pi.status, 'succeeded');
  assert.equal(pi.lastResponse.headers['idempotent-replayed'], 'true');
  const ledger = await emulator.control('/_emu/ledger');
  assert.equal(ledger.payment_intents.filter((p) => p.metadata.client_key === key).length, 1);
});

test('fail_before_commit: nothing is done and nothing saved; the retry executes', async () => {
  const key = freshKey();
  await emulator.control('/_emu/faults', { mode: 'fail_before_commit', count: 1 });
  await assert.rejects(stripe.paymentIntents.create(intentParams(key), { idempotencyKey: key }),
    (e) => e.statusCode === 500);
  let ledger = await emulator.control('/_emu/ledger');
  assert.equal(ledger.payment_intents.filter((p) => p.metadata.client_key === key).length, 0);
  const pi = await stripe.paymentIntents.create(intentParams(key), { idempotencyKey: key });
  assert.equal(pi.lastResponse.headers['idempotent-replayed'], undefined);
  ledger = await emulator.control('/_emu/ledger');
  assert.equal(ledger.payment_intents.filter((p) => p.metadata.client_key === key).length, 1);
});

test('delayed_commit: a second request with the key while the first executes is a 409', async () => {
  const key = freshKey();
  await emulator.control('/_emu/faults', { mode: 'delayed_commit', count: 1, delay_ms: 400 });
  const first = stripe.paymentIntents.create(intentParams(key), { idempotencyKey: key });
  await new Promise((r) => setTimeout(r, 100));
  await assert.rejects(stripe.paymentIntents.create(intentParams(key), { idempotencyKey: key }),
    (e) => e.statusCode === 409 && e.code === 'idempotency_key_in_use');
  assert.equal((await first).status, 'succeeded');
});

test('commit_then_hang: no answer, but the PaymentIntent exists and a replay returns it', async () => {
  const key = freshKey();
  await emulator.control('/_emu/faults', { mode: 'commit_then_hang', count: 1 });
  const hanging = new Stripe(API_KEY, { host: '127.0.0.1', port: emulator.port, protocol: 'http', maxNetworkRetries: 0, timeout: 300 });
  await assert.rejects(hanging.paymentIntents.create(intentParams(key), { idempotencyKey: key }),
    (e) => e instanceof Stripe.errors.StripeConnectionError);
  const pi = await stripe.paymentIntents.create(intentParams(key), { idempotencyKey: key });
  assert.equal(pi.lastResponse.headers['idempotent-replayed'], 'true');
});

test('duplicate webhooks deliver each event twice; a failing endpoint is retried', async () => {
  await emulator.control('/_emu/faults', { duplicate_webhooks: true });
  let key = freshKey();
  let pi = await stripe.paymentIntents.create(intentParams(key), { idempotencyKey: key });
  await waitFor(() => eventsFor(pi.id).filter((e) => e.type === 'payment_intent.succeeded').length === 2, 'two deliveries');
  await emulator.control('/_emu/faults', { duplicate_webhooks: false });
  let failures = 2;
  receiver.status = () => (failures-- > 0 ? 500 : 200);
  key = freshKey();
  pi = await stripe.paymentIntents.create(intentParams(key), { idempotencyKey: key });
  await waitFor(() => receiver.deliveries.filter((d) => d.answered === 200 && JSON.parse(d.body).data.object.id === pi.id).length === 2,
    'both events delivered after retries');
  receiver.status = () => 200;
});

test('reorder_webhooks: a later event arrives before an earlier one', async () => {
  await emulator.control('/_emu/faults', { reorder_webhooks: true });
  try {
    const key = freshKey();
    const pi = await stripe.paymentIntents.create(intentParams(key), { idempotencyKey: key });
    await waitFor(() => eventsFor(pi.id).length === 2, 'both events');
    assert.deepEqual(eventsFor(pi.id).map((e) => e.type), ['payment_intent.succeeded', 'payment_intent.created']);
  } finally {
    await emulator.control('/_emu/faults', { reorder_webhooks: false });
  }
});

test('the ledger survives a restart: objects and saved answers are kept', async () => {
  const receiver2 = await startReceiver();
  const first = await startEmulator({ webhookUrl: receiver2.url });
  const key = freshKey();
  const pi = await client(first.port).paymentIntents.create(intentParams(key), { idempotencyKey: key });
  await first.stop('SIGKILL');
  const second = await startEmulator({ webhookUrl: receiver2.url, ledger: first.ledger });
  try {
    const again = client(second.port);
    assert.deepEqual(await again.paymentIntents.retrieve(pi.id), pi);
    const replay = await again.paymentIntents.create(intentParams(key), { idempotencyKey: key });
    assert.equal(replay.id, pi.id);
    assert.equal(replay.lastResponse.headers['idempotent-replayed'], 'true');
  } finally {
    await second.stop();
    await receiver2.close();
  }
});
