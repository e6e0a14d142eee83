'use strict';
// Standard notification webhooks as Adyen sends them
// (https://docs.adyen.com/development-resources/webhooks): a batch
// {"live":"false","notificationItems":[{"NotificationRequestItem":{…}}]}, each item signed
// with the HMAC key (additionalData.hmacSignature: base64 HMAC-SHA256 over
// pspReference:originalReference:merchantAccountCode:merchantReference:value:currency:eventCode:success,
// https://docs.adyen.com/development-resources/webhooks/secure-webhooks/verify-hmac-signatures),
// delivered until the receiver answers "[accepted]".
const crypto = require('node:crypto');
const http = require('node:http');
const https = require('node:https');

function signingString(item) {
  return [item.pspReference, item.originalReference || '', item.merchantAccountCode,
    item.merchantReference, item.amount.value, item.amount.currency, item.eventCode,
    item.success].join(':');
}

function sign(item, hexKey) {
  return crypto.createHmac('sha256', Buffer.from(hexKey, 'hex')).update(signingString(item), 'utf8')
    .digest('base64');
}

class WebhookSender {
  // options: {url, hmacKey, ledger, switches: {duplicate_webhooks, reorder_webhooks}, maxBatch}
  constructor(options) {
    this.url = options.url;
    this.hmacKey = options.hmacKey;
    this.ledger = options.ledger;
    this.switches = options.switches;
    this.maxBatch = options.maxBatch || 3;
    this.backoffMs = 50;
    this.timer = null;
    this.busy = false;
    this.stopped = false;
    this.attempts = 0;
  }

  // Queues a signed item (durably: it survives a restart until delivered).
  queue(fields) {
    const item = {...fields, additionalData: {...(fields.additionalData || {})}};
    item.additionalData.hmacSignature = sign(item, this.hmacKey);
    const id = crypto.randomUUID();
    this.ledger.commit({t: 'webhook', id, item});
    this.kick(0);
  }

  kick(delayMs) {
    if (this.stopped || !this.url || this.timer || this.busy) return;
    this.timer = setTimeout(() => { this.timer = null; this.deliver(); }, delayMs);
  }

  pending() {
    return [...this.ledger.webhooks.entries()].filter(([, w]) => !w.delivered);
  }

  async deliver() {
    // The URL may have been cleared (POST /_emu/webhook_url {"url": ""}) after this delivery
    // was scheduled: hold the webhooks until one is set again.
    if (!this.url) return;
    let batch = this.pending();
    if (batch.length === 0) return;
    this.busy = true;
    if (this.switches.reorder_webhooks) batch = batch.reverse();
    batch = batch.slice(0, this.maxBatch);
    const body = JSON.stringify({
      live: 'false',
      notificationItems: batch.map(([, w]) => ({NotificationRequestItem: w.item})),
    });
    let ok = await this.post(body);
    if (ok && this.switches.duplicate_webhooks) ok = await this.post(body);
    this.busy = false;
    if (ok) {
      this.backoffMs = 50;
      this.ledger.commit(...batch.map(([id]) => ({t: 'webhook_delivered', id})));
      this.kick(0);
    } else {
      this.backoffMs = Math.min(this.backoffMs * 2, 2000);
      this.kick(this.backoffMs);
    }
  }

  post(body) {
    this.attempts += 1;
    return new Promise((resolve) => {
      const url = new URL(this.url);
      const request = (url.protocol === 'https:' ? https : http).request(url, {
        method: 'POST',
        headers: {'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body)},
        timeout: 5000,
      }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => { text += c; });
        res.on('end', () => resolve(res.statusCode >= 200 && res.statusCode < 300 && text.trim() === '[accepted]'));
        res.on('error', () => resolve(false));
      });
      request.on('timeout', () => request.destroy(new Error('timeout')));
      request.on('error', () => resolve(false));
      request.end(body);
    });
  }

  stop() {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }
}

module.exports = {WebhookSender, sign, signingString};
