#pragma once
// Refund rows (docs/refunds.md): the refund's intake transaction with the money rule, a
// payment's refunds, and the release of DEFERRED refunds in their payment's transition. A refund
// is a row of `payments` (operation_type "refund", refund_of = its payment), so everything else
// — claims, transitions, callbacks, cases, the exposure — runs on it as on a payment.
//
// The decisions are written once for both drivers (store/refund_flow.h); the functions here are
// SQLite's, inside the Writer's transaction, and throw SqliteError.
#include <cstdint>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/intent.h"
#include "core/payment.h"
#include "core/refund.h"
#include "store/sqlite.h"

namespace payorch::store {

struct RefundIntakeRequest {
  std::string tenant_id;
  std::string payment_operation_id;  // from the path
  RefundIntent intent;
  RequestOrigin origin;              // kept with the new refund
};

struct RefundIntakeOutcome {
  enum class Kind {
    created,          // 201: the new refund, DEFERRED or PROCESSING, and its refund.created event
    replayed,         // 200: the stored refund with this key and the same request_digest
    conflict,         // 422 idempotency-key-reuse: stored with another digest (audited)
    no_payment,       // 404: the tenant has no payment with that operation_id
    not_refundable,   // 409 payment-not-refundable: the payment is FAILED_FINAL
    exceeds_payment,  // 422 refund-exceeds-payment
  } kind = Kind::created;
  Payment refund;                    // created / replayed / conflict: the refund row
  std::int64_t remaining_minor = 0;  // exceeds_payment: what the payment can still take
  std::string attempted_digest;
};

// The refund row an accepted intake inserts: a fresh id (re_…) and client_key, the payment's
// provider and currency, DEFERRED (deferred, PROCESSING, next_action none) or PROCESSING with
// next_action submit, due now. Nothing is written.
Payment new_refund(const RefundIntakeRequest& req, const Payment& payment, RefundState initial,
                   const std::string& request_digest, UnixMillis now, Random& rng);

// Records one refund request, inside the caller's transaction (store/refund_flow.h):
//  1. the tenant's payment by operation_id, or no_payment;
//  2. a refund already stored under (tenant, "refund", operation_id): replayed with the same
//     request_digest, else conflict (one idempotency_conflicts row);
//  3. the money rule (admit_refund, core/refund.h) over the payment's refunds as this
//     transaction reads them: not_refundable, exceeds_payment;
//  4. created: the refund row and its refund.created event. The row's insert reserves its amount
//     on the payment (a trigger), under a CHECK that refunds stay within the payment.
// Crash timeline: nothing is durable before the caller commits; after the commit, a retry
// with the same key is replayed. No vendor call precedes the commit.
RefundIntakeOutcome record_refund_intake(Db& db, const RefundIntakeRequest& req, UnixMillis now,
                                         Random& rng);

// A payment's refunds, oldest first.
std::vector<Payment> list_refunds(Db& db, const std::string& payment_id);

// The tenant's refund with that operation_id.
std::optional<Payment> find_refund(Db& db, const std::string& tenant_id, const std::string& operation_id);

// Called by apply_transition once a transition of the payment `payment_id` to `now_state` has
// been written, in that transaction: each of its DEFERRED refunds takes deferred_refund_step()
// (core/refund_state.h) with its outbox event. Returns how many moved.
int release_deferred_refunds(Db& db, const std::string& payment_id, PaymentState now_state,
                             UnixMillis now, Random& rng);

// Called by apply_transition once the payment `payment_id` went from SUCCEEDED to FAILED_FINAL,
// in that transaction: payment_corrected_flow (store/refund_flow.h). Returns the cases opened.
int open_payment_corrected_cases(Db& db, const std::string& payment_id, UnixMillis now, Random& rng);

// Takes the refund's automatic work away (next_action none), keeping its state and its lease:
// a call already on the wire still records what the vendor answered. The hold of a refund whose
// payment was corrected (store/refund_flow.h). False when it had none.
bool hold_refund_work(Db& db, const std::string& refund_id, UnixMillis now);

// Refunds per state, DEFERRED apart (for /status and tests).
std::vector<std::pair<RefundState, std::int64_t>> count_refunds(Db& db);

}  // namespace payorch::store
