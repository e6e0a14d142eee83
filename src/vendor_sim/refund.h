#pragma once
// The sim vendor's refund (docs/contract.md §8, the `sim` protocol): request validation, the
// money rule, and the JSON shape of a refund. Pure functions.
#include <boost/json/object.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "vendor_sim/charge.h"

namespace payorch::vendor_sim {

// The four fields of POST /v1/refunds. reference equals the Idempotency-Key.
struct RefundParams {
  std::string reference;
  std::string charge;  // the refunded charge's id, "ch_…"
  std::int64_t amount_minor = 0;
  std::string currency;
};

// Validates a refund request as parse_charge_request does a charge (the same key, amount,
// currency and reference rules; fields.h); charge must be a non-empty string of at most 255
// bytes. Whether that charge exists is the ledger's question, not this one's.
std::optional<RefundParams> parse_refund_request(std::string_view idempotency_key,
                                                 std::string_view body, std::string& error);

// "same body": hex SHA-256 of the RFC 8785 canonical JSON of the four fields.
std::string request_hash(const RefundParams& p);

// The money a charge still has to give back: its amount minus its refunds that are succeeded
// or pending. Pending ones count because they may still succeed: two refunds in flight at
// once can then never together exceed the charge. A declined refund frees its amount.
std::int64_t unrefunded_minor(const Charge& charge, std::int64_t succeeded_and_pending_minor);

// What the vendor answers a refund of an existing charge in the same currency:
// - the charge is not succeeded (declined, or still pending): declined, charge_not_refundable;
// - more than unrefunded_minor: declined, exceeds_charge;
// - a charge paid with tok_pending: pending, and succeeds after --pending-delay (as its charge
//   did);
// - otherwise succeeded.
Outcome decide_refund(const Charge& charge, std::int64_t succeeded_and_pending_minor,
                      std::int64_t amount_minor);

// One refund row of the ledger.
struct Refund {
  std::string id;  // "rf_" + ULID
  RefundParams params;
  ChargeStatus status = ChargeStatus::succeeded;  // a refund has the same three statuses
  std::optional<std::string> decline_code;
  std::int64_t created_at = 0;  // sim clock, Unix ms
  std::int64_t updated_at = 0;
  std::int64_t key_expires_at = 0;
};

// The protocol's refund object: {"id","reference","charge","status","amount_minor","currency",
// "decline_code"} and nothing else.
boost::json::object refund_json(const Refund& r);

// The refund with the ledger's own columns too, for GET /_sim/ledger.
boost::json::object ledger_json(const Refund& r);

// "refund.succeeded" / "refund.declined" / "refund.pending".
std::string refund_event_type(ChargeStatus s);

}  // namespace payorch::vendor_sim
