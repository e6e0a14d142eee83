#pragma once
// SQL for the payments table and its companions (outbox, cases). Every function takes the
// connection it runs on; the caller owns the transaction. They throw SqliteError.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/payment.h"
#include "core/state_machine.h"
#include "store/sqlite.h"
#include "util/metrics.h"

namespace payorch::store {

std::optional<Payment> find_payment_by_id(Db& db, const std::string& id);
std::optional<Payment> find_payment_by_operation(Db& db, const std::string& tenant_id,
                                                 const std::string& operation_type,
                                                 const std::string& operation_id);

struct PaymentPage {
  std::vector<Payment> payments;
  std::optional<std::string> next_cursor;  // the last id of this page when more may follow
};

// A tenant's payments, newest first. `cursor` is the id of the last payment already seen.
PaymentPage list_payments(Db& db, const std::string& tenant_id, std::optional<PaymentState> state,
                          int limit, const std::optional<std::string>& cursor);

// Inserts the payment row. Throws SqliteError (unique_violation()) on a business-key or
// client_key collision.
void insert_payment(Db& db, const Payment& p);

// Writes one outbox event for `p` as it is now; returns the event id.
std::string insert_outbox_event(Db& db, EventType type, const Payment& p, UnixMillis now,
                                Random& rng);

// Counts per state, for /status and tests.
std::int64_t count_payments(Db& db, std::optional<PaymentState> state);

// ---- The state machine's compare-and-set (docs/contract.md §3) ----

// A worker's claim on a payment: after claim_lease, every write it makes is conditional on
// (id, state, fence).
struct Lease {
  std::string payment_id;
  PaymentState state;
  std::int64_t fence;
  std::string owner;
  UnixMillis expires_at;
};

// Claims the payment if it is non-terminal, due and not leased by someone else (or that lease
// expired): owner, lease_expires_at = now + lease, fence = fence + 1. Returns nullopt if it
// could not be claimed.
std::optional<Lease> claim_lease(Db& db, const std::string& payment_id, const std::string& owner,
                                 UnixMillis now, Millis lease);

// How many due payments of one provider a claim may take.
struct ClaimQuota {
  std::string provider;
  int max = 0;
};

// Claims up to `max` due payments of the providers in `quotas` (each at most its own max),
// oldest due first across them. Providers not in `quotas` are left alone.
std::vector<Lease> claim_due(Db& db, const std::string& owner, UnixMillis now, Millis lease,
                             const std::vector<ClaimQuota>& quotas, int max);

enum class CasResult {
  applied,          // the row changed and its outbox event was written
  already_in_state, // nothing to do: the payment is already where the transition leads
  stale_fence,      // a newer lease holder owns it: this writer's decision is discarded
  illegal,          // the payment is in another state: the transition is refused and logged
  not_found,
};
std::string_view to_string(CasResult r);

struct TransitionUpdate {
  NextAction next_action = NextAction::none;
  UnixMillis next_attempt_at = 0;
  bool release_lease = true;
  std::optional<std::string> vendor_reference;
  std::optional<std::string> failure_code;
  std::optional<std::string> failure_message;
  std::optional<UnixMillis> last_submit_ended_at;  // set when the call was a submit
};

// Applies `t` to the payment as a compare-and-set on (id, state = t.from, fence), writing its
// outbox event (and opening a case, if the transition says so) in the caller's transaction.
// `fence` is the lease's fence; nullopt for writers that do not hold a lease (callbacks,
// operators), which compare on state alone and advance the fence, so that a worker whose call
// was in flight meanwhile can no longer write (its answer is stale_fence).
CasResult apply_transition(Db& db, const std::string& payment_id, std::optional<std::int64_t> fence,
                           const Transition& t, const TransitionUpdate& u, UnixMillis now,
                           Random& rng);

// Told about every state change apply_transition made (from != to), once its transaction has
// committed — never about one that rolled back. The daemon counts them for /metrics. Thread-safe;
// an empty function removes the observer.
using TransitionObserver = std::function<void(PaymentState from, PaymentState to)>;
void set_transition_observer(TransitionObserver observer);
// Sets the observer to count `payorch_transitions_total{from,to}` in `metrics`, which must
// outlive every transaction that follows.
void count_transitions_in(Metrics& metrics);

}  // namespace payorch::store
