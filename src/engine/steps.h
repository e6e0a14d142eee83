#pragma once
// The engine's two transactions as functions of (database, inputs, clock reading, randomness):
// the claim round and the recording of one vendor answer. The daemon's Engine runs them as
// Writer jobs; the deterministic simulation (tests/dst) runs the very same functions on its own
// connection, one seed at a time. Neither does I/O beyond the connection it is given, and
// neither commits: the caller owns the transaction.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <boost/json/object.hpp>

#include "core/clock.h"
#include "core/decide.h"
#include "core/payment.h"
#include "core/risk.h"
#include "providers/adapter.h"
#include "store/leases.h"
#include "store/transitions.h"
#include "store/store.h"
#include "util/metrics.h"

namespace payorch::engine {

// What the vendor is sent for a payment: its client_key and immutable parameters.
providers::ChargeRequest charge_of(const Payment& p);
// The vendor's view of a refund row (docs/refunds.md): its own key, the charge it refunds.
providers::RefundRequest refund_request_of(const Payment& refund);

// One vendor call a claim round decided to make. The claim transaction has already counted the
// attempt and, for a submit, marked it started.
struct Call {
  Payment payment;  // as claimed; attempt_count already counts this call
  std::int64_t fence = 0;
  CallKind call = CallKind::submit;
  Contract contract;
  store::CallMarks before;  // the counters the claim changed, to undo a call never sent
  // Set when automatic work is stopping for this reason under a confirmed close (core/decide.h
  // Plan::stopping): the call is the close or the query that confirms it.
  std::optional<CaseReason> stopping;
};

struct ClaimRound {
  std::string owner;
  UnixMillis now = 0;
  Millis lease{30'000};
  int max = 1;                 // free worker slots
  Millis poll_interval{500};   // a submit held back by a risk cap looks again after two of these
  const std::map<std::string, Contract>* contracts = nullptr;  // by provider; required
  // The providers whose payments this round may claim, each with at most how many (a provider
  // whose breaker is open gets one probe or none). Payments of other providers stay untouched.
  std::vector<store::ClaimQuota> quotas;
  // Risk caps by provider (docs/contract.md §5): a submit that would take its provider's exposure over a
  // cap waits; recovery of UNKNOWN payments goes on. Null, or a provider absent: no cap.
  const std::map<std::string, RiskCap>* caps = nullptr;
};

// A payment automatic work gave up on, to be fenced at the vendor (docs/contract.md §5: an optional
// fence(payment) — close/cancel by reference so that a late success becomes impossible). The
// caller sends the fence after the give-up transaction commits, and only if the provider's
// adapter supports_fence(); the answer becomes evidence on the case (fence_evidence), never a
// state change.
struct FenceCall {
  Payment payment;  // as it was when the case opened
  CaseReason reason = CaseReason::retry_budget_exhausted;
};

// Whether giving up on `p` for `reason` asks for a vendor-side fence: a payment (never a
// refund) with a submit that may have left (first_submit_at set), given up because its budget
// or key retention ran out or its contract cannot recover. vendor_key_mismatch is not fenced:
// the vendor holds another request under this reference, and cancelling by reference could
// void that one; an operator looks first.
bool fence_wanted(const Payment& p, CaseReason reason);

// The fence's answer as case evidence: {"source":"vendor_fence","what":<outcome>,...}.
boost::json::object fence_evidence(const Payment& p, CaseReason reason,
                                   const providers::VendorResult& result, UnixMillis now);

// The fences owed after a restart: payments in an open case whose reason is a give-up
// fence_wanted() accepts, of a provider in `fenced_providers`, whose case has no
// "vendor_fence" evidence yet (the process stopped or died between the case's commit and the
// fence's answer). Reads only; at most `max`.
std::vector<FenceCall> fences_owed(store::Tx& tx, const std::vector<std::string>& fenced_providers,
                                   int max = 1000);

// Claims due payments (lease, fence + 1) and plans each: an interrupted submit becomes UNKNOWN,
// spent budgets open cases, receipt-only waits are rescheduled, and calls to make are marked
// started (invariant 1: committed before anything is sent). Returns the calls to make once the
// caller has committed. Payments it gave up on for which fence_wanted() holds are appended to
// `fences` when given.
std::vector<Call> claim_round(store::Tx& tx, const ClaimRound& round, Random& rng,
                              std::vector<FenceCall>* fences = nullptr);

// A claimed call that was not sent after all (the daemon is stopping, or too little of its
// lease is left): undoes what the claim wrote for it and gives up the lease, due at once.
void unclaim(store::Tx& tx, const Call& call, UnixMillis now);

// Whether `call` may be sent at `now`: all of its time on the wire (Contract::call_time, every
// request it makes) ends before its lease lapses. A call that does not fit is given back, due
// again (Engine::keep_sendable): otherwise a second worker could act with a request still out.
bool fits_in_lease(const Call& call, UnixMillis now);

// Records a vendor answer: decide + fenced transition (+ give up, + case evidence). A stale
// worker's answer changes nothing unless it is a final answer: contradicting a terminal payment
// it opens late_contradiction (counted in `metrics` when given); reaching a payment held in an
// open case it becomes that case's evidence. `jitter` in [0, 1). A give-up for which
// fence_wanted() holds is appended to `fences` when given.
store::CasResult record_outcome(store::Tx& tx, const Call& call, const providers::VendorResult& result,
                                UnixMillis now, double jitter, Random& rng, Metrics* metrics,
                                std::vector<FenceCall>* fences = nullptr);

}  // namespace payorch::engine
