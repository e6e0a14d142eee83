#pragma once
// The payment state machine of docs/contract.md §3, as pure functions. The store applies a Transition as a
// compare-and-set on (id, state, fence) together with its outbox event, in one transaction;
// nothing here touches I/O.
#include <optional>
#include <string_view>

namespace payorch {

enum class PaymentState { processing, unknown, succeeded, failed_final };

std::string_view to_string(PaymentState s);  // "PROCESSING", "UNKNOWN", ...
std::optional<PaymentState> parse_payment_state(std::string_view s);
constexpr bool is_terminal(PaymentState s) {
  return s == PaymentState::succeeded || s == PaymentState::failed_final;
}

// Outbox event types (docs/contract.md §6). Exactly one per state change; `escalated` marks a case opened
// without a state change.
enum class EventType { created, unknown, processing, escalated, succeeded, failed, corrected };
std::string_view to_string(EventType e);  // "payment.created", ...

enum class CaseReason {
  retry_budget_exhausted,
  unrecoverable_contract,
  key_retention_expiring,
  late_contradiction,
  callback_mismatch,
  vendor_key_mismatch,
  payment_corrected,  // a refund whose payment was corrected from SUCCEEDED to FAILED_FINAL
  over_refunded,      // a payment whose recorded refunds (not FAILED_FINAL) exceed its amount
};
std::string_view to_string(CaseReason r);
inline constexpr CaseReason all_case_reasons[] = {
    CaseReason::retry_budget_exhausted, CaseReason::unrecoverable_contract,
    CaseReason::key_retention_expiring, CaseReason::late_contradiction,
    CaseReason::callback_mismatch,      CaseReason::vendor_key_mismatch,
    CaseReason::payment_corrected,      CaseReason::over_refunded};
std::optional<CaseReason> parse_case_reason(std::string_view s);

// What the engine does next with a non-terminal payment.
enum class NextAction { submit, query, none };
std::string_view to_string(NextAction a);
std::optional<NextAction> parse_next_action(std::string_view s);

// Everything that can happen to a payment.
enum class Trigger {
  // Answer to a submit.
  submit_succeeded,
  submit_declined,       // declined / invalid request: final per contract
  submit_pending,
  submit_not_sent,       // certainly never left (connect refused, DNS, TLS before the request)
  submit_ambiguous,      // timeout after sending, reset, 5xx, unparseable, in-progress conflict
  submit_key_mismatch,   // the vendor saw this key with other parameters
  submit_auth_refused,   // 401/403: not sent
  // Answer to a recovery query of an UNKNOWN payment (or a pending one).
  recovery_succeeded,
  recovery_declined,
  recovery_not_found,    // trusted "never received" and the key is still retained
  recovery_pending,
  recovery_inconclusive,
  // The vendor accepted the close of the order (the vendor-side fence of a payment whose
  // automatic work is stopping): no state change; the confirming query is next.
  vendor_closed,
  // Automatic work gives up: budget spent, retention about to lapse, contract cannot recover.
  give_up,
  // A verified vendor callback with a final status.
  callback_succeeded,
  callback_declined,
  // An operator's reconciliation resolution.
  resolve_succeeded,
  resolve_failed_final,
  resolve_retry,
};
std::string_view to_string(Trigger t);

// One step of a state machine over `State`: PaymentState here, RefundState in
// core/refund_state.h, whose steps from PROCESSING on are this machine's (one table for both).
template <class State>
struct StateTransition {
  State from;
  State to;
  NextAction next;                      // none for terminal states and open cases
  std::optional<EventType> event;       // the outbox event to write in the same transaction
  std::optional<CaseReason> open_case;  // a reconciliation case to open
  bool resolves_system_case = false;    // a callback closes retry_budget_exhausted /
                                        // unrecoverable_contract / key_retention_expiring
  // What produced this step: set by transition() and resume() (Trigger::resolve_retry); the
  // store records it as the cause of the change (payment_history). nullopt for a step built by
  // hand, whose cause is the case it opens (store/history.h).
  std::optional<Trigger> trigger = std::nullopt;
  bool changes_state() const { return from != to; }
  // Nothing to write: a final answer that confirms the terminal state the payment is in.
  bool noop() const { return is_terminal(from) && !changes_state() && !event && !open_case; }
};
using Transition = StateTransition<PaymentState>;

// Decides what `trigger` does to a payment in state `from`. `give_up_reason` is used only by
// Trigger::give_up. Returns nullopt when the trigger is illegal in that state (the caller logs
// it as an illegal transition; it must never be applied).
//
// Rules worth naming:
//  - A terminal state never changes except through resolve_* (invariant 4). A contradicting
//    final answer on a terminal payment opens `late_contradiction`; a confirming one is a no-op.
//  - Submit answers are legal only from PROCESSING; recovery answers from UNKNOWN or PROCESSING
//    (a pending payment is queried).
std::optional<Transition> transition(PaymentState from, Trigger trigger,
                                     CaseReason give_up_reason = CaseReason::retry_budget_exhausted);

// An operator's `retry` (Trigger::resolve_retry): the payment keeps its state and resumes
// automatic work with the action the vendor's last word calls for. A submit only when the
// vendor may never have recorded the charge; an UNKNOWN payment, or a PROCESSING one the vendor
// has answered with its own reference for the charge (pending), is queried first (the
// contract's recovery turns the query into a lookup, a replay by the same key, or a wait for
// the callback). transition(from, resolve_retry) is resume(from, false). Illegal (nullopt) from
// a terminal state.
std::optional<Transition> resume(PaymentState from, bool vendor_has_charge);

}  // namespace payorch
