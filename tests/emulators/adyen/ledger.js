'use strict';
// The emulator's durable ledger: one JSON object per line, appended and fsync'ed before the
// answer that depends on it is sent, and replayed at start. What a line records is what the
// emulator has committed: a payment, a refund, a cancel, an idempotency key's stored answer,
// a webhook item queued or delivered.
const fs = require('node:fs');

class Ledger {
  constructor(path) {
    this.path = path;
    this.payments = new Map();   // pspReference → payment
    this.refunds = new Map();    // pspReference → refund
    this.cancels = new Map();    // pspReference → cancel
    this.keys = new Map();       // idempotency key → {hash, status, body}
    this.webhooks = new Map();   // item id → {item, delivered}
    this.sequence = 0;
    if (fs.existsSync(path)) {
      for (const line of fs.readFileSync(path, 'utf8').split('\n')) {
        if (!line.trim()) continue;
        let record;
        try { record = JSON.parse(line); } catch { continue; }  // a torn last line: never committed
        this.apply(record);
      }
    }
    this.fd = fs.openSync(path, 'a');
  }

  apply(r) {
    this.sequence = Math.max(this.sequence, r.seq || 0);
    switch (r.t) {
      case 'payment': this.payments.set(r.payment.pspReference, r.payment); break;
      case 'payment_update': Object.assign(this.payments.get(r.pspReference), r.changes); break;
      case 'refund': this.refunds.set(r.refund.pspReference, r.refund); break;
      case 'refund_update': Object.assign(this.refunds.get(r.pspReference), r.changes); break;
      case 'cancel': this.cancels.set(r.cancel.pspReference, r.cancel); break;
      case 'key': this.keys.set(r.key, {hash: r.hash, status: r.status, body: r.body}); break;
      case 'webhook': this.webhooks.set(r.id, {item: r.item, delivered: false}); break;
      case 'webhook_delivered': if (this.webhooks.has(r.id)) this.webhooks.get(r.id).delivered = true; break;
      default: break;
    }
  }

  // Appends the records as one write, fsync'ed, then applies them: all or nothing on a crash
  // (a torn line is skipped at reload).
  commit(...records) {
    const lines = records.map((r) => JSON.stringify({...r, seq: ++this.sequence})).join('\n') + '\n';
    fs.writeSync(this.fd, lines);
    fs.fsyncSync(this.fd);
    for (const r of records) this.apply(r);
  }

  nextPsp() {
    // Adyen's pspReference: 16 characters, globally unique.
    const n = (this.sequence + 1).toString(36).toUpperCase();
    const random = Math.random().toString(36).slice(2).toUpperCase().replace(/[^0-9A-Z]/g, '');
    return (n + 'X' + random + '0000000000000000').slice(0, 16);
  }

  paymentByReference(reference) {
    for (const p of this.payments.values()) if (p.reference === reference) return p;
    return undefined;
  }

  snapshot() {
    return {
      payments: [...this.payments.values()],
      refunds: [...this.refunds.values()],
      cancels: [...this.cancels.values()],
      idempotency_keys: this.keys.size,
      webhooks: {
        pending: [...this.webhooks.values()].filter((w) => !w.delivered).length,
        delivered: [...this.webhooks.values()].filter((w) => w.delivered).length,
      },
    };
  }
}

module.exports = {Ledger};
