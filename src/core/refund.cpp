#include "core/refund.h"

#include "core/expect.h"
#include "core/intent.h"

namespace payorch {

std::optional<RefundState> RefundAdmission::initial_state() const {
  if (kind == Kind::deferred) return RefundState::deferred;
  if (kind == Kind::processing) return RefundState::processing;
  return std::nullopt;
}

Refund as_refund(const Payment& row) {
  if (!row.refund_of) broken_belief("a refund row names the payment it refunds", __FILE__, __LINE__);
  Refund r;
  r.id = row.id;
  r.tenant_id = row.tenant_id;
  r.operation_id = row.operation_id;
  r.payment_id = row.refund_of->id;
  r.payment_operation_id = row.refund_of->operation_id;
  r.provider = row.provider;
  r.client_key = row.client_key;
  r.request_digest = row.request_digest;
  r.amount_minor = row.amount_minor;
  r.currency = row.currency;
  r.reason = row.description;
  r.metadata = row.metadata;
  r.state = row.deferred ? RefundState::deferred : refund_state(row.state);
  r.next_action = row.next_action;
  r.attempt_count = row.attempt_count;
  r.vendor_reference = row.vendor_reference;
  r.failure_code = row.failure_code;
  r.failure_message = row.failure_message;
  r.created_at = row.created_at;
  r.updated_at = row.updated_at;
  r.reconciliation = row.reconciliation;
  return r;
}

std::string_view problem_code(RefundAdmission::Kind k) {
  switch (k) {
    case RefundAdmission::Kind::deferred:
    case RefundAdmission::Kind::processing: return "";
    case RefundAdmission::Kind::payment_not_refundable: return "payment-not-refundable";
    case RefundAdmission::Kind::exceeds_payment: return "refund-exceeds-payment";
    case RefundAdmission::Kind::invalid_amount: return "invalid-request";
  }
  return "";
}

RefundAdmission admit_refund(std::int64_t payment_amount_minor, PaymentState payment_state,
                             std::span<const RefundAmount> refunds, std::int64_t amount_minor) {
  using Kind = RefundAdmission::Kind;
  // What is still refundable; stays within [0, payment_amount_minor], so nothing overflows.
  std::int64_t remaining = payment_amount_minor < 0 ? 0 : payment_amount_minor;
  for (const RefundAmount& r : refunds) {
    if (r.amount_minor < 0) broken_belief("stored refund amounts are not negative", __FILE__, __LINE__);
    if (r.state == RefundState::failed_final) continue;
    remaining = r.amount_minor >= remaining ? 0 : remaining - r.amount_minor;
  }
  if (amount_minor < 1 || amount_minor > max_amount_minor) return {Kind::invalid_amount, remaining};
  if (payment_state == PaymentState::failed_final) return {Kind::payment_not_refundable, remaining};
  if (amount_minor > remaining) return {Kind::exceeds_payment, remaining};
  if (payment_state == PaymentState::succeeded) return {Kind::processing, remaining};
  return {Kind::deferred, remaining};
}

}  // namespace payorch
