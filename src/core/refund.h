#pragma once
// A refund record as stored, and the money rule that admits a new one (docs/refunds.md, the
// contract's §8). Plain data and a pure function: the store runs the rule inside the refund's
// intake transaction, over the payment's refunds as that transaction reads them, so two
// concurrent refunds can never together exceed the payment.
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "core/clock.h"
#include "core/payment.h"
#include "core/refund_state.h"

namespace payorch {

struct Refund {
  // Identity and immutable intent.
  std::string id;                    // "re_" + ULID
  std::string tenant_id;
  std::string operation_id;          // scope (tenant_id, "refund", operation_id)
  std::string payment_id;
  std::string payment_operation_id;
  std::string provider;              // the payment's
  std::string client_key;            // "ck_…", committed at intake, before any vendor call
  std::string request_digest;        // refund_request_digest() (core/digest.h)
  std::int64_t amount_minor = 0;
  std::string currency;              // the payment's
  std::optional<std::string> reason;
  std::map<std::string, std::string> metadata;
  // Progress (the lease, fence and timing fields join when the store does).
  RefundState state = RefundState::deferred;
  NextAction next_action = NextAction::none;  // submit once its payment has succeeded
  std::int64_t attempt_count = 0;
  std::optional<std::string> vendor_reference;
  std::optional<std::string> failure_code;
  std::optional<std::string> failure_message;
  UnixMillis created_at = 0;
  UnixMillis updated_at = 0;
  std::optional<CaseSummary> reconciliation;
};

// A refund row (operation_type "refund") as a Refund: its state is DEFERRED while the row is
// deferred, else the protocol state. std::logic_error for a row that is not a refund.
Refund as_refund(const Payment& row);

// What the money rule needs of an existing refund.
struct RefundAmount {
  std::int64_t amount_minor = 0;
  RefundState state = RefundState::deferred;
};

// The answer to "may this payment take a new refund of `amount_minor`?".
struct RefundAdmission {
  enum class Kind {
    deferred,                // accepted; waits for its payment (PROCESSING or UNKNOWN)
    processing,              // accepted; the payment has SUCCEEDED, send it
    payment_not_refundable,  // 409: the payment is FAILED_FINAL
    exceeds_payment,         // 422: refunds not FAILED_FINAL + this one > payment amount
    invalid_amount,          // not 1 .. 2^53-1 (intake validation refuses it first, as 422)
  } kind = Kind::invalid_amount;
  // What the payment can still take before this refund: its amount minus its refunds that are
  // not FAILED_FINAL (0 if stored refunds already exceed it). For the 422's detail.
  std::int64_t remaining_minor = 0;

  bool accepted() const { return kind == Kind::deferred || kind == Kind::processing; }
  // The state the accepted refund is created in.
  std::optional<RefundState> initial_state() const;
};

// The stable problem code of a refusal ("payment-not-refundable", "refund-exceeds-payment",
// "invalid-request"); "" for an acceptance.
std::string_view problem_code(RefundAdmission::Kind k);

// The money rule. Checked in this order:
//  1. amount_minor outside 1 .. 2^53-1 → invalid_amount (a refund never adds money);
//  2. payment FAILED_FINAL → payment_not_refundable, whatever the amount: nothing was charged;
//  3. sum(refunds not FAILED_FINAL) + amount_minor > payment_amount_minor → exceeds_payment.
//     DEFERRED refunds count like sent ones (they will be sent); a FAILED_FINAL refund frees
//     its amount. Computed by subtracting from the payment's amount, so no sum overflows
//     whatever the stored amounts; exactly the remaining amount is accepted;
//  4. accepted: PROCESSING if the payment SUCCEEDED, DEFERRED if it is PROCESSING or UNKNOWN.
// A stored refund with a negative amount is an impossible state: std::logic_error.
RefundAdmission admit_refund(std::int64_t payment_amount_minor, PaymentState payment_state,
                             std::span<const RefundAmount> refunds, std::int64_t amount_minor);

}  // namespace payorch
