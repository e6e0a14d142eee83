'use strict';
// The business of the emulated WeChat Pay API v3: orders, closes and refunds, as pure
// functions of the ledger and a request. Each returns {status, body?, records, notifications}
// (records are committed before the answer; notifications queued after). Paths, fields, states
// and error codes follow github.com/TheNorthMemory/wechatpay-openapi and the official pages cited in
// providers/wechatpay/classify.h.
const crypto = require('node:crypto');

const {rfc3339} = require('./notify');

function error(status, code, message) {
  return {status, body: {code, message}, records: [], notifications: []};
}

function transactionId() {
  return `42000${Date.now()}${String(crypto.randomInt(1e6)).padStart(6, '0')}`.slice(0, 28);
}

// The transaction as the query, codepay and the TRANSACTION.SUCCESS resource show it.
function transaction(o) {
  const paid = o.trade_state === 'SUCCESS' || o.trade_state === 'REFUND';
  const t = {appid: o.appid, mchid: o.mchid, out_trade_no: o.out_trade_no, trade_type: o.trade_type,
    trade_state: o.trade_state, trade_state_desc: STATE_DESC[o.trade_state] || o.trade_state,
    amount: {total: o.amount.total, currency: o.amount.currency}};
  if (o.transaction_id) t.transaction_id = o.transaction_id;
  if (paid) {
    t.bank_type = 'OTHERS';
    t.success_time = o.success_time;
    t.payer = {openid: o.openid};
    t.amount.payer_total = o.amount.total;
    t.amount.payer_currency = o.amount.currency;
  }
  return t;
}

const STATE_DESC = {SUCCESS: '支付成功', REFUND: '转入退款', NOTPAY: '订单未支付', CLOSED: '已关闭',
  REVOKED: '已撤销', USERPAYING: '用户支付中', PAYERROR: '支付失败'};

// What makes two orders under one out_trade_no the same order.
function fingerprint(product, body) {
  return JSON.stringify([product, body.appid, body.description, body.amount.total, body.amount.currency || 'CNY',
    body.payer || null]);
}

function createOrder(ledger, settings, product, body, nowMs) {
  if (body.mchid !== settings.mchid) return error(400, 'MCH_NOT_EXISTS', '商户号不存在');
  if (body.appid !== settings.appid) return error(400, 'APPID_MCHID_NOT_MATCH', 'AppID和mch_id不匹配');
  if (!Number.isInteger(body.amount.total) || body.amount.total <= 0) return error(400, 'PARAM_ERROR', '订单金额必须为正整数');
  if ((body.amount.currency || 'CNY') !== 'CNY') return error(400, 'PARAM_ERROR', '不支持的币种');
  const existing = ledger.orders.get(body.out_trade_no);
  if (existing) {
    if (existing.fingerprint !== fingerprint(product, body)) return error(403, 'OUT_TRADE_NO_USED', '商户订单号重复');
    if (existing.trade_state === 'CLOSED') return error(400, 'ORDER_CLOSED', '订单已关闭');
    if (product === 'codepay') return {status: 200, body: transaction(existing), records: [], notifications: []};
    if (existing.trade_state !== 'NOTPAY') return error(400, 'ORDERPAID', '订单已支付');
    return {status: 200, body: existing.answer, records: [], notifications: []};
  }
  const order = {product, appid: body.appid, mchid: body.mchid, out_trade_no: body.out_trade_no,
    description: body.description, amount: {total: body.amount.total, currency: body.amount.currency || 'CNY'},
    notify_url: body.notify_url || null, trade_type: {native: 'NATIVE', jsapi: 'JSAPI', codepay: 'MICROPAY'}[product],
    trade_state: 'NOTPAY', created_ms: nowMs, fingerprint: fingerprint(product, body), refunded: 0};
  if (product === 'native') order.answer = {code_url: `weixin://wxpay/bizpayurl?pr=${crypto.randomBytes(5).toString('hex')}`};
  if (product === 'jsapi') {
    order.openid = body.payer.openid;
    order.answer = {prepay_id: `wx${Date.now()}${crypto.randomBytes(8).toString('hex')}`};
  }
  if (product === 'codepay') {
    // A payer's code that starts with "USERPAYING" needs the user's confirmation (POST
    // /_emu/pay); "PAYERROR" fails; any other is paid at once.
    const code = body.payer.auth_code;
    order.openid = 'o_codepay_payer';
    if (code.startsWith('USERPAYING')) order.trade_state = 'USERPAYING';
    else if (code.startsWith('PAYERROR')) order.trade_state = 'PAYERROR';
    else Object.assign(order, {trade_state: 'SUCCESS', transaction_id: transactionId(), success_time: rfc3339(nowMs)});
    return {status: 200, body: transaction(order), records: [{t: 'order', order}], notifications: []};
  }
  return {status: 200, body: order.answer, records: [{t: 'order', order}], notifications: []};
}

function query(ledger, settings, outTradeNo, mchid) {
  if (mchid !== settings.mchid) return error(400, 'MCH_NOT_EXISTS', '商户号不存在');
  const o = ledger.orders.get(outTradeNo);
  if (!o) return error(404, 'ORDER_NOT_EXIST', '订单不存在');
  return {status: 200, body: transaction(o), records: [], notifications: []};
}

// The docs: a close no earlier than 5 minutes after the order was made; a paid order cannot be
// closed (ORDERPAID); closing a closed order answers ORDER_CLOSED.
function close(ledger, settings, outTradeNo, body, nowMs) {
  if (body.mchid !== settings.mchid) return error(400, 'MCH_NOT_EXISTS', '商户号不存在');
  const o = ledger.orders.get(outTradeNo);
  if (!o) return error(404, 'ORDER_NOT_EXIST', '订单不存在');
  if (o.trade_state === 'SUCCESS' || o.trade_state === 'REFUND') return error(400, 'ORDERPAID', '订单已支付');
  if (o.trade_state === 'CLOSED') return error(400, 'ORDER_CLOSED', '订单已关闭');
  if (nowMs - o.created_ms < settings.close_min_delay_ms)
    return error(403, 'RULE_LIMIT', '订单生成后不能马上调用关单接口，最短调用时间间隔为5分钟');
  return {status: 204, records: [{t: 'order_update', out_trade_no: outTradeNo, changes: {trade_state: 'CLOSED'}}],
    notifications: []};
}

// The user pays (control endpoint): NOTPAY/USERPAYING → SUCCESS, and TRANSACTION.SUCCESS.
function pay(ledger, outTradeNo, nowMs) {
  const o = ledger.orders.get(outTradeNo);
  if (!o) return {status: 404, body: {error: 'no such order'}, records: [], notifications: []};
  if (o.trade_state !== 'NOTPAY' && o.trade_state !== 'USERPAYING')
    return {status: 409, body: {error: `order is ${o.trade_state}`}, records: [], notifications: []};
  const changes = {trade_state: 'SUCCESS', transaction_id: transactionId(), success_time: rfc3339(nowMs),
    openid: o.openid || 'o_native_payer'};
  const after = {...o, ...changes};
  return {status: 200, body: transaction(after),
    records: [{t: 'order_update', out_trade_no: outTradeNo, changes}],
    notifications: [{url: o.notify_url, event_type: 'TRANSACTION.SUCCESS', summary: '支付成功',
      original_type: 'transaction', resource: transaction(after)}]};
}

function refundView(r) {
  const v = {refund_id: r.refund_id, out_refund_no: r.out_refund_no, transaction_id: r.transaction_id,
    out_trade_no: r.out_trade_no, channel: 'ORIGINAL', user_received_account: '支付用户零钱',
    create_time: r.create_time, status: r.status, funds_account: 'AVAILABLE',
    amount: {total: r.amount.total, refund: r.amount.refund, payer_total: r.amount.total, payer_refund: r.amount.refund,
      settlement_refund: r.amount.refund, settlement_total: r.amount.total, discount_refund: 0,
      currency: r.amount.currency}};
  if (r.success_time) v.success_time = r.success_time;
  return v;
}

// The REFUND.* resource (https://pay.weixin.qq.com/doc/v3/merchant/4012082053).
function refundResource(r, mchid) {
  const v = {mchid, out_trade_no: r.out_trade_no, transaction_id: r.transaction_id, out_refund_no: r.out_refund_no,
    refund_id: r.refund_id, refund_status: r.status, user_received_account: '支付用户零钱',
    amount: {total: r.amount.total, refund: r.amount.refund, payer_total: r.amount.total, payer_refund: r.amount.refund}};
  if (r.success_time) v.success_time = r.success_time;
  return v;
}

function createRefund(ledger, settings, body, nowMs) {
  const existing = ledger.refunds.get(body.out_refund_no);
  if (existing) {
    if (existing.out_trade_no !== body.out_trade_no || existing.amount.refund !== body.amount.refund)
      return error(400, 'INVALID_REQUEST', '退款单号重复');
    return {status: 200, body: refundView(existing), records: [], notifications: []};
  }
  const o = body.out_trade_no ? ledger.orders.get(body.out_trade_no) : undefined;
  if (!o) return error(404, 'RESOURCE_NOT_EXISTS', '订单不存在');
  if (o.trade_state !== 'SUCCESS' && o.trade_state !== 'REFUND') return error(400, 'INVALID_REQUEST', '订单未支付');
  if (body.amount.total !== o.amount.total) return error(400, 'PARAM_ERROR', '订单金额与原订单金额不一致');
  if ((body.amount.currency || 'CNY') !== o.amount.currency) return error(400, 'PARAM_ERROR', '退款币种与订单币种不一致');
  if (!Number.isInteger(body.amount.refund) || body.amount.refund <= 0 || o.refunded + body.amount.refund > o.amount.total)
    return error(400, 'INVALID_REQUEST', '申请退款金额超过订单可退金额');
  const refund = {out_refund_no: body.out_refund_no, refund_id: `50000${Date.now()}${crypto.randomInt(1e6)}`,
    out_trade_no: o.out_trade_no, transaction_id: o.transaction_id, notify_url: body.notify_url || null,
    amount: {refund: body.amount.refund, total: o.amount.total, currency: o.amount.currency},
    status: 'PROCESSING', create_time: rfc3339(nowMs)};
  return {status: 200, body: refundView(refund), refund: refund.out_refund_no,
    records: [{t: 'refund', refund},
      {t: 'order_update', out_trade_no: o.out_trade_no, changes: {refunded: o.refunded + body.amount.refund}}],
    notifications: []};
}

function queryRefund(ledger, outRefundNo) {
  const r = ledger.refunds.get(outRefundNo);
  if (!r) return error(404, 'RESOURCE_NOT_EXISTS', '退款单不存在');
  return {status: 200, body: refundView(r), records: [], notifications: []};
}

// A PROCESSING refund ends: SUCCESS (the order's state becomes REFUND), CLOSED (its amount is
// refundable again) or ABNORMAL; the matching REFUND.* notification follows.
function settleRefund(ledger, settings, outRefundNo, status, nowMs) {
  const r = ledger.refunds.get(outRefundNo);
  if (!r) return {status: 404, body: {error: 'no such refund'}, records: [], notifications: []};
  if (r.status !== 'PROCESSING') return {status: 409, body: {error: `refund is ${r.status}`}, records: [], notifications: []};
  const changes = {status};
  if (status === 'SUCCESS') changes.success_time = rfc3339(nowMs);
  const records = [{t: 'refund_update', out_refund_no: outRefundNo, changes}];
  const o = ledger.orders.get(r.out_trade_no);
  if (status === 'SUCCESS') records.push({t: 'order_update', out_trade_no: o.out_trade_no, changes: {trade_state: 'REFUND'}});
  if (status === 'CLOSED') records.push({t: 'order_update', out_trade_no: o.out_trade_no, changes: {refunded: o.refunded - r.amount.refund}});
  const after = {...r, ...changes};
  const event = {SUCCESS: ['REFUND.SUCCESS', '退款成功'], CLOSED: ['REFUND.CLOSED', '退款关闭'],
    ABNORMAL: ['REFUND.ABNORMAL', '退款异常']}[status];
  return {status: 200, body: refundView(after), records,
    notifications: [{url: r.notify_url, event_type: event[0], summary: event[1], original_type: 'refund',
      resource: refundResource(after, settings.mchid)}]};
}

module.exports = {createOrder, query, close, pay, createRefund, queryRefund, settleRefund, transaction, refundView};
