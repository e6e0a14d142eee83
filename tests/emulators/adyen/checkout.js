'use strict';
// What the emulated Checkout API v71 does with a payment, a refund or a cancel: pure decisions
// that return the answer, the ledger records to commit and the webhook items to queue after
// the commit. Shapes follow github.com/Adyen/adyen-openapi json/CheckoutService-v71.json
// (PaymentRequest/PaymentResponse, PaymentRefundRequest/PaymentRefundResponse,
// StandalonePaymentCancelRequest/StandalonePaymentCancelResponse, ServiceError).
//
// storedPaymentMethodId drives the outcome:
//   stored_authorised  → Authorised (+ AUTHORISATION success=true webhook)
//   stored_refused     → Refused, refusalReason "Not enough balance" (+ success=false webhook)
//   stored_received    → Received; Authorised later, told by an AUTHORISATION webhook
//   anything else      → 422 errorCode 803 (no such stored payment details)
// Refunds are answered 201 {status:"received"}; their outcome comes in a REFUND webhook
// (success=false when the payment is not authorised or the refunds would exceed it).
// Cancels by paymentReference are answered 201 {status:"received"}; the outcome comes in a
// TECHNICAL_CANCEL webhook. A payment whose reference was cancelled before it arrived is
// answered Cancelled (the cancel fences it).

function serviceError(status, errorCode, message, errorType = 'validation') {
  return {status, body: {status, errorCode, message, errorType}};
}

function checkAmount(amount) {
  return amount && typeof amount === 'object' && Number.isInteger(amount.value) &&
    typeof amount.currency === 'string' && amount.currency.length === 3;
}

function missing(body, fields) {
  for (const f of fields) {
    if (f === 'amount' ? !checkAmount(body.amount) : body[f] === undefined || body[f] === null || body[f] === '')
      return serviceError(422, '100', `Required field '${f}' is not provided or invalid.`);
  }
  return null;
}

const outcomes = {
  stored_authorised: {resultCode: 'Authorised'},
  stored_refused: {resultCode: 'Refused', refusalReason: 'Not enough balance', refusalReasonCode: '12'},
  stored_received: {resultCode: 'Received'},
};

function authorisationItem(payment, success, reason) {
  const item = {
    eventCode: 'AUTHORISATION', success: success ? 'true' : 'false',
    pspReference: payment.pspReference, merchantAccountCode: payment.merchantAccount,
    merchantReference: payment.reference, amount: payment.amount,
    eventDate: new Date().toISOString(), paymentMethod: 'visa',
  };
  if (reason) item.reason = reason;
  return item;
}

function payment(ledger, body) {
  const error = missing(body, ['amount', 'merchantAccount', 'paymentMethod', 'reference', 'returnUrl']);
  if (error) return error;
  const method = body.paymentMethod || {};
  let outcome = outcomes[method.storedPaymentMethodId];
  if (!outcome) return serviceError(422, '803', 'PaymentDetail not found');
  const fenced = [...ledger.cancels.values()].some((c) => c.paymentReference === body.reference);
  if (fenced) outcome = {resultCode: 'Cancelled', refusalReason: 'Cancelled before processing'};
  const record = {
    pspReference: ledger.nextPsp(), reference: body.reference, merchantAccount: body.merchantAccount,
    amount: body.amount, storedPaymentMethodId: method.storedPaymentMethodId,
    shopperReference: body.shopperReference, shopperInteraction: body.shopperInteraction,
    recurringProcessingModel: body.recurringProcessingModel, metadata: body.metadata,
    created: new Date().toISOString(), ...outcome,
  };
  const answer = {
    pspReference: record.pspReference, resultCode: record.resultCode,
    merchantReference: record.reference, amount: record.amount,
  };
  if (outcome.refusalReason) answer.refusalReason = outcome.refusalReason;
  if (outcome.refusalReasonCode) answer.refusalReasonCode = outcome.refusalReasonCode;
  const webhooks = [];
  if (record.resultCode === 'Authorised') webhooks.push(authorisationItem(record, true));
  if (record.resultCode === 'Refused') webhooks.push(authorisationItem(record, false, outcome.refusalReason));
  return {status: 200, body: answer, records: [{t: 'payment', payment: record}], webhooks,
    received: record.resultCode === 'Received' ? record.pspReference : null};
}

// The later authorisation of a Received payment: the records and the webhook.
function authorise(ledger, pspReference) {
  const p = ledger.payments.get(pspReference);
  if (!p || p.resultCode !== 'Received') return null;
  return {records: [{t: 'payment_update', pspReference, changes: {resultCode: 'Authorised'}}],
    webhooks: [authorisationItem({...p, resultCode: 'Authorised'}, true)]};
}

function refund(ledger, paymentPsp, body) {
  const error = missing(body, ['amount', 'merchantAccount']);
  if (error) return error;
  const p = ledger.payments.get(paymentPsp);
  if (!p) return serviceError(422, '167', 'Original pspReference required for this operation');
  const refunded = [...ledger.refunds.values()]
    .filter((r) => r.paymentPspReference === paymentPsp && r.success)
    .reduce((sum, r) => sum + r.amount.value, 0);
  let reason = null;
  if (p.resultCode !== 'Authorised') reason = 'Payment not authorised';
  else if (body.amount.currency !== p.amount.currency) reason = 'Currency mismatch';
  else if (refunded + body.amount.value > p.amount.value) reason = 'Insufficient balance on payment';
  const record = {
    pspReference: ledger.nextPsp(), paymentPspReference: paymentPsp, reference: body.reference,
    merchantAccount: body.merchantAccount, amount: body.amount, status: 'received',
    success: reason === null, reason, created: new Date().toISOString(),
  };
  const answer = {
    merchantAccount: record.merchantAccount, paymentPspReference: paymentPsp,
    pspReference: record.pspReference, amount: record.amount, status: 'received',
  };
  if (record.reference !== undefined) answer.reference = record.reference;
  const item = {
    eventCode: 'REFUND', success: record.success ? 'true' : 'false',
    pspReference: record.pspReference, originalReference: paymentPsp,
    merchantAccountCode: record.merchantAccount, merchantReference: record.reference || '',
    amount: record.amount, eventDate: record.created,
  };
  if (reason) item.reason = reason;
  return {status: 201, body: answer, records: [{t: 'refund', refund: record}], webhooks: [item]};
}

function cancel(ledger, body) {
  const error = missing(body, ['merchantAccount', 'paymentReference']);
  if (error) return error;
  const p = ledger.paymentByReference(body.paymentReference);
  const hasRefunds = p && [...ledger.refunds.values()].some((r) => r.paymentPspReference === p.pspReference);
  const cancellable = p && ['Authorised', 'Received'].includes(p.resultCode) && !hasRefunds;
  const record = {
    pspReference: ledger.nextPsp(), paymentReference: body.paymentReference,
    reference: body.reference, merchantAccount: body.merchantAccount, status: 'received',
    success: Boolean(cancellable), created: new Date().toISOString(),
  };
  const records = [{t: 'cancel', cancel: record}];
  if (cancellable) records.push({t: 'payment_update', pspReference: p.pspReference, changes: {resultCode: 'Cancelled'}});
  const answer = {
    merchantAccount: record.merchantAccount, paymentReference: record.paymentReference,
    pspReference: record.pspReference, status: 'received',
  };
  if (record.reference !== undefined) answer.reference = record.reference;
  const webhooks = p ? [{
    eventCode: 'TECHNICAL_CANCEL', success: cancellable ? 'true' : 'false',
    pspReference: record.pspReference, originalReference: p.pspReference,
    merchantAccountCode: record.merchantAccount, merchantReference: body.paymentReference,
    amount: p.amount, eventDate: record.created,
  }] : [];
  return {status: 201, body: answer, records, webhooks};
}

module.exports = {payment, authorise, refund, cancel, serviceError};
