#pragma once
// The refund state machine of docs/refunds.md (the contract's §8), as pure functions. A refund
// is its own operation with a payment's protocol: from PROCESSING on, its steps are the payment
// machine's (core/state_machine.h) — the same table, counting, escalations and cases — so this
// file only adds what is new, the DEFERRED state in front of it.
//
// DEFERRED exists because of the ordering rule of seed 000 ("顺序要求从业务不变量推导"): a refund
// whose payment has not succeeded is missing its predecessor, which is neither a duplicate nor
// an error. It is persisted (the row, its client_key, its event) rather than held in memory,
// and the payment's own transition commit is what moves it on, so no crash between "payment
// succeeded" and "refund released" can lose it.
#include <optional>
#include <string_view>

#include "core/state_machine.h"

namespace payorch {

enum class RefundState { deferred, processing, unknown, succeeded, failed_final };

std::string_view to_string(RefundState s);  // "DEFERRED", "PROCESSING", ...
std::optional<RefundState> parse_refund_state(std::string_view s);
constexpr bool is_terminal(RefundState s) {
  return s == RefundState::succeeded || s == RefundState::failed_final;
}

// The payment-protocol state a refund is in; nullopt for DEFERRED, which the payment machine
// does not know. The engine's plan()/decide() (core/decide.h) take a refund's Progress with
// this state: retries, attempt_count, give_up_after and key retention all count as for a
// payment, and all of them start at the refund's first submit, never at its intake — a long
// DEFERRED wait spends none of the refund's budget.
std::optional<PaymentState> protocol_state(RefundState s);
RefundState refund_state(PaymentState s);

// The refund event types: the payment's kinds (EventType) under the "refund." prefix.
std::string_view refund_event_type(EventType e);  // "refund.created", ...

using RefundTransition = StateTransition<RefundState>;

// What `trigger` does to a refund in state `from`; nullopt when illegal (logged by the caller,
// never applied). From PROCESSING, UNKNOWN, SUCCEEDED and FAILED_FINAL this is exactly
// transition() of core/state_machine.h, states renamed: in particular a terminal refund changes
// only through an operator's resolution (invariant 4), and a contradicting answer opens
// late_contradiction. From DEFERRED every trigger is illegal: the refund was never sent, so no
// vendor answer, callback or give-up can concern it, and it has no case to resolve. It leaves
// DEFERRED only through deferred_refund_step().
std::optional<RefundTransition> refund_transition(
    RefundState from, Trigger trigger, CaseReason give_up_reason = CaseReason::retry_budget_exhausted);

// An operator's retry of a refund: resume() of the payment machine; illegal from DEFERRED.
std::optional<RefundTransition> refund_resume(RefundState from, bool vendor_has_refund);

// failure.code of a refund that failed because its payment did.
inline constexpr std::string_view payment_failed_code = "payment_failed";

struct DeferredRefundStep {
  RefundTransition transition;                  // from DEFERRED, with its refund.* event
  std::optional<std::string_view> failure_code;  // payment_failed_code when it fails
};

// What each DEFERRED refund of a payment becomes when a transition of that payment to
// `payment_now` commits. The store calls it inside the payment's transaction and applies the
// step to every DEFERRED refund of the payment, with its outbox event, in that same
// transaction (invariant 6; if the process dies before COMMIT, neither moved):
//  - SUCCEEDED    → PROCESSING, next action submit, `refund.processing`: only now may the
//                   refund be sent (never before its payment succeeded);
//  - FAILED_FINAL → FAILED_FINAL, failure.code "payment_failed", `refund.failed`;
//  - PROCESSING / UNKNOWN → nullopt: the refund stays DEFERRED.
// A payment corrected later from FAILED_FINAL to SUCCEEDED does not revive refunds that failed
// with payment_failed: they are terminal (invariant 4), their amounts are free again under the
// money rule, and the tenant asks for a new refund.
std::optional<DeferredRefundStep> deferred_refund_step(PaymentState payment_now);

}  // namespace payorch
