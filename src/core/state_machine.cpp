#include "core/state_machine.h"

#include "core/enum_names.h"

namespace payorch {
namespace {

constexpr EnumNames<PaymentState, 4> state_names{{
    {PaymentState::processing, "PROCESSING"},
    {PaymentState::unknown, "UNKNOWN"},
    {PaymentState::succeeded, "SUCCEEDED"},
    {PaymentState::failed_final, "FAILED_FINAL"},
}};

constexpr EnumNames<EventType, 7> event_names{{
    {EventType::created, "payment.created"},
    {EventType::unknown, "payment.unknown"},
    {EventType::processing, "payment.processing"},
    {EventType::escalated, "payment.escalated"},
    {EventType::succeeded, "payment.succeeded"},
    {EventType::failed, "payment.failed"},
    {EventType::corrected, "payment.corrected"},
}};

constexpr EnumNames<CaseReason, 8> reason_names{{
    {CaseReason::retry_budget_exhausted, "retry_budget_exhausted"},
    {CaseReason::unrecoverable_contract, "unrecoverable_contract"},
    {CaseReason::key_retention_expiring, "key_retention_expiring"},
    {CaseReason::late_contradiction, "late_contradiction"},
    {CaseReason::callback_mismatch, "callback_mismatch"},
    {CaseReason::vendor_key_mismatch, "vendor_key_mismatch"},
    {CaseReason::payment_corrected, "payment_corrected"},
    {CaseReason::over_refunded, "over_refunded"},
}};

constexpr EnumNames<NextAction, 3> action_names{{
    {NextAction::submit, "submit"},
    {NextAction::query, "query"},
    {NextAction::none, "none"},
}};

constexpr EnumNames<Trigger, 19> trigger_names{{
    {Trigger::submit_succeeded, "submit_succeeded"},
    {Trigger::submit_declined, "submit_declined"},
    {Trigger::submit_pending, "submit_pending"},
    {Trigger::submit_not_sent, "submit_not_sent"},
    {Trigger::submit_ambiguous, "submit_ambiguous"},
    {Trigger::submit_key_mismatch, "submit_key_mismatch"},
    {Trigger::submit_auth_refused, "submit_auth_refused"},
    {Trigger::recovery_succeeded, "recovery_succeeded"},
    {Trigger::recovery_declined, "recovery_declined"},
    {Trigger::recovery_not_found, "recovery_not_found"},
    {Trigger::recovery_pending, "recovery_pending"},
    {Trigger::recovery_inconclusive, "recovery_inconclusive"},
    {Trigger::vendor_closed, "vendor_closed"},
    {Trigger::give_up, "give_up"},
    {Trigger::callback_succeeded, "callback_succeeded"},
    {Trigger::callback_declined, "callback_declined"},
    {Trigger::resolve_succeeded, "resolve_succeeded"},
    {Trigger::resolve_failed_final, "resolve_failed_final"},
    {Trigger::resolve_retry, "resolve_retry"},
}};

using S = PaymentState;
using A = NextAction;

// The event that announces arriving in `to` (from a different state).
std::optional<EventType> arrival_event(S from, S to) {
  if (from == to) return std::nullopt;
  if (is_terminal(from)) return EventType::corrected;
  switch (to) {
    case S::processing: return EventType::processing;
    case S::unknown: return EventType::unknown;
    case S::succeeded: return EventType::succeeded;
    case S::failed_final: return EventType::failed;
  }
  return std::nullopt;
}

Transition move(S from, S to, A next) {
  return Transition{from, to, is_terminal(to) ? A::none : next, arrival_event(from, to),
                    std::nullopt, false, std::nullopt};
}

Transition escalate(S from, CaseReason reason) {
  return Transition{from, from, A::none, EventType::escalated, reason, false, std::nullopt};
}

// A final answer (callback) about a payment. Confirming a terminal state is a no-op;
// contradicting it opens late_contradiction and changes nothing (invariant 4).
std::optional<Transition> final_answer(S from, S answer, bool from_callback) {
  if (is_terminal(from)) {
    if (from == answer)
      return Transition{from, from, A::none, std::nullopt, std::nullopt, false, std::nullopt};
    return escalate(from, CaseReason::late_contradiction);
  }
  Transition t = move(from, answer, A::none);
  t.resolves_system_case = from_callback;
  return t;
}

std::optional<Transition> step(S from, Trigger trigger, CaseReason give_up_reason);

std::optional<Transition> caused_by(std::optional<Transition> t, Trigger trigger) {
  if (t) t->trigger = trigger;
  return t;
}

}  // namespace

std::string_view to_string(PaymentState s) { return name_of(state_names, s); }
std::optional<PaymentState> parse_payment_state(std::string_view s) {
  return value_of(state_names, s);
}
std::string_view to_string(EventType e) { return name_of(event_names, e); }
std::string_view to_string(CaseReason r) { return name_of(reason_names, r); }
std::optional<CaseReason> parse_case_reason(std::string_view s) {
  return value_of(reason_names, s);
}
std::string_view to_string(NextAction a) { return name_of(action_names, a); }
std::optional<NextAction> parse_next_action(std::string_view s) {
  return value_of(action_names, s);
}
std::string_view to_string(Trigger t) { return name_of(trigger_names, t); }

std::optional<Transition> transition(S from, Trigger trigger, CaseReason give_up_reason) {
  return caused_by(step(from, trigger, give_up_reason), trigger);
}

namespace {

std::optional<Transition> step(S from, Trigger trigger, CaseReason give_up_reason) {
  const bool terminal = is_terminal(from);
  switch (trigger) {
    case Trigger::submit_succeeded:
      if (from != S::processing) return std::nullopt;
      return move(from, S::succeeded, A::none);
    case Trigger::submit_declined:
      if (from != S::processing) return std::nullopt;
      return move(from, S::failed_final, A::none);
    case Trigger::submit_pending:
      if (from != S::processing) return std::nullopt;
      return move(from, S::processing, A::query);
    case Trigger::submit_not_sent:
    case Trigger::submit_auth_refused:
      if (from != S::processing) return std::nullopt;
      return move(from, S::processing, A::submit);
    case Trigger::submit_ambiguous:
      if (from != S::processing) return std::nullopt;
      return move(from, S::unknown, A::query);
    case Trigger::submit_key_mismatch: {
      if (from != S::processing) return std::nullopt;
      Transition t = move(from, S::unknown, A::none);
      t.open_case = CaseReason::vendor_key_mismatch;
      return t;
    }
    case Trigger::recovery_succeeded:
      if (terminal) return final_answer(from, S::succeeded, false);
      return move(from, S::succeeded, A::none);
    case Trigger::recovery_declined:
      if (terminal) return final_answer(from, S::failed_final, false);
      return move(from, S::failed_final, A::none);
    case Trigger::recovery_not_found:
      if (terminal) return std::nullopt;
      return move(from, S::processing, A::submit);
    case Trigger::recovery_pending:
      if (terminal) return std::nullopt;
      return move(from, S::processing, A::query);
    case Trigger::recovery_inconclusive:
    case Trigger::vendor_closed:
      if (terminal) return std::nullopt;
      return move(from, from, A::query);
    case Trigger::give_up:
      if (terminal) return std::nullopt;
      return escalate(from, give_up_reason);
    case Trigger::callback_succeeded:
      return final_answer(from, S::succeeded, true);
    case Trigger::callback_declined:
      return final_answer(from, S::failed_final, true);
    case Trigger::resolve_succeeded:
      return move(from, S::succeeded, A::none);
    case Trigger::resolve_failed_final:
      return move(from, S::failed_final, A::none);
    case Trigger::resolve_retry:
      return resume(from, false);
  }
  return std::nullopt;
}

}  // namespace

std::optional<Transition> resume(S from, bool vendor_has_charge) {
  // Resume automatic work with the same client_key.
  if (is_terminal(from)) return std::nullopt;
  return caused_by(move(from, from, from == S::unknown || vendor_has_charge ? A::query : A::submit),
                   Trigger::resolve_retry);
}

}  // namespace payorch
