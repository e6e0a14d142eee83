'use strict';
// The trades of the Alipay emulator and what each OpenAPI method does to them. Every function
// takes the parsed biz_content and returns {response, notify} where `response` is the member
// the gateway signs and `notify` lists the notifications to send (as parameters).
//
// Pages (checked 2026-12-02): alipay.trade.pay / precreate / query / close / refund /
// fastpay.refund.query at https://docs.open.alipay.com/api_1/<method>; face-to-face error
// codes at https://open.alitrip.com/docs/doc.htm?articleId=104632&docType=1&treeId=140.
//
// Buyers (alipay.trade.pay's auth_code: "25~30开头的长度为16~24位的数字"): the last digit says
// what the buyer does —
//   …1  pays at once (10000, TRADE_SUCCESS)
//   …2  must confirm on the phone: 10003 WAIT_BUYER_PAY until /_emu/pay
//   …3  has too little money: 40004 ACQ.BUYER_BALANCE_NOT_ENOUGH, no trade
//   other digits pay at once; a code of another shape is ACQ.PAYMENT_AUTH_CODE_INVALID.
// alipay.trade.precreate makes a QR code; the trade exists for query and close only once the
// buyer scans it (/_emu/scan, or /_emu/pay which scans and pays), and only before its
// qr_code_timeout_express has passed ("该笔订单允许的最晚付款时间，逾期将关闭交易，从生成二维码
// 开始计时。取值范围：1m～15d"); a scan after it is refused (409).
const {ok, businessFailed, yuan, minorOf, beijingTime} = require('./gateway');

// "90m", "2h", "15d" in milliseconds (1m..15d); null for anything else.
function expressMs(text) {
  const m = /^([1-9]\d*)([mhd])$/.exec(text);
  const ms = m ? Number(m[1]) * {m: 60e3, h: 3600e3, d: 86400e3}[m[2]] : null;
  return ms !== null && ms <= 15 * 86400e3 ? ms : null;
}

class Trades {
  constructor({appId, minCloseDelayMs = 0}) {
    this.appId = appId;
    this.minCloseDelayMs = minCloseDelayMs;
    this.trades = new Map();
    this.closes = [];  // every alipay.trade.close of an existing trade: {out_trade_no, age_ms, refused}
    this.sequence = 0;
  }

  snapshot() {
    return {trades: [...this.trades.values()].map((t) => ({...t, refunds: [...t.refunds.values()]})),
      closes: this.closes};
  }

  tradeNo() {
    this.sequence += 1;
    const date = beijingTime().slice(0, 10).replaceAll('-', '');
    return `${date}22001${String(this.sequence).padStart(15, '0')}`;
  }

  // The trade a buyer can see: precreate trades only once scanned.
  visible(outTradeNo) {
    const t = this.trades.get(outTradeNo);
    return t && t.status !== 'UNSCANNED' ? t : null;
  }

  notification(t, extra = {}) {
    if (!t.notify_url) return [];
    const now = beijingTime();
    const params = {
      notify_time: now, notify_type: 'trade_status_sync',
      notify_id: `${Date.now()}${Math.floor(Math.random() * 1e9)}`, app_id: this.appId, charset: 'utf-8',
      version: '1.0', sign_type: 'RSA2', trade_no: t.trade_no, out_trade_no: t.out_trade_no,
      trade_status: t.status, total_amount: yuan(t.total_minor), gmt_create: t.gmt_create, ...extra,
    };
    if (t.gmt_payment) params.gmt_payment = t.gmt_payment;
    return [{url: t.notify_url, params}];
  }

  // What a repeated out_trade_no gets (pay and precreate).
  repeated(t, biz, product) {
    if (t.product !== product || t.total_minor !== minorOf(biz.total_amount) ||
        (product === 'pay' && t.auth_code !== biz.auth_code))
      return businessFailed('ACQ.CONTEXT_INCONSISTENT', '交易信息被篡改');
    if (t.status === 'TRADE_SUCCESS' || t.status === 'TRADE_FINISHED')
      return businessFailed('ACQ.TRADE_HAS_SUCCESS', '交易已被支付');
    if (t.status === 'TRADE_CLOSED') return businessFailed('ACQ.TRADE_HAS_CLOSE', '交易已经关闭');
    if (product === 'precreate') return ok({out_trade_no: t.out_trade_no, qr_code: t.qr_code});
    return {code: '10003', msg: ' order success pay inprocess', trade_no: t.trade_no,
      out_trade_no: t.out_trade_no, total_amount: yuan(t.total_minor)};
  }

  create(biz, product, notifyUrl) {
    const minor = minorOf(biz.total_amount);
    if (!biz.out_trade_no || !/^[A-Za-z0-9_]{1,64}$/.test(biz.out_trade_no) || minor === null || minor <= 0 || !biz.subject)
      return {response: businessFailed('ACQ.INVALID_PARAMETER', '参数无效'), notify: []};
    for (const field of ['qr_code_timeout_express', 'timeout_express'])
      if (field in biz && expressMs(biz[field]) === null)
        return {response: businessFailed('ACQ.INVALID_PARAMETER', `参数无效: ${field}`), notify: []};
    const existing = this.trades.get(biz.out_trade_no);
    if (existing) return {response: this.repeated(existing, biz, product), notify: []};
    if (product === 'pay') {
      if (biz.scene !== 'bar_code') return {response: businessFailed('ACQ.INVALID_PARAMETER', '参数无效'), notify: []};
      if (!/^(2[5-9]|30)\d{14,22}$/.test(biz.auth_code || ''))
        return {response: businessFailed('ACQ.PAYMENT_AUTH_CODE_INVALID', '支付授权码无效'), notify: []};
      if (biz.auth_code.endsWith('3'))
        return {response: businessFailed('ACQ.BUYER_BALANCE_NOT_ENOUGH', '买家余额不足'), notify: []};
    }
    const t = {
      out_trade_no: biz.out_trade_no, trade_no: this.tradeNo(), total_minor: minor, subject: biz.subject,
      product, auth_code: biz.auth_code ?? null, notify_url: notifyUrl || null,
      status: product === 'precreate' ? 'UNSCANNED' : 'WAIT_BUYER_PAY',
      created_ms: Date.now(), gmt_create: beijingTime(), gmt_payment: null, refunds: new Map(),
      qr_code: product === 'precreate' ? `https://qr.alipay.com/emu${biz.out_trade_no}` : null,
      // precreate: the QR code can be scanned until then (qr_code_timeout_express, counted
      // from its creation; two hours when not given).
      qr_code_timeout_express: biz.qr_code_timeout_express ?? null,
      timeout_express: biz.timeout_express ?? null,
      qr_expires_ms: product === 'precreate' ? Date.now() + expressMs(biz.qr_code_timeout_express ?? '2h') : null,
    };
    this.trades.set(t.out_trade_no, t);
    if (product === 'precreate') return {response: ok({out_trade_no: t.out_trade_no, qr_code: t.qr_code}), notify: []};
    if (biz.auth_code.endsWith('2'))
      return {response: {code: '10003', msg: ' order success pay inprocess', trade_no: t.trade_no,
        out_trade_no: t.out_trade_no, total_amount: yuan(minor)}, notify: []};
    const notify = this.markPaid(t);
    return {response: ok({trade_no: t.trade_no, out_trade_no: t.out_trade_no, buyer_logon_id: '159****5620',
      total_amount: yuan(minor), receipt_amount: yuan(minor), gmt_payment: t.gmt_payment}), notify};
  }

  markPaid(t) {
    t.status = 'TRADE_SUCCESS';
    t.gmt_payment = beijingTime();
    return this.notification(t);
  }

  // The buyer scans a precreate QR code (test control).
  scan(outTradeNo) {
    const t = this.trades.get(outTradeNo);
    if (!t) return {error: 'no such trade'};
    if (t.status === 'UNSCANNED' && Date.now() >= t.qr_expires_ms) return {error: 'the QR code has expired', status: 409};
    if (t.status === 'UNSCANNED') t.status = 'WAIT_BUYER_PAY';
    return {trade: t};
  }

  // The buyer pays (test control): only a trade waiting for payment can be paid; a closed one
  // never (the fence holds).
  pay(outTradeNo) {
    const t = this.trades.get(outTradeNo);
    if (!t) return {error: 'no such trade', status: 404};
    if (t.status === 'UNSCANNED') t.status = 'WAIT_BUYER_PAY';
    if (t.status !== 'WAIT_BUYER_PAY') return {error: `trade is ${t.status}`, status: 409};
    return {trade: t, notify: this.markPaid(t)};
  }

  query(biz) {
    const t = this.visible(biz.out_trade_no);
    if (!t) return {response: businessFailed('ACQ.TRADE_NOT_EXIST', '交易不存在'), notify: []};
    const fields = {trade_no: t.trade_no, out_trade_no: t.out_trade_no, buyer_logon_id: '159****5620',
      trade_status: t.status, total_amount: yuan(t.total_minor)};
    if (t.gmt_payment) fields.send_pay_date = t.gmt_payment;
    return {response: ok(fields), notify: []};
  }

  close(biz) {
    const t = this.visible(biz.out_trade_no);
    if (!t) return {response: businessFailed('ACQ.TRADE_NOT_EXIST', '交易不存在'), notify: []};
    if (t.status !== 'WAIT_BUYER_PAY')
      return {response: businessFailed('ACQ.TRADE_STATUS_ERROR', '交易状态不合法'), notify: []};
    // Alipay documents no minimum delay; the emulator can be told one (tests of scheduling).
    const ageMs = Date.now() - t.created_ms;
    const early = ageMs < this.minCloseDelayMs;
    this.closes.push({out_trade_no: t.out_trade_no, age_ms: ageMs, refused: early});
    if (early) return {response: businessFailed('ACQ.SYSTEM_ERROR', '系统异常'), notify: []};
    t.status = 'TRADE_CLOSED';
    return {response: ok({trade_no: t.trade_no, out_trade_no: t.out_trade_no}), notify: this.notification(t)};
  }

  refund(biz) {
    const t = this.visible(biz.out_trade_no);
    const minor = minorOf(biz.refund_amount);
    if (!t) return {response: businessFailed('ACQ.TRADE_NOT_EXIST', '交易不存在'), notify: []};
    if (minor === null || minor <= 0) return {response: businessFailed('ACQ.INVALID_PARAMETER', '参数无效'), notify: []};
    const requestNo = biz.out_request_no || t.out_trade_no;
    const refunded = () => [...t.refunds.values()].reduce((sum, r) => sum + r.refund_minor, 0);
    const answer = (fundChange) => ok({trade_no: t.trade_no, out_trade_no: t.out_trade_no, buyer_logon_id: '159****5620',
      fund_change: fundChange, refund_fee: yuan(refunded())});
    const done = t.refunds.get(requestNo);
    // "重试时请务必保证退款请求号一致": a repeat of a done refund changes nothing.
    if (done) {
      if (done.refund_minor !== minor) return {response: businessFailed('ACQ.INVALID_PARAMETER', '参数无效'), notify: []};
      return {response: answer('N'), notify: []};
    }
    if (t.status !== 'TRADE_SUCCESS') return {response: businessFailed('ACQ.TRADE_STATUS_ERROR', '交易状态不合法'), notify: []};
    if (refunded() + minor > t.total_minor)
      return {response: businessFailed('ACQ.REASON_TRADE_REFUND_FEE_ERR', '退款金额无效'), notify: []};
    const gmt = beijingTime();
    t.refunds.set(requestNo, {out_request_no: requestNo, refund_minor: minor, gmt_refund: gmt});
    if (refunded() === t.total_minor) t.status = 'TRADE_CLOSED';
    const notify = this.notification(t, {out_biz_no: requestNo, refund_fee: yuan(refunded()), gmt_refund: gmt});
    return {response: answer('Y'), notify};
  }

  // Taken (10000) but no money moved: fund_change "N", nothing recorded.
  refundNotDone(biz) {
    const t = this.visible(biz.out_trade_no);
    if (!t) return businessFailed('ACQ.TRADE_NOT_EXIST', '交易不存在');
    const refunded = [...t.refunds.values()].reduce((sum, r) => sum + r.refund_minor, 0);
    return ok({trade_no: t.trade_no, out_trade_no: t.out_trade_no, buyer_logon_id: '159****5620',
      fund_change: 'N', refund_fee: yuan(refunded)});
  }

  refundQuery(biz) {
    const t = this.visible(biz.out_trade_no);
    if (!t) return {response: businessFailed('ACQ.TRADE_NOT_EXIST', '交易不存在'), notify: []};
    const r = t.refunds.get(biz.out_request_no || t.out_trade_no);
    // No refund data: "如果没有查询到则代表未退款成功".
    if (!r) return {response: ok(), notify: []};
    return {response: ok({trade_no: t.trade_no, out_trade_no: t.out_trade_no, out_request_no: r.out_request_no,
      total_amount: yuan(t.total_minor), refund_amount: yuan(r.refund_minor), refund_status: 'REFUND_SUCCESS',
      gmt_refund_pay: r.gmt_refund}), notify: []};
  }
}

module.exports = {Trades};
