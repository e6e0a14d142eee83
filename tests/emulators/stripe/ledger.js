'use strict';
// The emulator's durable state: an append-only file of JSON lines, each fsynced before the
// answer that depends on it is sent, replayed at start. Later lines for the same id win.
//   {"t":"payment_intent","object":{…}}   {"t":"refund","object":{…}}
//   {"t":"idempotency","key","endpoint","params","status","body","at"}
//   {"t":"event","object":{…}}
const fs = require('node:fs');

// Stripe: "You can remove keys from the system automatically after they're at least 24 hours
// old" (https://docs.stripe.com/api/idempotent_requests).
const KEY_RETENTION_MS = 24 * 3600 * 1000;

class Ledger {
  constructor(path) {
    this.path = path;
    this.paymentIntents = new Map();
    this.refunds = new Map();
    this.keys = new Map();  // idempotency key → saved answer
    this.events = [];
    if (fs.existsSync(path)) {
      for (const line of fs.readFileSync(path, 'utf8').split('\n')) {
        if (line.trim() === '') continue;
        let rec;
        try { rec = JSON.parse(line); } catch { continue; }  // a torn last line: never acknowledged
        this.apply(rec);
      }
    }
    this.fd = fs.openSync(path, 'a');
  }

  apply(rec) {
    if (rec.t === 'payment_intent') this.paymentIntents.set(rec.object.id, rec.object);
    else if (rec.t === 'refund') this.refunds.set(rec.object.id, rec.object);
    else if (rec.t === 'idempotency') this.keys.set(rec.key, rec);
    else if (rec.t === 'event') this.events.push(rec.object);
  }

  // Appends and fsyncs every record, then applies them.
  commit(records) {
    fs.writeSync(this.fd, records.map((r) => JSON.stringify(r) + '\n').join(''));
    fs.fsyncSync(this.fd);
    for (const r of records) this.apply(r);
  }

  savedAnswer(key, nowMs) {
    const rec = this.keys.get(key);
    if (rec && nowMs - rec.at < KEY_RETENTION_MS) return rec;
    return undefined;
  }

  snapshot() {
    return {
      payment_intents: [...this.paymentIntents.values()],
      refunds: [...this.refunds.values()],
      idempotency_keys: [...this.keys.values()].map((k) => ({ key: k.key, endpoint: k.endpoint, status: k.status })),
      events: this.events,
    };
  }
}

module.exports = { Ledger, KEY_RETENTION_MS };
