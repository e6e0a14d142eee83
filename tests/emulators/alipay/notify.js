'use strict';
// Alipay's asynchronous notifications as the emulator sends them: a form-encoded POST to the
// request's notify_url, signed RSA2 (gateway.js), acknowledged only by a body "success";
// otherwise sent again — 8 sends within 25 hours, after 2m, 10m, 10m, 1h, 2h, 6h, 15h
// (https://docs.antom.com/ac/web_cn/async, checked 2026-12-02). `retry_scale` (a switch)
// shrinks the schedule for tests; `duplicate` sends each one twice, `reorder` holds one back
// until the next is sent.
const http = require('node:http');
const https = require('node:https');

const {sign, signingContent} = require('./gateway');

const schedule_ms = [2, 10, 10, 60, 120, 360, 900].map((m) => m * 60 * 1000);

function formEncode(params) {
  return Object.keys(params).map((k) => `${encodeURIComponent(k)}=${encodeURIComponent(params[k])}`).join('&');
}

class Notifier {
  constructor({alipayPrivateKey, switches}) {
    this.key = alipayPrivateKey;
    this.switches = switches;
    this.override = null;       // /_emu/notify_url: where every notification goes instead
    this.deliveries = [];       // {notify_id, url, attempt, status, acknowledged}
    this.held = null;
    this.timers = new Set();
  }

  queue({url, params}) {
    const signed = {...params};
    signed.sign = sign(this.key, signingContent(signed, {dropSignType: true}));
    const item = {url, params: signed, attempt: 0, acknowledged: false};
    if (this.switches.reorder && !this.held) { this.held = item; return; }
    this.later(item, 0);
    if (this.held && this.held !== item) { const h = this.held; this.held = null; this.later(h, 5); }
    if (this.switches.duplicate) this.later({...item, duplicate: true}, 1);
  }

  later(item, ms) {
    const timer = setTimeout(() => { this.timers.delete(timer); this.send(item); }, ms);
    this.timers.add(timer);
  }

  send(item) {
    const target = this.override || item.url;
    const body = formEncode(item.params);
    item.attempt += 1;
    const record = {notify_id: item.params.notify_id, out_trade_no: item.params.out_trade_no, url: target,
      attempt: item.attempt, status: 0, acknowledged: false, body};
    this.deliveries.push(record);
    const retry = () => {
      if (item.attempt > schedule_ms.length) return;  // 8 sends, then Alipay gives up
      this.later(item, Math.round(schedule_ms[item.attempt - 1] * this.switches.retry_scale));
    };
    let url;
    try { url = new URL(target); } catch { retry(); return; }
    const transport = url.protocol === 'https:' ? https : http;
    const req = transport.request(url, {method: 'POST', rejectUnauthorized: false,
      headers: {'Content-Type': 'application/x-www-form-urlencoded; charset=utf-8', 'Content-Length': Buffer.byteLength(body)}},
    (res) => {
      let text = '';
      res.on('data', (c) => { text += c; });
      res.on('end', () => {
        record.status = res.statusCode;
        record.acknowledged = text.trim() === 'success';
        if (!record.acknowledged) retry();
      });
    });
    req.on('error', () => retry());
    req.setTimeout(5000, () => req.destroy());
    req.end(body);
  }

  stop() { for (const t of this.timers) clearTimeout(t); }
}

module.exports = {Notifier, formEncode};
