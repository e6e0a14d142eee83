'use strict';
// The WeChat Pay emulator driven by wechatpay-axios-plugin (the client signs every request and
// verifies every 2xx answer with the platform key; its Rsa/Formatter/Aes helpers check and
// decrypt the notifications), and its answers checked against the community OpenAPI
// description (schema_check.js). Run by ctest emulator_wechatpay.
const assert = require('node:assert/strict');
const {after, before, describe, test} = require('node:test');

const h = require('./harness');
const schema = require('./schema_check');

let n = 0;
const orderNo = (tag) => `ck_${tag}_${process.pid}_${++n}`.slice(0, 32);

function nativeOrder(outTradeNo, total, notifyUrl) {
  return {appid: h.appid, mchid: h.mchid, description: 'payorch test', out_trade_no: outTradeNo,
    notify_url: notifyUrl, amount: {total, currency: 'CNY'}};
}

async function refusal(promise) {
  try {
    await promise;
  } catch (err) {
    return {status: err.response.status, data: err.response.data};
  }
  throw new Error('expected a refusal');
}

describe('wechatpay emulator', () => {
  let dir;
  let emulator;
  let receiver;
  let wxpay;

  before(async () => {
    dir = h.tempDir();
    receiver = await h.startReceiver();
    emulator = await h.startEmulator({dir, extra: ['--close-min-delay-ms', '0', '--refund-delay-ms', '50']});
    wxpay = h.client(emulator);
  });
  after(async () => {
    await emulator.stop();
    await receiver.close();
  });

  test('native: the order waits for the user, who pays later; the notification verifies and decrypts', async () => {
    const no = orderNo('native');
    const created = await wxpay.v3.pay.transactions.native.post(nativeOrder(no, 1200, receiver.url));
    assert.equal(created.status, 200);
    assert.match(created.data.code_url, /^weixin:\/\/wxpay\/bizpayurl/);
    assert.deepEqual(schema.validateAnswer('native', created.data), []);
    // The same order again answers as before; another under the same key is refused.
    const again = await wxpay.v3.pay.transactions.native.post(nativeOrder(no, 1200, receiver.url));
    assert.equal(again.data.code_url, created.data.code_url);
    const other = await refusal(wxpay.v3.pay.transactions.native.post(nativeOrder(no, 1300, receiver.url)));
    assert.deepEqual([other.status, other.data.code], [403, 'OUT_TRADE_NO_USED']);
    const before = await wxpay.v3.pay.transactions.outTradeNo.$out_trade_no$.get({params: {mchid: h.mchid}, out_trade_no: no});
    assert.equal(before.data.trade_state, 'NOTPAY');
    assert.equal((await h.control(emulator, '/_emu/pay', {out_trade_no: no})).status, 200);
    const event = await h.waitFor(() => receiver.events.find((e) => e.plain.out_trade_no === no), {what: 'the payment notification'});
    assert.equal(event.event_type, 'TRANSACTION.SUCCESS');
    assert.equal(event.plain.trade_state, 'SUCCESS');
    assert.equal(event.plain.amount.total, 1200);
    const paid = await wxpay.v3.pay.transactions.outTradeNo.$out_trade_no$.get({params: {mchid: h.mchid}, out_trade_no: no});
    assert.equal(paid.data.trade_state, 'SUCCESS');
    assert.equal(paid.data.transaction_id, event.plain.transaction_id);
    assert.deepEqual(schema.validateAnswer('query', paid.data), []);
  });

  test('jsapi answers prepay_id; codepay pays at once or waits for the user', async () => {
    const js = await wxpay.v3.pay.transactions.jsapi.post({...nativeOrder(orderNo('jsapi'), 100, receiver.url), payer: {openid: 'o_user'}});
    assert.match(js.data.prepay_id, /^wx/);
    assert.deepEqual(schema.validateAnswer('jsapi', js.data), []);
    const code = {appid: h.appid, mchid: h.mchid, description: 'd', out_trade_no: orderNo('code'), amount: {total: 5, currency: 'CNY'},
      payer: {auth_code: '130061098828009406'}, scene_info: {store_info: {}}};
    const paid = await wxpay.v3.pay.transactions.codepay.post(code);
    assert.equal(paid.data.trade_state, 'SUCCESS');
    assert.deepEqual(schema.validateAnswer('codepay', paid.data), []);
    const waiting = await wxpay.v3.pay.transactions.codepay.post({...code, out_trade_no: orderNo('code'), payer: {auth_code: 'USERPAYING1'}});
    assert.equal(waiting.data.trade_state, 'USERPAYING');
  });

  test('close: unpaid closes (204), twice ORDER_CLOSED, paid ORDERPAID, unknown ORDER_NOT_EXIST; a closed order cannot be paid', async () => {
    const no = orderNo('close');
    await wxpay.v3.pay.transactions.native.post(nativeOrder(no, 300, receiver.url));
    const closed = await wxpay.v3.pay.transactions.outTradeNo.$out_trade_no$.close.post({mchid: h.mchid}, {out_trade_no: no});
    assert.equal(closed.status, 204);
    const twice = await refusal(wxpay.v3.pay.transactions.outTradeNo.$out_trade_no$.close.post({mchid: h.mchid}, {out_trade_no: no}));
    assert.deepEqual([twice.status, twice.data.code], [400, 'ORDER_CLOSED']);
    assert.equal((await h.control(emulator, '/_emu/pay', {out_trade_no: no})).status, 409);
    const q = await wxpay.v3.pay.transactions.outTradeNo.$out_trade_no$.get({params: {mchid: h.mchid}, out_trade_no: no});
    assert.equal(q.data.trade_state, 'CLOSED');
    const paidNo = orderNo('paid');
    await wxpay.v3.pay.transactions.native.post(nativeOrder(paidNo, 300, receiver.url));
    await h.control(emulator, '/_emu/pay', {out_trade_no: paidNo});
    const paid = await refusal(wxpay.v3.pay.transactions.outTradeNo.$out_trade_no$.close.post({mchid: h.mchid}, {out_trade_no: paidNo}));
    assert.deepEqual([paid.status, paid.data.code], [400, 'ORDERPAID']);
    const missing = await refusal(wxpay.v3.pay.transactions.outTradeNo.$out_trade_no$.close.post({mchid: h.mchid}, {out_trade_no: 'ck_nothing_here'}));
    assert.deepEqual([missing.status, missing.data.code], [404, 'ORDER_NOT_EXIST']);
  });

  test('close before the minimum delay is refused', async () => {
    await h.control(emulator, '/_emu/settings', {close_min_delay_ms: 300000});
    try {
      const no = orderNo('early');
      await wxpay.v3.pay.transactions.native.post(nativeOrder(no, 300, receiver.url));
      const early = await refusal(wxpay.v3.pay.transactions.outTradeNo.$out_trade_no$.close.post({mchid: h.mchid}, {out_trade_no: no}));
      assert.deepEqual([early.status, early.data.code], [403, 'RULE_LIMIT']);
    } finally {
      await h.control(emulator, '/_emu/settings', {close_min_delay_ms: 0});
    }
  });

  test('refund: PROCESSING, then SUCCESS by notification and query; the order becomes REFUND', async () => {
    const no = orderNo('refund');
    await wxpay.v3.pay.transactions.native.post(nativeOrder(no, 1000, receiver.url));
    await h.control(emulator, '/_emu/pay', {out_trade_no: no});
    const refundNo = orderNo('rf');
    const created = await wxpay.v3.refund.domestic.refunds.post({out_trade_no: no, out_refund_no: refundNo,
      notify_url: receiver.url, amount: {refund: 400, total: 1000, currency: 'CNY'}});
    assert.equal(created.data.status, 'PROCESSING');
    assert.deepEqual(schema.validateAnswer('refund', created.data), []);
    const event = await h.waitFor(() => receiver.events.find((e) => e.plain.out_refund_no === refundNo), {what: 'the refund notification'});
    assert.equal(event.event_type, 'REFUND.SUCCESS');
    assert.equal(event.plain.refund_status, 'SUCCESS');
    const q = await wxpay.v3.refund.domestic.refunds.$out_refund_no$.get({out_refund_no: refundNo});
    assert.equal(q.data.status, 'SUCCESS');
    assert.deepEqual(schema.validateAnswer('refund_query', q.data), []);
    const order = await wxpay.v3.pay.transactions.outTradeNo.$out_trade_no$.get({params: {mchid: h.mchid}, out_trade_no: no});
    assert.equal(order.data.trade_state, 'REFUND');
    const over = await refusal(wxpay.v3.refund.domestic.refunds.post({out_trade_no: no, out_refund_no: orderNo('rf'),
      amount: {refund: 601, total: 1000, currency: 'CNY'}}));
    assert.equal(over.status, 400);
    const missing = await refusal(wxpay.v3.refund.domestic.refunds.$out_refund_no$.get({out_refund_no: 'ck_no_refund'}));
    assert.deepEqual([missing.status, missing.data.code], [404, 'RESOURCE_NOT_EXISTS']);
  });

  test('a request signed with another key is refused 401 SIGN_ERROR', async () => {
    const forger = h.client(emulator, {privateKey: h.key('other_private.pem')});
    const refused = await refusal(forger.v3.pay.transactions.native.post(nativeOrder(orderNo('forged'), 1, receiver.url)));
    assert.deepEqual([refused.status, refused.data.code], [401, 'SIGN_ERROR']);
  });

  test('a body outside the description is refused PARAM_ERROR and recorded', async () => {
    const refused = await refusal(wxpay.v3.pay.transactions.native.post({...nativeOrder(orderNo('schema'), 1, receiver.url), colour: 'red'}));
    assert.deepEqual([refused.status, refused.data.code], [400, 'PARAM_ERROR']);
    const problems = await h.control(emulator, '/_emu/schema_problems');
    assert.ok(problems.body.some((p) => p.includes('colour')));
  });

  test('faults: fail_before_commit stores nothing; commit_then_5xx stores the order', async () => {
    const lost = orderNo('f1');
    await h.control(emulator, '/_emu/faults', {mode: 'fail_before_commit', count: 1});
    assert.equal((await refusal(wxpay.v3.pay.transactions.native.post(nativeOrder(lost, 1, receiver.url)))).status, 500);
    assert.equal((await refusal(wxpay.v3.pay.transactions.outTradeNo.$out_trade_no$.get({params: {mchid: h.mchid}, out_trade_no: lost}))).status, 404);
    const kept = orderNo('f2');
    await h.control(emulator, '/_emu/faults', {mode: 'commit_then_5xx', count: 1});
    assert.equal((await refusal(wxpay.v3.pay.transactions.native.post(nativeOrder(kept, 1, receiver.url)))).status, 500);
    const q = await wxpay.v3.pay.transactions.outTradeNo.$out_trade_no$.get({params: {mchid: h.mchid}, out_trade_no: kept});
    assert.equal(q.data.trade_state, 'NOTPAY');
  });
});

describe('wechatpay emulator notifications', () => {
  test('duplicates on request; held notifications released newest first; a restart keeps what is undelivered', async () => {
    const dir = h.tempDir();
    const receiver = await h.startReceiver();
    let emulator = await h.startEmulator({dir, extra: ['--refund-delay-ms', '20']});
    try {
      let wxpay = h.client(emulator);
      const no = orderNo('dup');
      await h.control(emulator, '/_emu/switches', {duplicate_notifications: true});
      await wxpay.v3.pay.transactions.native.post(nativeOrder(no, 9, receiver.url));
      await h.control(emulator, '/_emu/pay', {out_trade_no: no});
      await h.waitFor(() => receiver.events.filter((e) => e.plain.out_trade_no === no).length === 2, {what: 'the duplicate'});
      const [first, second] = receiver.events.filter((e) => e.plain.out_trade_no === no);
      assert.equal(first.id, second.id);
      await h.control(emulator, '/_emu/switches', {duplicate_notifications: false, hold_notifications: true});
      const later = orderNo('held');
      await wxpay.v3.pay.transactions.native.post(nativeOrder(later, 10, receiver.url));
      await h.control(emulator, '/_emu/pay', {out_trade_no: later});
      await wxpay.v3.refund.domestic.refunds.post({out_trade_no: later, out_refund_no: orderNo('hr'), notify_url: receiver.url,
        amount: {refund: 10, total: 10, currency: 'CNY'}});
      await h.waitFor(async () => (await h.control(emulator, '/_emu/ledger')).body.notifications.pending === 2, {what: 'two held'});
      // A restart (kill -9) keeps the held notifications; released newest first, the refund's comes first.
      emulator.proc.kill('SIGKILL');
      await new Promise((r) => emulator.proc.once('exit', r));
      emulator = await h.startEmulator({dir, extra: ['--refund-delay-ms', '20', '--hold-notifications', '1']});
      wxpay = h.client(emulator);
      const before = receiver.events.length;
      await h.control(emulator, '/_emu/release_notifications', {reverse: true});
      const released = receiver.events.slice(before);
      assert.deepEqual(released.map((e) => e.event_type), ['REFUND.SUCCESS', 'TRANSACTION.SUCCESS']);
      const q = await wxpay.v3.pay.transactions.outTradeNo.$out_trade_no$.get({params: {mchid: h.mchid}, out_trade_no: later});
      assert.equal(q.data.trade_state, 'REFUND');
    } finally {
      await emulator.stop();
      await receiver.close();
    }
  });

  test('delayed_commit answers 500 at once and commits later', async () => {
    const dir = h.tempDir();
    const emulator = await h.startEmulator({dir});
    try {
      const wxpay = h.client(emulator);
      const no = orderNo('delayed');
      await h.control(emulator, '/_emu/faults', {mode: 'delayed_commit', count: 1, delay_ms: 100});
      await assert.rejects(wxpay.v3.pay.transactions.native.post(nativeOrder(no, 3, 'http://127.0.0.1:9/none')),
        (err) => err.response.status === 500 && err.response.data.code === 'SYSTEM_ERROR');
      await h.waitFor(async () => (await h.control(emulator, '/_emu/ledger')).body.orders.some((o) => o.out_trade_no === no),
        {what: 'the delayed commit'});
    } finally {
      await emulator.stop();
    }
  });

  test('a refused notification is retried on the documented schedule (scaled) until 204', async () => {
    const dir = h.tempDir();
    const receiver = await h.startReceiver({refuse: 2});
    const emulator = await h.startEmulator({dir, extra: ['--notify-scale', '0.002']});
    try {
      const wxpay = h.client(emulator);
      const no = orderNo('retry');
      await wxpay.v3.pay.transactions.native.post(nativeOrder(no, 7, receiver.url));
      await h.control(emulator, '/_emu/pay', {out_trade_no: no});
      await h.waitFor(() => receiver.events.length === 1, {what: 'the third delivery'});
      assert.equal(receiver.deliveries, 3);
      // 15 s and 15 s, times 0.002: about 30 ms each.
      assert.ok(receiver.times[1] - receiver.times[0] >= 25);
      const ledger = await h.control(emulator, '/_emu/ledger');
      assert.equal(ledger.body.notifications.delivered, 1);
    } finally {
      await emulator.stop();
      await receiver.close();
    }
  });
});
