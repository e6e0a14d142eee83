'use strict';
// Webhook delivery as Stripe does it (https://docs.stripe.com/webhooks): POST of the event as
// JSON with `Stripe-Signature: t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`, signed
// anew at each attempt; anything but a 2xx is retried with backoff. Switches: `duplicate`
// delivers every event twice, `reorder` holds each event until the next one has been sent
// (or for 1 s).
const crypto = require('node:crypto');
const http = require('node:http');

function signatureHeader(secret, body, t = Math.floor(Date.now() / 1000)) {
  const v1 = crypto.createHmac('sha256', secret).update(`${t}.${body}`).digest('hex');
  return `t=${t},v1=${v1}`;
}

class Webhooks {
  constructor(url, secret, log) {
    this.url = url;
    this.secret = secret;
    this.log = log;
    this.duplicate = false;
    this.reorder = false;
    this.held = null;
    this.inFlight = 0;
    this.delivered = [];  // {id, type, status} of each acknowledged delivery
  }

  send(event) {
    if (!this.url) return;
    if (this.reorder) {
      const previous = this.held;
      this.held = event;
      if (previous) {
        this.held = null;
        this.deliver(event, 0);
        setTimeout(() => this.deliver(previous, 0), 50);  // the older one arrives second
      }
      else setTimeout(() => { if (this.held === event) { this.held = null; this.deliver(event, 0); } }, 1000);
    } else {
      this.deliver(event, 0);
    }
    if (this.duplicate) this.deliver(event, 0);
  }

  deliver(event, attempt) {
    const body = JSON.stringify(event);
    const u = new URL(this.url);
    this.inFlight++;
    const retry = (why) => {
      this.inFlight--;
      if (attempt >= 30) { this.log(`webhook ${event.id} given up: ${why}`); return; }
      setTimeout(() => this.deliver(event, attempt + 1), Math.min(100 * 2 ** attempt, 5000));
    };
    const req = http.request({
      hostname: u.hostname, port: u.port, path: u.pathname + u.search, method: 'POST',
      headers: {
        'Content-Type': 'application/json; charset=utf-8',
        'Content-Length': Buffer.byteLength(body),
        'Stripe-Signature': signatureHeader(this.secret, body),
        'User-Agent': 'Stripe/1.0 (+https://stripe.com/docs/webhooks)',
      },
      timeout: 5000,
    }, (res) => {
      res.resume();
      res.on('end', () => {
        if (res.statusCode >= 200 && res.statusCode < 300) {
          this.inFlight--;
          this.delivered.push({ id: event.id, type: event.type, status: res.statusCode });
        } else {
          retry(`HTTP ${res.statusCode}`);
        }
      });
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (e) => retry(e.message));
    req.end(body);
  }
}

module.exports = { Webhooks, signatureHeader };
