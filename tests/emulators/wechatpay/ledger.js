'use strict';
// The emulator's durable ledger: one JSON object per line, appended and fsync'ed before the
// answer that depends on it is sent, and replayed at start (a torn last line was never
// committed). Records: order, order_update, refund, refund_update, notification,
// notification_delivered, notification_abandoned.
const fs = require('node:fs');

class Ledger {
  constructor(path) {
    this.path = path;
    this.orders = new Map();         // out_trade_no → order
    this.refunds = new Map();        // out_refund_no → refund
    this.notifications = new Map();  // id → {url, event, delivered, abandoned}
    this.sequence = 0;
    if (fs.existsSync(path)) {
      for (const line of fs.readFileSync(path, 'utf8').split('\n')) {
        if (!line.trim()) continue;
        let record;
        try { record = JSON.parse(line); } catch { continue; }
        this.apply(record);
      }
    }
    this.fd = fs.openSync(path, 'a');
  }

  apply(r) {
    this.sequence = Math.max(this.sequence, r.seq || 0);
    switch (r.t) {
      case 'order': this.orders.set(r.order.out_trade_no, r.order); break;
      case 'order_update': Object.assign(this.orders.get(r.out_trade_no), r.changes); break;
      case 'refund': this.refunds.set(r.refund.out_refund_no, r.refund); break;
      case 'refund_update': Object.assign(this.refunds.get(r.out_refund_no), r.changes); break;
      case 'notification':
        this.notifications.set(r.id, {id: r.id, url: r.url, event: r.event, delivered: false, abandoned: false});
        break;
      case 'notification_delivered': if (this.notifications.has(r.id)) this.notifications.get(r.id).delivered = true; break;
      case 'notification_abandoned': if (this.notifications.has(r.id)) this.notifications.get(r.id).abandoned = true; break;
      default: break;
    }
  }

  // Appends the records as one fsync'ed write, then applies them: all or nothing on a crash.
  commit(...records) {
    if (records.length === 0) return;
    const lines = records.map((r) => JSON.stringify({...r, seq: ++this.sequence})).join('\n') + '\n';
    fs.writeSync(this.fd, lines);
    fs.fsyncSync(this.fd);
    for (const r of records) this.apply(r);
  }

  snapshot() {
    const notes = [...this.notifications.values()];
    return {
      orders: [...this.orders.values()],
      refunds: [...this.refunds.values()],
      notifications: {
        pending: notes.filter((n) => !n.delivered && !n.abandoned).length,
        delivered: notes.filter((n) => n.delivered).length,
        abandoned: notes.filter((n) => n.abandoned).length,
        events: notes.map((n) => ({id: n.id, event_type: n.event.event_type, delivered: n.delivered})),
      },
    };
  }
}

module.exports = {Ledger};
