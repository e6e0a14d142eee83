#pragma once
// A payment record as stored: the immutable intent, the identities payorch minted, and the
// mutable progress of the state machine. Plain data.
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "core/clock.h"
#include "core/state_machine.h"

namespace payorch {

struct CaseSummary {
  std::string case_id;
  std::string reason;
  std::string status;  // "open" | "resolved"
};

// The payment a refund row refunds, as it is now (docs/refunds.md).
struct RefundOf {
  std::string id;
  std::string operation_id;
  std::string client_key;
  std::optional<std::string> vendor_reference;  // the vendor's charge id, once known
};

// The request an operation row came from (docs/operations.md, "Logs and request tracing"): its
// X-Request-Id, and the W3C trace it arrived in (a valid traceparent's trace id and flags), if
// any. Vendor calls for the row continue that trace. Rows from before these were kept have none.
struct RequestOrigin {
  std::optional<std::string> request_id;
  std::optional<std::string> trace_id;     // 32 lowercase hex digits
  std::optional<std::string> trace_flags;  // 2 lowercase hex digits
};

// One operation row: a payment, or a refund (operation_type "refund", docs/refunds.md). A refund
// is stored like a payment — the same identity, lease, fence, counting and case columns — so the
// engine, callbacks and reconciliation run on it unchanged; what is a refund's own is below.
struct Payment {
  // Identity and immutable intent.
  std::string id;
  std::string tenant_id;
  std::string operation_type;
  std::string operation_id;
  std::string provider;
  std::string client_key;
  std::string request_digest;
  std::int64_t amount_minor = 0;
  std::string currency;
  std::string payee;
  std::string source;
  std::optional<std::string> description;        // a refund's `reason`
  std::map<std::string, std::string> metadata;
  std::optional<RefundOf> refund_of;              // refunds only
  // Progress.
  PaymentState state = PaymentState::processing;
  NextAction next_action = NextAction::submit;
  UnixMillis next_attempt_at = 0;
  std::int64_t fence = 0;
  std::optional<std::string> lease_owner;
  std::optional<UnixMillis> lease_expires_at;
  std::int64_t attempt_count = 0;
  std::optional<UnixMillis> first_submit_at;
  std::optional<UnixMillis> last_submit_ended_at;
  std::optional<UnixMillis> last_submit_started_at;
  std::optional<UnixMillis> budget_started_at;  // set by an operator's retry
  std::int64_t budget_attempts_base = 0;        // attempt_count when the current budget began
  std::optional<std::string> vendor_reference;
  std::optional<std::string> failure_code;
  std::optional<std::string> failure_message;
  UnixMillis created_at = 0;
  UnixMillis updated_at = 0;
  // A refund waiting for its payment to succeed: the refund's DEFERRED state. Stored as its own
  // flag beside state PROCESSING and next_action none, so no claim, submit or transition can
  // touch it until its payment's transition releases it.
  bool deferred = false;
  // Payments: the sum of their SUCCEEDED refunds, and of their refunds not FAILED_FINAL (what
  // the money rule reserves). Kept by the database in the refunds' own transactions.
  std::int64_t amount_refunded_minor = 0;
  std::int64_t amount_reserved_minor = 0;
  // When the vendor accepted the close of this order: the vendor-side fence of a payment whose
  // automatic work is stopping (core/decide.h, Contract::confirmed_close).
  std::optional<UnixMillis> vendor_closed_at;
  // When an operator resolved it failed_final on a provider that closes orders: automatic
  // work stops it at the vendor first (store/resolution.h).
  std::optional<UnixMillis> stop_requested_at;
  // The request that created the row (immutable).
  RequestOrigin origin;
  // The most recent reconciliation case, if any.
  std::optional<CaseSummary> reconciliation;
};

}  // namespace payorch
