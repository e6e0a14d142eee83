'use strict';
// The Alipay emulator driven by alipay-sdk 4.14.0 (the official Node SDK): its `exec` signs
// every request (the emulator refuses other signatures), `validateSign` checks every answer
// with the Alipay public key, and its checkNotifySignV2 checks every notification.
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const {after, before, describe, test} = require('node:test');

const h = require('./harness');

let dir;
let emulator;
let client;
let receiver;
let sequence = 0;

const key = () => `ck_${Date.now()}${(sequence += 1)}`;
const exec = (method, bizContent, extra = {}) =>
  client.exec(method, {bizContent, notifyUrl: receiver.url, ...extra}, {validateSign: true});
const pay = (outTradeNo, authCode, amount = '12.34') =>
  exec('alipay.trade.pay', {outTradeNo, scene: 'bar_code', authCode, subject: 'payorch', totalAmount: amount});
const query = (outTradeNo) => exec('alipay.trade.query', {outTradeNo});
const close = (outTradeNo) => exec('alipay.trade.close', {outTradeNo});

before(async () => {
  dir = h.tempDir();
  emulator = await h.startEmulator({dir});
  client = h.sdk(emulator);
  receiver = await h.startReceiver({client});
  await emulator.control('/_emu/switches', {retry_scale: 0.0001});
});

after(async () => {
  await emulator.stop();
  await receiver.close();
});

describe('alipay.trade.pay', () => {
  test('a buyer who pays at once: 10000, TRADE_SUCCESS, and a signed notification', async () => {
    const no = key();
    const r = await pay(no, '28763443825664391');
    assert.equal(r.code, '10000');
    assert.equal(r.outTradeNo, no);
    assert.equal(r.totalAmount, '12.34');
    assert.match(r.tradeNo, /^\d{28}$/);
    assert.equal((await query(no)).tradeStatus, 'TRADE_SUCCESS');
    const n = await h.waitFor(() => receiver.notifications.find((x) => x.out_trade_no === no), {what: 'notification'});
    assert.equal(n.trade_status, 'TRADE_SUCCESS');
    assert.equal(n.total_amount, '12.34');
    assert.equal(n.app_id, h.appId);
  });

  test('a buyer who confirms later: 10003, WAIT_BUYER_PAY until the buyer pays; a paid trade cannot be closed', async () => {
    const no = key();
    const r = await pay(no, '28763443825664392');
    assert.equal(r.code, '10003');
    assert.equal((await query(no)).tradeStatus, 'WAIT_BUYER_PAY');
    assert.equal((await pay(no, '28763443825664392')).code, '10003');  // the same order again
    assert.equal((await emulator.control('/_emu/pay', {out_trade_no: no})).status, 200);
    assert.equal((await query(no)).tradeStatus, 'TRADE_SUCCESS');
    const c = await close(no);
    assert.equal(c.code, '40004');
    assert.equal(c.subCode, 'ACQ.TRADE_STATUS_ERROR');
    assert.equal((await pay(no, '28763443825664392')).subCode, 'ACQ.TRADE_HAS_SUCCESS');
    assert.equal((await pay(no, '28763443825664392', '1.00')).subCode, 'ACQ.CONTEXT_INCONSISTENT');
  });

  test('refusals: too little money, an invalid auth_code', async () => {
    const poor = await pay(key(), '28763443825664393');
    assert.deepEqual([poor.code, poor.subCode], ['40004', 'ACQ.BUYER_BALANCE_NOT_ENOUGH']);
    const bad = await pay(key(), '1234');
    assert.deepEqual([bad.code, bad.subCode], ['40004', 'ACQ.PAYMENT_AUTH_CODE_INVALID']);
  });
});

describe('alipay.trade.precreate and alipay.trade.close', () => {
  test('an unscanned QR code does not exist for query or close; a closed trade can never be paid', async () => {
    const no = key();
    const r = await exec('alipay.trade.precreate', {outTradeNo: no, totalAmount: '8.00', subject: 'payorch'});
    assert.equal(r.code, '10000');
    assert.match(r.qrCode, /^https:\/\//);
    assert.equal((await query(no)).subCode, 'ACQ.TRADE_NOT_EXIST');
    assert.equal((await close(no)).subCode, 'ACQ.TRADE_NOT_EXIST');
    await emulator.control('/_emu/scan', {out_trade_no: no});
    assert.equal((await query(no)).tradeStatus, 'WAIT_BUYER_PAY');
    const c = await close(no);
    assert.equal(c.code, '10000');
    assert.equal(c.outTradeNo, no);
    assert.equal((await emulator.control('/_emu/pay', {out_trade_no: no})).status, 409);
    assert.equal((await query(no)).tradeStatus, 'TRADE_CLOSED');
    assert.equal((await close(no)).subCode, 'ACQ.TRADE_STATUS_ERROR');
    const n = await h.waitFor(() => receiver.notifications.find((x) => x.out_trade_no === no), {what: 'close notification'});
    assert.equal(n.trade_status, 'TRADE_CLOSED');
  });

  test('a close earlier than the configured minimum delay is refused (ACQ.SYSTEM_ERROR)', async () => {
    await emulator.control('/_emu/min_close_delay', {ms: 60000});
    try {
      const no = key();
      await pay(no, '28763443825664392');
      assert.equal((await close(no)).subCode, 'ACQ.SYSTEM_ERROR');
      assert.equal((await query(no)).tradeStatus, 'WAIT_BUYER_PAY');
    } finally {
      await emulator.control('/_emu/min_close_delay', {ms: 0});
    }
  });
});

describe('alipay.trade.refund and alipay.trade.fastpay.refund.query', () => {
  test('a refund by out_request_no, its repeat, its query, and too much', async () => {
    const no = key();
    await pay(no, '28763443825664391', '10.00');
    const r = await exec('alipay.trade.refund', {outTradeNo: no, refundAmount: '4.00', outRequestNo: `${no}_r1`});
    assert.deepEqual([r.code, r.fundChange, r.refundFee], ['10000', 'Y', '4.00']);
    const again = await exec('alipay.trade.refund', {outTradeNo: no, refundAmount: '4.00', outRequestNo: `${no}_r1`});
    assert.deepEqual([again.code, again.fundChange], ['10000', 'N']);
    const q = await exec('alipay.trade.fastpay.refund.query', {outTradeNo: no, outRequestNo: `${no}_r1`});
    assert.deepEqual([q.code, q.refundStatus, q.refundAmount], ['10000', 'REFUND_SUCCESS', '4.00']);
    const none = await exec('alipay.trade.fastpay.refund.query', {outTradeNo: no, outRequestNo: `${no}_r9`});
    assert.equal(none.code, '10000');
    assert.equal(none.refundStatus, undefined);
    const over = await exec('alipay.trade.refund', {outTradeNo: no, refundAmount: '7.00', outRequestNo: `${no}_r2`});
    assert.equal(over.subCode, 'ACQ.REASON_TRADE_REFUND_FEE_ERR');
    const n = await h.waitFor(() => receiver.notifications.find((x) => x.out_biz_no === `${no}_r1`), {what: 'refund notification'});
    assert.equal(n.refund_fee, '4.00');
  });
});

describe('signatures', () => {
  test('a request signed with another key is refused: 40002 isv.invalid-signature', async () => {
    const {privateKey} = crypto.generateKeyPairSync('rsa', {modulusLength: 2048});
    const stranger = h.sdk(emulator, {privateKey: privateKey.export({type: 'pkcs8', format: 'pem'})});
    const r = await stranger.exec('alipay.trade.query', {bizContent: {outTradeNo: 'x'}}, {validateSign: true});
    assert.deepEqual([r.code, r.subCode], ['40002', 'isv.invalid-signature']);
  });

  test('an answer checked with another Alipay public key fails alipay-sdk validateSign', async () => {
    const {publicKey} = crypto.generateKeyPairSync('rsa', {modulusLength: 2048});
    const wary = h.sdk(emulator, {publicKey: publicKey.export({type: 'spki', format: 'pem'})});
    await assert.rejects(wary.exec('alipay.trade.query', {bizContent: {outTradeNo: 'x'}}, {validateSign: true}), /验签失败/);
  });

  test('an unknown method is answered in error_response', async () => {
    const r = await client.exec('alipay.trade.nothing', {bizContent: {}});
    assert.deepEqual([r.code, r.subCode], ['40002', 'isv.invalid-method']);
  });
});

describe('notifications', () => {
  test('an unacknowledged notification is sent again (same notify_id) until "success"', async () => {
    const picky = await h.startReceiver({client, refuse: 2});
    await emulator.control('/_emu/notify_url', {url: picky.url});
    try {
      const no = key();
      await pay(no, '28763443825664391');
      await h.waitFor(() => picky.notifications.length === 1, {what: 'the third delivery'});
      const ledger = (await emulator.control('/_emu/ledger')).body;
      const sends = ledger.deliveries.filter((d) => d.out_trade_no === no);
      assert.deepEqual(sends.map((d) => d.attempt), [1, 2, 3]);
      assert.deepEqual(sends.map((d) => d.acknowledged), [false, false, true]);
      assert.equal(new Set(sends.map((d) => d.notify_id)).size, 1);
    } finally {
      await emulator.control('/_emu/notify_url', {url: null});
      await picky.close();
    }
  });

  test('duplicate: every notification twice', async () => {
    await emulator.control('/_emu/switches', {duplicate: true});
    try {
      const no = key();
      await pay(no, '28763443825664391');
      await h.waitFor(() => receiver.notifications.filter((x) => x.out_trade_no === no).length === 2, {what: 'two deliveries'});
    } finally {
      await emulator.control('/_emu/switches', {duplicate: false});
    }
  });
});

describe('notifications, reordered', () => {
  test('reorder: a notification is held back until the next one is sent', async () => {
    await emulator.control('/_emu/switches', {reorder: true});
    try {
      const [first, second] = [key(), key()];
      await pay(first, '28763443825664391');
      await pay(second, '28763443825664391');
      const order = await h.waitFor(() => {
        const seen = receiver.notifications.map((n) => n.out_trade_no).filter((no) => no === first || no === second);
        return seen.length === 2 && seen;
      }, {what: 'both notifications'});
      assert.deepEqual(order, [second, first]);
    } finally {
      await emulator.control('/_emu/switches', {reorder: false});
    }
  });
});

describe('faults', () => {
  test('fail_before_commit: HTTP 500 and no trade', async () => {
    await emulator.control('/_emu/faults', {mode: 'fail_before_commit', count: 1, method: 'trade\\.pay$'});
    const no = key();
    await assert.rejects(pay(no, '28763443825664391'), /500/);
    assert.equal((await query(no)).subCode, 'ACQ.TRADE_NOT_EXIST');
  });

  test('commit_then_5xx: HTTP 500, but the buyer has paid', async () => {
    await emulator.control('/_emu/faults', {mode: 'commit_then_5xx', count: 1, method: 'trade\\.pay$'});
    const no = key();
    await assert.rejects(pay(no, '28763443825664391'), /500/);
    assert.equal((await query(no)).tradeStatus, 'TRADE_SUCCESS');
  });

  test('commit_then_hang: no answer, but the buyer has paid', async () => {
    await emulator.control('/_emu/faults', {mode: 'commit_then_hang', count: 1, method: 'trade\\.pay$'});
    const no = key();
    const impatient = h.sdk(emulator, {timeout: 500});
    await assert.rejects(impatient.exec('alipay.trade.pay', {bizContent: {outTradeNo: no, scene: 'bar_code',
      authCode: '28763443825664391', subject: 'payorch', totalAmount: '1.00'}}, {validateSign: true}), /HttpClient Request error/);
    assert.equal((await query(no)).tradeStatus, 'TRADE_SUCCESS');
  });

  test('delayed_commit and latency: late, correct answers', async () => {
    for (const mode of ['delayed_commit', 'latency']) {
      await emulator.control('/_emu/faults', {mode, count: 1, delay_ms: 300, method: 'trade\\.pay$'});
      const started = Date.now();
      const r = await pay(key(), '28763443825664391');
      assert.equal(r.code, '10000');
      assert.ok(Date.now() - started >= 250, `${mode} answered in ${Date.now() - started} ms`);
    }
  });
});
