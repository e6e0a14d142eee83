#pragma once
// Leases on payments (docs/contract.md §3): claiming due work, marking a claimed call as started, and
// giving a lease up without a decision. The caller owns the transaction; every write after a
// claim is conditional on the lease's fence.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/payment.h"
#include "core/risk.h"
#include "core/state_machine.h"
#include "store/sqlite.h"

namespace payorch::store {

// A worker's claim on a payment: after claim_lease, every write it makes is conditional on
// (id, state, fence).
struct Lease {
  std::string payment_id;
  PaymentState state;
  std::int64_t fence;
  std::string owner;
  UnixMillis expires_at;
  // The whole row as the claim left it, when the driver's claim returned it (PostgreSQL's
  // does, in the same statement); nullopt: read it.
  std::optional<Payment> row = std::nullopt;
};

// Automatic work left: a non-terminal payment whose next_action is not none — the rows of the
// partial index payments_due (schema 005). An SQL condition on table `payments`.
inline constexpr std::string_view has_automatic_work =
    "state IN ('PROCESSING','UNKNOWN') AND next_action <> 'none'";

// Due work, the one definition: automatic work left whose next_attempt_at is not after now. A
// leased payment is not due before its lease lapses, since a claim sets next_attempt_at to the
// lease's expiry. An SQL condition on table `payments`, `now_param` naming the parameter that
// holds now (e.g. "?2").
std::string due_condition(std::string_view now_param);

// Claims the payment if it is due (due_condition) and not leased by someone else (or that
// lease expired): owner, lease_expires_at = now + lease, fence = fence + 1. Returns nullopt if
// it could not be claimed.
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

// Before a vendor call, in the claim transaction: counts the attempt and, for a submit, marks it
// started (and stamps first_submit_at once). Returns false if the fence no longer matches.
// `claimed`, when given, is the payment as claimed: its counters are brought up to date from
// the row, so the caller need not read it again.
bool record_call_started(Db& db, const std::string& payment_id, std::int64_t fence, bool submit,
                         UnixMillis now, Payment* claimed = nullptr);

// What record_call_started changes, as it was before the claim.
struct CallMarks {
  std::int64_t attempt_count = 0;
  std::optional<UnixMillis> first_submit_at;
  std::optional<UnixMillis> last_submit_started_at;
};

// A vendor call a claim round is about to make, for start_calls.
struct CallStart {
  std::string payment_id;
  std::int64_t fence = 0;
  bool submit = false;
  // Set for a submit that takes its payment into the exposure (a PROCESSING payment) when its
  // provider has risk caps (docs/contract.md §5): it starts only if the exposure stays within
  // them, as would_exceed_risk_cap (core/risk.h) says.
  std::optional<RiskCap> cap;
  std::string provider;  // the payment's, for `cap`
  std::string currency;
  std::int64_t amount_minor = 0;
};

enum class CallStartResult {
  started,  // marked started as record_call_started does: send it once the claim commits
  held,     // the risk caps hold it back: its lease is given up (release_lease)
  stale,    // the fence no longer matches: nothing written
};

struct StartedCall {
  CallStartResult result = CallStartResult::stale;
  CallMarks marks;  // when started: the payment's counters now
};

// In the claim transaction, before anything is sent: record_call_started for each of `calls`
// in order, except a capped submit that would take its provider over a cap, whose lease is
// released instead (next look at `held_until`). A capped submit counts against the caps before
// the next one is judged. Answers in the order of `calls`. SQLite has one writer, so reading
// the kept exposure is exact; PostgreSQL takes each capped submit out of the room left under
// its caps (store/postgres/leases.h), exact across every node at once.
std::vector<StartedCall> start_calls(Db& db, const std::vector<CallStart>& calls, UnixMillis now,
                                     UnixMillis held_until);

// A claimed call that was never sent (the daemon began to stop between the claim's commit and
// the send, or too little of the lease was left to send it): puts back what record_call_started
// wrote and gives up the lease, due again at `next_attempt_at`. The payment then looks as it
// did before the claim — an unsent submit is never taken for an interrupted one. Returns false
// if the fence no longer matches (someone decided meanwhile; the marks stay, which only makes
// the next claimant recover by key).
bool undo_call_started(Db& db, const std::string& payment_id, std::int64_t fence,
                       const CallMarks& before, UnixMillis next_attempt_at);

// Gives up a lease without a decision (nothing to do now); next look at `next_attempt_at`.
bool release_lease(Db& db, const std::string& payment_id, std::int64_t fence, UnixMillis next_attempt_at);

// Releases every lease `owner` holds (clean shutdown). Returns how many.
int release_leases_of(Db& db, const std::string& owner);

}  // namespace payorch::store
