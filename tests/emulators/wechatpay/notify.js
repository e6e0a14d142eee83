'use strict';
// WeChat Pay API v3 notifications as the emulator sends them
// (https://pay.weixin.qq.com/wiki/doc/apiv3/apis/chapter3_2_5.shtml,
//  https://pay.weixin.qq.com/doc/v3/merchant/4012082053): a POST of
//   {id, create_time, resource_type: "encrypt-resource", event_type, summary,
//    resource: {original_type, algorithm: "AEAD_AES_256_GCM", ciphertext, associated_data, nonce}}
// the resource encrypted with the APIv3 key, the request signed with the platform key
// (Wechatpay-Timestamp/-Nonce/-Signature/-Serial over "TIMESTAMP\nNONCE\nBODY\n"). An answer
// 200 or 204 ends the deliveries; anything else (or a timeout) is retried after
// 15s/15s/30s/3m/10m/20m/30m/30m/30m/60m/3h/3h/3h/6h/6h (24h4m in all), then given up.
// `scale` shrinks the schedule for tests (POST /_emu/notify_schedule).
const crypto = require('node:crypto');
const http = require('node:http');
const https = require('node:https');

const SCHEDULE_S = [15, 15, 30, 180, 600, 1200, 1800, 1800, 1800, 3600, 10800, 10800, 10800, 21600, 21600];

function signHeaders(body, platform) {
  const timestamp = String(Math.floor(Date.now() / 1000));
  const nonce = crypto.randomBytes(16).toString('hex');
  const signature = crypto.createSign('RSA-SHA256').update(`${timestamp}\n${nonce}\n${body}\n`).sign(platform.privateKey, 'base64');
  return {'Wechatpay-Timestamp': timestamp, 'Wechatpay-Nonce': nonce, 'Wechatpay-Signature': signature,
    'Wechatpay-Serial': platform.serial};
}

function encrypt(plaintext, key, associatedData) {
  const nonce = crypto.randomBytes(6).toString('hex');  // 12 characters, 12 bytes
  const cipher = crypto.createCipheriv('aes-256-gcm', Buffer.from(key), Buffer.from(nonce)).setAAD(Buffer.from(associatedData));
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()]).toString('base64');
  return {nonce, ciphertext};
}

function rfc3339(ms) {
  // Beijing time, as WeChat writes it.
  const d = new Date(ms + 8 * 3600 * 1000);
  return d.toISOString().replace(/\.\d{3}Z$/, '+08:00');
}

class Notifier {
  // options: {ledger, platform: {privateKey, serial}, apiV3Key, switches}
  constructor(options) {
    Object.assign(this, options);
    this.scale = 1;
    this.overrideUrl = null;
    this.attempts = new Map();  // id → deliveries so far (this process)
    this.timers = new Map();
    this.stopped = false;
    this.posts = 0;
  }

  // Queues a notification durably (it survives a restart until delivered or given up).
  queue(url, eventType, summary, originalType, resource) {
    const id = `EV-${Date.now()}${crypto.randomInt(1e9)}`;
    const event = {id, create_time: rfc3339(Date.now()), resource_type: 'encrypt-resource', event_type: eventType,
      summary, original_type: originalType, resource};
    return {t: 'notification', id, url, event};
  }

  kickAll() {
    for (const n of this.ledger.notifications.values()) if (!n.delivered && !n.abandoned) this.schedule(n.id, 0);
  }

  schedule(id, delayMs) {
    if (this.stopped || this.timers.has(id)) return;
    this.timers.set(id, setTimeout(() => { this.timers.delete(id); this.deliver(id); }, delayMs));
  }

  body(n) {
    const associatedData = n.event.original_type;
    const {nonce, ciphertext} = encrypt(JSON.stringify(n.event.resource), this.apiV3Key, associatedData);
    return JSON.stringify({id: n.event.id, create_time: n.event.create_time, resource_type: 'encrypt-resource',
      event_type: n.event.event_type, summary: n.event.summary,
      resource: {original_type: n.event.original_type, algorithm: 'AEAD_AES_256_GCM', ciphertext,
        associated_data: associatedData, nonce}});
  }

  async deliver(id) {
    const n = this.ledger.notifications.get(id);
    if (!n || n.delivered || n.abandoned) return;
    if (this.switches.hold_notifications) return;  // sent by release()
    const url = this.overrideUrl || n.url;
    const attempt = (this.attempts.get(id) || 0) + 1;
    this.attempts.set(id, attempt);
    let ok = url ? await this.post(url, this.body(n)) : false;
    if (ok && this.switches.duplicate_notifications) ok = await this.post(url, this.body(n));
    if (ok) { this.ledger.commit({t: 'notification_delivered', id}); return; }
    if (attempt > SCHEDULE_S.length) { this.ledger.commit({t: 'notification_abandoned', id}); return; }
    this.schedule(id, SCHEDULE_S[attempt - 1] * 1000 * this.scale);
  }

  // Sends every held notification now, one after the other, newest first when `reverse`.
  async release(reverse) {
    this.switches.hold_notifications = false;
    let pending = [...this.ledger.notifications.values()].filter((n) => !n.delivered && !n.abandoned);
    if (reverse) pending = pending.reverse();
    for (const n of pending) {
      const timer = this.timers.get(n.id);
      if (timer) { clearTimeout(timer); this.timers.delete(n.id); }
      await this.deliver(n.id);
    }
  }

  post(url, body) {
    this.posts += 1;
    return new Promise((resolve) => {
      const u = new URL(url);
      const request = (u.protocol === 'https:' ? https : http).request(u, {
        method: 'POST',
        headers: {'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body),
          ...signHeaders(body, this.platform)},
        timeout: 5000,
      }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode === 200 || res.statusCode === 204));
        res.on('error', () => resolve(false));
      });
      request.on('timeout', () => request.destroy(new Error('timeout')));
      request.on('error', () => resolve(false));
      request.end(body);
    });
  }

  stop() {
    this.stopped = true;
    for (const t of this.timers.values()) clearTimeout(t);
  }
}

module.exports = {Notifier, signHeaders, encrypt, rfc3339, SCHEDULE_S};
