'use strict';
// Stripe objects built from Stripe's own fixtures (fixtures.json, see FIXTURES_SOURCE): each
// answer starts as a deep copy of the fixture, so its field set is exactly Stripe's, and only
// the values the emulator decides are set.
//   PaymentIntent https://docs.stripe.com/api/payment_intents/object
//   Refund        https://docs.stripe.com/api/refunds/object
//   Event         https://docs.stripe.com/api/events/object
const crypto = require('node:crypto');
const fixtures = require('./fixtures.json');

const copy = (v) => JSON.parse(JSON.stringify(v));
const now = () => Math.floor(Date.now() / 1000);

function newId(prefix) {
  const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
  let s = '';
  for (const b of crypto.randomBytes(24)) s += alphabet[b % alphabet.length];
  return `${prefix}_${s}`;
}

// A PaymentIntent as create+confirm leaves it before the outcome is applied.
function paymentIntent(params) {
  const pi = copy(fixtures.payment_intent);
  const id = newId('pi');
  Object.assign(pi, {
    id,
    amount: params.amount,
    amount_capturable: 0,
    amount_details: { tip: {} },
    amount_received: 0,
    automatic_payment_methods: params.automatic_payment_methods
      ? { allow_redirects: params.automatic_payment_methods.allow_redirects ?? 'always', enabled: true }
      : null,
    canceled_at: null,
    cancellation_reason: null,
    capture_method: 'automatic',
    client_secret: `${id}_secret_${newId('s').slice(2)}`,
    created: now(),
    currency: params.currency,
    description: params.description ?? null,
    last_payment_error: null,
    latest_charge: null,
    metadata: params.metadata ?? {},
    next_action: null,
    payment_method: params.payment_method ?? null,
    payment_method_configuration_details: null,
    payment_method_types: params.payment_method_types ?? ['card'],
    processing: null,
    shipping: null,
    status: 'requires_payment_method',
    transfer_data: null,
    managed_payments: null,
  });
  return pi;
}

function refund(params, pi) {
  const r = copy(fixtures.refund);
  Object.assign(r, {
    id: newId('re'),
    amount: params.amount,
    balance_transaction: newId('txn'),
    charge: pi.latest_charge,
    created: now(),
    currency: pi.currency,
    destination_details: { card: { type: 'refund' }, type: 'card' },
    metadata: params.metadata ?? {},
    payment_intent: pi.id,
    reason: params.reason ?? null,
    status: 'succeeded',
    payment_method: pi.payment_method,
  });
  return r;
}

function event(type, object, idempotencyKey) {
  const e = copy(fixtures.event);
  Object.assign(e, {
    id: newId('evt'),
    api_version: '2025-01-27.acacia',
    created: now(),
    data: { object: copy(object) },
    pending_webhooks: 1,
    request: { id: newId('req'), idempotency_key: idempotencyKey ?? null },
    type,
  });
  return e;
}

// An error body, https://docs.stripe.com/api/errors
function error(type, message, extra = {}) {
  return { error: { type, message, ...extra } };
}

module.exports = { newId, paymentIntent, refund, event, error, copy, now };
