#include "core/refund.h"

#include "core/expect.h"
#include "core/intent.h"

namespace payorch {

std::optional<RefundState> RefundAdmission::initial_state() const {
  if (kind == Kind::deferred) return RefundState::deferred;
  if (kind == Kind::processing) return RefundState::processing;
  return std::nullopt;
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
