#pragma once
// "What does this vendor outcome mean under this provider's contract?" — the decisions of
// docs/contract.md §3 and §5 as pure functions of (payment progress, outcome, contract, now). The engine
// applies their results with the store's fenced compare-and-set; nothing here does I/O.
#include <cstdint>
#include <optional>
#include <string_view>

#include "core/clock.h"
#include "core/state_machine.h"

namespace payorch {

// How a payment whose submit may or may not have taken effect is recovered: ask the vendor
// (lookup), send the same request again (replay), or wait for its callback (none). The names
// are the YAML's contract.recovery.
enum class RecoveryMode { lookup, replay, none };
std::string_view to_string(RecoveryMode m);
std::optional<RecoveryMode> parse_recovery_mode(std::string_view s);

// A provider's contract plus the local timings that bound when a call can still be on the wire.
struct Contract {
  Millis key_retention{std::chrono::hours(24)};
  RecoveryMode recovery = RecoveryMode::lookup;
  std::optional<Millis> not_found_final_after;  // nullopt: "never" trust a not-found
  int max_attempts = 10;
  Millis initial_backoff{1'000};
  Millis max_backoff{60'000};
  Millis give_up_after{std::chrono::hours(1)};
  Millis request_timeout{10'000};
  Millis lease{30'000};
  // The vendor-side fence with confirmation (docs/execution.md, "Closing an order"): the
  // vendor closes an order by our reference and can be asked about it afterwards (wechatpay,
  // alipay). A payment whose automatic work must stop for a spent budget or a lapsing key is
  // closed, asked about once more, and FAILED_FINAL only when the vendor shows it closed and
  // unpaid; anything else opens the case. close_not_before: the vendor's minimum time between
  // creating an order and closing it (WeChat Pay: 5 min), kept by scheduling the close.
  bool confirmed_close = false;
  Millis close_not_before{0};
  // How long an order sent to the vendor stays payable before the buyer acts on it (Alipay
  // precreate: the QR code, sent as its expiry with the order). Until it has passed, the
  // vendor's "no such order" only says the buyer has not scanned yet (order_absent_final_at).
  // nullopt: the order exists once the vendor answered.
  std::optional<Millis> order_expiry;
  // The most vendor requests one call makes one after the other, each under request_timeout
  // (WeChat Pay's refund: the order's query, then the refund; Alipay's close: the close, then a
  // query telling a paid order from a closed one). The lease and the engine's check before
  // sending reserve call_time() for a call, not one request's timeout.
  int requests_per_call = 1;
  Millis call_time() const { return request_timeout * requests_per_call; }

  // Whether recovery may send the same request again (replay, or lookup with a trustworthy
  // not-found): only those contracts are bounded by key retention.
  bool resubmits() const {
    return recovery == RecoveryMode::replay ||
           (recovery == RecoveryMode::lookup && not_found_final_after.has_value());
  }
};

// What the vendor told us, normalized (the providers' outcomes map onto this one to one).
enum class VendorOutcome {
  succeeded, declined, pending, not_found, ambiguous, not_sent, key_mismatch, auth_refused,
  unsupported,
};
std::string_view to_string(VendorOutcome o);

// The parts of a payment the decisions depend on.
struct Progress {
  PaymentState state = PaymentState::processing;
  NextAction next_action = NextAction::submit;
  std::int64_t attempt_count = 0;                  // vendor calls already made (incl. this one)
  std::optional<UnixMillis> first_submit_at;       // when the key was first sent
  // The current retry budget: an operator's `retry` starts a new one. Key retention still
  // counts from first_submit_at.
  std::optional<UnixMillis> budget_started_at;     // nullopt: first_submit_at
  std::int64_t budget_attempts_base = 0;
  std::optional<UnixMillis> last_submit_ended_at;  // answer or timeout of the last submit
  // When the vendor accepted the close of this order (Contract::confirmed_close).
  std::optional<UnixMillis> vendor_closed_at;
  // An operator's failed_final asked for the order to be closed (store/resolution.h): work
  // stops as for a spent budget.
  bool stop_requested = false;
  bool refund = false;                             // a refund row (docs/refunds.md): never closed
};

// submit and query are the contract's calls; close is the vendor-side fence of a payment
// whose automatic work is stopping (Contract::confirmed_close).
enum class CallKind { submit, query, close };
std::string_view to_string(CallKind k);

// What a worker that just claimed the payment should do.
struct Plan {
  enum class Kind {
    call,      // make `call` now
    give_up,   // open a case (`reason`); automatic work stops
    wait,      // nothing to call (receipt-only vendor waiting for a callback): look again at
               // `next_attempt_at`
    nothing,   // terminal, or not due for automatic work
  } kind = Kind::nothing;
  CallKind call = CallKind::submit;
  bool resubmit = false;  // a submit with a key the vendor may already have seen
  // Set when automatic work is stopping for `reason` under a confirmed close: `call` is the
  // close, or the query that confirms it; decide_stopping() reads their answers.
  bool stopping = false;
  CaseReason reason = CaseReason::retry_budget_exhausted;
  UnixMillis next_attempt_at = 0;
};

// Decides the next step for a claimed payment. `progress.attempt_count` counts the calls made
// so far. Rules, in order:
//  - terminal or next_action none → nothing;
//  - attempts spent (>= max_attempts) or give_up_after passed since the first submit →
//    give_up(retry_budget_exhausted);
//  - UNKNOWN under recovery `none` → give_up(unrecoverable_contract);
//  - a call that would send the key again (any submit after the first, or a replay) when
//    now + request_timeout + lease would pass 0.9 × key_retention after the first submit →
//    give_up(key_retention_expiring): a retry after the vendor forgot the key could charge twice;
//  - `query` under `replay` → call submit again (the vendor answers a replay with its stored
//    result); under `none` → wait for the callback with backoff;
//  - otherwise call what next_action says.
// Under a confirmed close (Contract::confirmed_close), a payment (never a refund) whose key
// may have reached the vendor is not given up on for a spent budget or a lapsing key; it is
// stopped at the vendor first: wait until close_not_before has passed since the first submit,
// call close, then query once more (Plan::stopping; see decide_stopping).
Plan plan(const Progress& progress, const Contract& contract, UnixMillis now);

// The result of one call.
struct Decision {
  Trigger trigger = Trigger::recovery_inconclusive;
  UnixMillis next_attempt_at = 0;  // when to look again (non-terminal results)
  // Set when the outcome itself means automatic work must stop (vendor_key_mismatch from a
  // replay, unsupported lookup); the engine applies give_up with this reason in the same
  // transaction.
  std::optional<CaseReason> give_up;
};

// Maps an outcome of `call` (made while the payment was in `progress.state`, with
// `progress.attempt_count` already counting it) to a trigger of the state machine, and
// schedules the next look. `jitter` in [0, 1) spreads retries (equal jitter: half the backoff
// fixed, half random).
//  - A "not found" is trusted only under a contract that says it can be (not_found_final_after),
//    only once that long has passed since the last submit ended (a vendor may commit later than
//    it answers), and only from UNKNOWN; otherwise it is inconclusive. A trusted "not found"
//    leads to a resubmit; when that resubmit could no longer end inside the key's retention
//    (resubmit_outlives_key), the payment goes straight to a key_retention_expiring case
//    instead, without ever moving back to PROCESSING.
//  - "not sent" after a submit from UNKNOWN (a replay) proves nothing about the earlier submit:
//    inconclusive.
Decision decide(const Progress& progress, CallKind call, VendorOutcome outcome,
                const Contract& contract, UnixMillis now, double jitter);

// The answer to a call of a stopping plan (Plan::stopping, for `reason`):
//  - close accepted (succeeded: closed now, or already closed and unpaid) → vendor_closed: the
//    payment keeps its state and the confirming query is due at once;
//  - the confirming query shows the order closed and unpaid (declined) → recovery_declined:
//    FAILED_FINAL, the only way automatic work concludes that no money was taken;
//  - "no such order", from the close or the query, after an operator's failed_final
//    (`operator_stop`) → recovery_declined: there is no order to close, and a human has judged
//    the payment failed (these vendors look orders up by out_trade_no consistently) — once
//    `absent_final_at` (order_absent_final_at) has passed; before it, the buyer may still make
//    the order (scan the QR code): recovery_inconclusive, the close asked again at that time;
//  - anything else (a close refused because the order is paid, not found, no answer; a query
//    that finds it paid, pending or nothing) → give_up(reason): a case with the answers as
//    evidence, never a guess.
Decision decide_stopping(CallKind call, VendorOutcome outcome, CaseReason reason, bool operator_stop,
                         UnixMillis now, std::optional<UnixMillis> absent_final_at = std::nullopt);

// From when an order the vendor does not know can no longer come into being, under a contract
// with an order_expiry: that long after the last submit ended (the order and its expiry were
// made before the vendor answered), plus order_expiry_allowance for the vendor's clock. Before
// the last submit ended, or when it never did, no time is known yet: `now + order_expiry +
// allowance` (never before it). nullopt under a contract without order_expiry.
inline constexpr Millis order_expiry_allowance{60'000};
std::optional<UnixMillis> order_absent_final_at(const Progress& progress, const Contract& contract,
                                                UnixMillis now);

// The key-retention rule of docs/contract.md §5: payorch relies on at most 0.9 × key_retention of a
// vendor's promise, so a call sending a key again must be over (answered, or its lease lapsed)
// before 0.9 × key_retention has passed since the key was first sent. Whether a call that may
// last until `since_first_submit` after the first send passes that mark (in integers:
// since_first_submit × 10 > key_retention × 9). Config validation, plan(), decide() and an
// operator's retry all ask this.
bool outlives_key_retention(Millis since_first_submit, Millis key_retention);
// 0.9 × key_retention, rounded down to the millisecond: the mark outlives_key_retention
// compares against (for messages and deadlines).
Millis key_retention_limit(Millis key_retention);

// Whether a call sending the key again, started now, could still be on the wire or leased
// (request_timeout + lease) past 0.9 × key_retention after the key was first sent: the vendor
// may have forgotten the key by then, and a resubmit could charge twice. False when the key
// was never sent. The engine's plan and decide, and an operator's retry, all ask it.
bool resubmit_outlives_key(std::optional<UnixMillis> first_submit_at, const Contract& contract,
                           UnixMillis now);
// The latest moment a resubmit may end, and the latest one started now could end: the two
// figures resubmit_outlives_key compares (for messages). Requires first_submit_at.
UnixMillis resubmit_deadline(UnixMillis first_submit_at, const Contract& contract);
UnixMillis resubmit_latest_end(const Contract& contract, UnixMillis now);

// The wait before the n-th call (core/backoff.h: doubled from initial_backoff, capped at
// max_backoff), with equal jitter: half of it fixed, the other half spread by `jitter`.
Millis backoff(const Contract& contract, std::int64_t n, double jitter);

}  // namespace payorch
