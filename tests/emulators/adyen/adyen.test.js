'use strict';
// The Adyen emulator driven by the official @adyen/api-library (CheckoutAPI PaymentsApi and
// ModificationsApi over TLS), its answers checked against CheckoutService-v71.json's schemas,
// its webhooks checked with the library's HmacValidator. Run: node --test tests/emulators/adyen/
const assert = require('node:assert/strict');
const {after, before, describe, test} = require('node:test');
const fs = require('node:fs');

const {Client, CheckoutAPI} = require('@adyen/api-library');

const h = require('./harness');
const {loadSpec, validate} = require('./schema_check');

const spec = loadSpec();

function assertSchema(name, value) {
  assert.deepEqual(validate(spec, name, value), [], `${name}: ${JSON.stringify(value)}`);
}

function paymentRequest(reference, storedPaymentMethodId, value = 1250) {
  return {
    amount: {value, currency: 'EUR'}, merchantAccount: h.merchantAccount, reference,
    paymentMethod: {type: 'scheme', storedPaymentMethodId},
    shopperReference: 'shopper_42', shopperInteraction: 'ContAuth',
    recurringProcessingModel: 'UnscheduledCardOnFile', returnUrl: 'https://payorch.invalid/adyen/return',
    metadata: {payee: 'acct_merchant_7'},
  };
}

describe('adyen emulator with @adyen/api-library', () => {
  let dir; let tls; let receiver; let emulator; let payments; let modifications;

  function libraryApis(apiKey = h.apiKey) {
    const client = new Client({apiKey, environment: 'TEST', certificatePath: tls.cert});
    const checkout = new CheckoutAPI(client);
    const p = checkout.PaymentsApi;
    const m = checkout.ModificationsApi;
    // The library's own URLs name Adyen's test host; a custom endpoint points them here.
    p.baseUrl = `${emulator.base}/v72`;
    m.baseUrl = `${emulator.base}/v72`;
    return {payments: p, modifications: m};
  }

  before(async () => {
    dir = h.tempDir();
    tls = h.makeCertificate(dir);
    receiver = await h.startReceiver();
    emulator = await h.startEmulator({dir, tls, webhookUrl: receiver.url});
    ({payments, modifications} = libraryApis());
  });
  after(async () => {
    await emulator.stop();
    await receiver.close();
    fs.rmSync(dir, {recursive: true, force: true});
  });

  test('Authorised, replayed with the same idempotency key', async () => {
    const first = await payments.payments(paymentRequest('ck_lib_ok', 'stored_authorised'), {idempotencyKey: 'ck_lib_ok'});
    assert.equal(first.resultCode, 'Authorised');
    assert.equal(first.merchantReference, 'ck_lib_ok');
    assert.equal(first.amount.value, 1250);
    const again = await payments.payments(paymentRequest('ck_lib_ok', 'stored_authorised'), {idempotencyKey: 'ck_lib_ok'});
    assert.equal(again.pspReference, first.pspReference);
    const r = await h.raw(emulator, tls, 'POST', '/v71/payments', {body: paymentRequest('ck_lib_ok', 'stored_authorised'),
      headers: {'X-API-Key': h.apiKey, 'idempotency-key': 'ck_lib_ok'}});
    assert.equal(r.status, 200);
    assert.equal(r.headers['idempotency-key'], 'ck_lib_ok');
    assert.equal(r.body.pspReference, first.pspReference);
    assertSchema('PaymentResponse', r.body);
    const ledger = (await h.raw(emulator, tls, 'GET', '/_emu/ledger')).body;
    assert.equal(ledger.payments.filter((p) => p.reference === 'ck_lib_ok').length, 1);
    const item = await h.waitFor(() => receiver.items.find((i) => i.merchantReference === 'ck_lib_ok'), {what: 'AUTHORISATION webhook'});
    assert.equal(item.eventCode, 'AUTHORISATION');
    assert.equal(item.success, 'true');
    assert.equal(item.pspReference, first.pspReference);
  });

  test('Refused carries the refusal reason, and its webhook success=false', async () => {
    const res = await payments.payments(paymentRequest('ck_lib_refused', 'stored_refused'), {idempotencyKey: 'ck_lib_refused'});
    assert.equal(res.resultCode, 'Refused');
    assert.equal(res.refusalReason, 'Not enough balance');
    const item = await h.waitFor(() => receiver.items.find((i) => i.merchantReference === 'ck_lib_refused'), {what: 'webhook'});
    assert.equal(item.success, 'false');
    assert.equal(item.reason, 'Not enough balance');
  });

  test('Received, then authorised by webhook', async () => {
    const res = await payments.payments(paymentRequest('ck_lib_received', 'stored_received'), {idempotencyKey: 'ck_lib_received'});
    assert.equal(res.resultCode, 'Received');
    const item = await h.waitFor(() => receiver.items.find((i) => i.merchantReference === 'ck_lib_received'), {what: 'webhook'});
    assert.equal(item.eventCode, 'AUTHORISATION');
    assert.equal(item.success, 'true');
    assert.equal(item.pspReference, res.pspReference);
  });

  test('refund and cancel through ModificationsApi', async () => {
    const paid = await payments.payments(paymentRequest('ck_lib_refunded', 'stored_authorised'), {idempotencyKey: 'ck_lib_refunded'});
    const refundRequest = {amount: {value: 500, currency: 'EUR'}, merchantAccount: h.merchantAccount, reference: 'ck_lib_refund_1'};
    const refund = await modifications.refundCapturedPayment(paid.pspReference, refundRequest, {idempotencyKey: 'ck_lib_refund_1'});
    assert.equal(refund.status, 'received');
    assert.equal(refund.paymentPspReference, paid.pspReference);
    const replay = await modifications.refundCapturedPayment(paid.pspReference, refundRequest, {idempotencyKey: 'ck_lib_refund_1'});
    assert.equal(replay.pspReference, refund.pspReference);
    const item = await h.waitFor(() => receiver.items.find((i) => i.eventCode === 'REFUND' && i.merchantReference === 'ck_lib_refund_1'), {what: 'REFUND webhook'});
    assert.equal(item.success, 'true');
    assert.equal(item.originalReference, paid.pspReference);
    const over = await h.raw(emulator, tls, 'POST', `/v71/payments/${paid.pspReference}/refunds`, {
      body: {...refundRequest, amount: {value: 1000, currency: 'EUR'}, reference: 'ck_lib_refund_2'},
      headers: {'X-API-Key': h.apiKey, 'idempotency-key': 'ck_lib_refund_2'}});
    assert.equal(over.status, 201);
    assertSchema('PaymentRefundResponse', over.body);
    const declined = await h.waitFor(() => receiver.items.find((i) => i.merchantReference === 'ck_lib_refund_2'), {what: 'REFUND webhook'});
    assert.equal(declined.success, 'false');

    await payments.payments(paymentRequest('ck_lib_cancelled', 'stored_authorised'), {idempotencyKey: 'ck_lib_cancelled'});
    const cancel = await modifications.cancelAuthorisedPayment({merchantAccount: h.merchantAccount, paymentReference: 'ck_lib_cancelled'},
      {idempotencyKey: 'ck_lib_cancelled-cancel'});
    assert.equal(cancel.status, 'received');
    assert.equal(cancel.paymentReference, 'ck_lib_cancelled');
    const rawCancel = await h.raw(emulator, tls, 'POST', '/v71/cancels', {
      body: {merchantAccount: h.merchantAccount, paymentReference: 'ck_lib_cancelled'},
      headers: {'X-API-Key': h.apiKey, 'idempotency-key': 'ck_lib_cancelled-cancel'}});
    assertSchema('StandalonePaymentCancelResponse', rawCancel.body);
    const cancelled = await h.waitFor(() => receiver.items.find((i) => i.eventCode === 'TECHNICAL_CANCEL' && i.merchantReference === 'ck_lib_cancelled'), {what: 'TECHNICAL_CANCEL webhook'});
    assert.equal(cancelled.success, 'true');
  });

  test('errors: a wrong API key, a validation error, a key still in progress', async () => {
    const {payments: wrong} = libraryApis('not-the-key');
    await assert.rejects(wrong.payments(paymentRequest('ck_lib_401', 'stored_authorised')), (e) => e.statusCode === 401);
    const unauthorised = await h.raw(emulator, tls, 'POST', '/v71/payments', {body: {}, headers: {'X-API-Key': 'nope'}});
    assertSchema('ServiceError', unauthorised.body);
    const invalid = await h.raw(emulator, tls, 'POST', '/v71/payments', {body: {reference: 'x'}, headers: {'X-API-Key': h.apiKey}});
    assert.equal(invalid.status, 422);
    assertSchema('ServiceError', invalid.body);
    await assert.rejects(payments.payments(paymentRequest('ck_lib_unknown', 'stored_nothing')), (e) => e.statusCode === 422 && e.errorCode === '803');

    await h.raw(emulator, tls, 'POST', '/_emu/faults', {body: {mode: 'delayed_commit', count: 1, delay_ms: 400}});
    const slow = payments.payments(paymentRequest('ck_lib_busy', 'stored_authorised'), {idempotencyKey: 'ck_lib_busy'});
    await new Promise((r) => setTimeout(r, 100));
    const busy = await h.raw(emulator, tls, 'POST', '/v71/payments', {body: paymentRequest('ck_lib_busy', 'stored_authorised'),
      headers: {'X-API-Key': h.apiKey, 'idempotency-key': 'ck_lib_busy'}});
    assert.equal(busy.status, 409);
    assert.equal(busy.body.errorCode, '704');
    assert.equal(busy.headers['transient-error'], 'true');
    assertSchema('ServiceError', busy.body);
    assert.equal((await slow).resultCode, 'Authorised');
  });

  test('commit_then_5xx: the library sees a 500, the same key recovers the one payment', async () => {
    await h.raw(emulator, tls, 'POST', '/_emu/faults', {body: {mode: 'commit_then_5xx', count: 1}});
    await assert.rejects(payments.payments(paymentRequest('ck_lib_5xx', 'stored_authorised'), {idempotencyKey: 'ck_lib_5xx'}),
      (e) => e.statusCode === 500);
    const again = await payments.payments(paymentRequest('ck_lib_5xx', 'stored_authorised'), {idempotencyKey: 'ck_lib_5xx'});
    assert.equal(again.resultCode, 'Authorised');
    const ledger = (await h.raw(emulator, tls, 'GET', '/_emu/ledger')).body;
    assert.equal(ledger.payments.filter((p) => p.reference === 'ck_lib_5xx').length, 1);

    await h.raw(emulator, tls, 'POST', '/_emu/faults', {body: {mode: 'fail_before_commit', count: 1}});
    await assert.rejects(payments.payments(paymentRequest('ck_lib_nothing', 'stored_authorised'), {idempotencyKey: 'ck_lib_nothing'}),
      (e) => e.statusCode === 500);
    const after5xx = (await h.raw(emulator, tls, 'GET', '/_emu/ledger')).body;
    assert.equal(after5xx.payments.filter((p) => p.reference === 'ck_lib_nothing').length, 0);
  });

  test('a fault with count -1 and a path meets every matching request, replays of a stored key too', async () => {
    await h.raw(emulator, tls, 'POST', '/_emu/faults', {body: {mode: 'commit_then_5xx', count: -1, path: '/payments$'}});
    const headers = {'X-API-Key': h.apiKey, 'idempotency-key': 'ck_lib_always'};
    for (let i = 0; i < 3; i += 1) {
      const r = await h.raw(emulator, tls, 'POST', '/v71/payments', {body: paymentRequest('ck_lib_always', 'stored_received'), headers});
      assert.equal(r.status, 500);
    }
    // Another path is untouched: the cancel by reference goes through.
    const cancel = await h.raw(emulator, tls, 'POST', '/v71/cancels', {
      body: {merchantAccount: h.merchantAccount, paymentReference: 'ck_lib_always'},
      headers: {'X-API-Key': h.apiKey, 'idempotency-key': 'ck_lib_always-cancel'}});
    assert.equal(cancel.status, 201);
    await h.raw(emulator, tls, 'POST', '/_emu/faults', {body: {mode: null}});
    const ledger = (await h.raw(emulator, tls, 'GET', '/_emu/ledger')).body;
    const paid = ledger.payments.filter((p) => p.reference === 'ck_lib_always');
    assert.equal(paid.length, 1);
    assert.equal(paid[0].resultCode, 'Cancelled');
    const replay = await h.raw(emulator, tls, 'POST', '/v71/payments', {body: paymentRequest('ck_lib_always', 'stored_received'), headers});
    assert.equal(replay.status, 200);
    assert.equal(replay.body.resultCode, 'Received');
  });
});

describe('adyen emulator durability and webhook delivery', () => {
  test('the ledger survives a restart; the same key replays the stored answer', async () => {
    const dir = h.tempDir();
    let emulator = await h.startEmulator({dir});
    const headers = {'X-API-Key': h.apiKey, 'idempotency-key': 'ck_durable'};
    const first = await h.raw(emulator, null, 'POST', '/v71/payments', {body: paymentRequest('ck_durable', 'stored_authorised'), headers});
    assert.equal(first.status, 200);
    await emulator.stop();
    emulator = await h.startEmulator({dir, ledger: emulator.ledger});
    const again = await h.raw(emulator, null, 'POST', '/v71/payments', {body: paymentRequest('ck_durable', 'stored_authorised'), headers});
    assert.deepEqual(again.body, first.body);
    const ledger = (await h.raw(emulator, null, 'GET', '/_emu/ledger')).body;
    assert.equal(ledger.payments.length, 1);
    await emulator.stop();
    fs.rmSync(dir, {recursive: true, force: true});
  });

  test('webhooks are retried until [accepted], duplicated and batched on request', async () => {
    const dir = h.tempDir();
    const receiver = await h.startReceiver({refuse: 2});
    const emulator = await h.startEmulator({dir, webhookUrl: receiver.url});
    await h.raw(emulator, null, 'POST', '/_emu/switches', {body: {duplicate_webhooks: true}});
    const headers = (k) => ({'X-API-Key': h.apiKey, 'idempotency-key': k});
    for (const k of ['ck_w1', 'ck_w2', 'ck_w3'])
      await h.raw(emulator, null, 'POST', '/v71/payments', {body: paymentRequest(k, 'stored_authorised'), headers: headers(k)});
    await h.waitFor(() => ['ck_w1', 'ck_w2', 'ck_w3'].every((k) => receiver.items.filter((i) => i.merchantReference === k).length >= 2),
      {what: 'every webhook twice'});
    assert.ok(receiver.deliveries > 2);
    assert.ok(receiver.bodies.some((b) => JSON.parse(b).notificationItems.length > 1), 'some delivery carries several items');
    await h.waitFor(async () => (await h.raw(emulator, null, 'GET', '/_emu/ledger')).body.webhooks.pending === 0, {what: 'delivered'});
    await emulator.stop();
    await receiver.close();
    fs.rmSync(dir, {recursive: true, force: true});
  });

  test('a receiver with another HMAC key refuses every delivery; nothing counts as delivered', async () => {
    const dir = h.tempDir();
    const receiver = await h.startReceiver({key: 'AB'.repeat(32)});
    const emulator = await h.startEmulator({dir, webhookUrl: receiver.url});
    await h.raw(emulator, null, 'POST', '/v71/payments', {body: paymentRequest('ck_badkey', 'stored_authorised'),
      headers: {'X-API-Key': h.apiKey}});
    await h.waitFor(() => receiver.rejected >= 2, {what: 'two refused deliveries'});
    assert.equal(receiver.items.length, 0);
    assert.equal((await h.raw(emulator, null, 'GET', '/_emu/ledger')).body.webhooks.pending, 1);
    await emulator.stop();
    await receiver.close();
    fs.rmSync(dir, {recursive: true, force: true});
  });
});
