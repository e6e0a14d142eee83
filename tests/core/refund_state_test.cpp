#include <doctest/doctest.h>

#include <string>

#include "core/refund_state.h"

using namespace payorch;

namespace {

constexpr RefundState all_refund_states[] = {RefundState::deferred, RefundState::processing,
                                             RefundState::unknown, RefundState::succeeded,
                                             RefundState::failed_final};

constexpr PaymentState all_payment_states[] = {PaymentState::processing, PaymentState::unknown,
                                               PaymentState::succeeded, PaymentState::failed_final};

constexpr Trigger all_triggers[] = {
    Trigger::submit_succeeded,  Trigger::submit_declined,      Trigger::submit_pending,
    Trigger::submit_not_sent,   Trigger::submit_ambiguous,     Trigger::submit_key_mismatch,
    Trigger::submit_auth_refused, Trigger::recovery_succeeded, Trigger::recovery_declined,
    Trigger::recovery_not_found, Trigger::recovery_pending,    Trigger::recovery_inconclusive,
    Trigger::give_up,           Trigger::callback_succeeded,   Trigger::callback_declined,
    Trigger::resolve_succeeded, Trigger::resolve_failed_final, Trigger::resolve_retry,
};

constexpr CaseReason give_up_reasons[] = {CaseReason::retry_budget_exhausted,
                                          CaseReason::unrecoverable_contract,
                                          CaseReason::key_retention_expiring};

// "TO/next/event/case[/resolves]" with refund event names, or "illegal".
std::string render(const std::optional<RefundTransition>& t) {
  if (!t) return "illegal";
  std::string s(to_string(t->to));
  s += "/";
  s += to_string(t->next);
  s += "/";
  s += t->event ? std::string(refund_event_type(*t->event)) : "-";
  s += "/";
  s += t->open_case ? std::string(to_string(*t->open_case)) : "-";
  if (t->resolves_system_case) s += "/resolves";
  return s;
}

// The payment machine's answer in refund words: states and event prefix renamed.
std::string render_as_refund(const std::optional<Transition>& t) {
  if (!t) return "illegal";
  return render(RefundTransition{refund_state(t->from), refund_state(t->to), t->next, t->event,
                                 t->open_case, t->resolves_system_case, t->trigger});
}

}  // namespace

TEST_CASE("refund states: names round-trip; DEFERRED is the one the payment machine lacks") {
  for (RefundState s : all_refund_states) {
    const std::string name(to_string(s));
    CAPTURE(name);
    CHECK(parse_refund_state(name) == s);
    if (s == RefundState::deferred) {
      CHECK(name == "DEFERRED");
      CHECK_FALSE(protocol_state(s).has_value());
    } else {
      const PaymentState p = protocol_state(s).value();
      CHECK(to_string(p) == name);
      CHECK(refund_state(p) == s);
      CHECK(is_terminal(p) == is_terminal(s));
    }
  }
  CHECK_FALSE(parse_refund_state("deferred").has_value());
  CHECK_FALSE(is_terminal(RefundState::deferred));
}

TEST_CASE("refund event types: the payment kinds under refund.") {
  CHECK(refund_event_type(EventType::created) == "refund.created");
  CHECK(refund_event_type(EventType::unknown) == "refund.unknown");
  CHECK(refund_event_type(EventType::processing) == "refund.processing");
  CHECK(refund_event_type(EventType::escalated) == "refund.escalated");
  CHECK(refund_event_type(EventType::succeeded) == "refund.succeeded");
  CHECK(refund_event_type(EventType::failed) == "refund.failed");
  CHECK(refund_event_type(EventType::corrected) == "refund.corrected");
}

// From PROCESSING on, a refund's table is the payment's (its full table is in
// state_machine_test.cpp): every state x trigger x give-up reason, and the operator's retry.
TEST_CASE("refund transitions from PROCESSING on are the payment machine's") {
  for (RefundState s : all_refund_states) {
    if (s == RefundState::deferred) continue;
    const PaymentState p = protocol_state(s).value();
    for (Trigger t : all_triggers) {
      for (CaseReason reason : give_up_reasons) {
        const std::string got = render(refund_transition(s, t, reason));
        const std::string want = render_as_refund(transition(p, t, reason));
        CAPTURE(got);
        CAPTURE(want);
        CHECK_MESSAGE(got == want, to_string(s) << " x " << to_string(t));
      }
    }
    for (bool vendor_has_refund : {false, true}) {
      CHECK(render(refund_resume(s, vendor_has_refund)) == render_as_refund(resume(p, vendor_has_refund)));
    }
  }
  // Spot checks in refund words.
  CHECK(render(refund_transition(RefundState::processing, Trigger::submit_ambiguous)) ==
        "UNKNOWN/query/refund.unknown/-");
  CHECK(render(refund_transition(RefundState::unknown, Trigger::give_up)) ==
        "UNKNOWN/none/refund.escalated/retry_budget_exhausted");
  CHECK(render(refund_transition(RefundState::processing, Trigger::submit_key_mismatch)) ==
        "UNKNOWN/none/refund.unknown/vendor_key_mismatch");
  CHECK(render(refund_transition(RefundState::unknown, Trigger::callback_succeeded)) ==
        "SUCCEEDED/none/refund.succeeded/-/resolves");
  CHECK(render(refund_transition(RefundState::succeeded, Trigger::callback_declined)) ==
        "SUCCEEDED/none/refund.escalated/late_contradiction");
  CHECK(render(refund_transition(RefundState::failed_final, Trigger::resolve_succeeded)) ==
        "SUCCEEDED/none/refund.corrected/-");
  // The trigger travels with the step: it is the cause the store records.
  CHECK(refund_transition(RefundState::processing, Trigger::submit_pending)->trigger == Trigger::submit_pending);
  CHECK(refund_resume(RefundState::unknown, false)->trigger == Trigger::resolve_retry);
  CHECK_FALSE(deferred_refund_step(PaymentState::succeeded)->transition.trigger.has_value());
}

TEST_CASE("a DEFERRED refund: every trigger is illegal, it was never sent") {
  for (Trigger t : all_triggers) {
    CHECK_MESSAGE(!refund_transition(RefundState::deferred, t).has_value(), to_string(t));
  }
  CHECK_FALSE(refund_resume(RefundState::deferred, false).has_value());
  CHECK_FALSE(refund_resume(RefundState::deferred, true).has_value());
}

// Invariant 4: a terminal refund changes state only through an operator's resolution.
TEST_CASE("a terminal refund leaves its state only by resolve_*") {
  for (RefundState s : {RefundState::succeeded, RefundState::failed_final}) {
    for (Trigger t : all_triggers) {
      const auto step = refund_transition(s, t);
      if (!step || !step->changes_state()) continue;
      CAPTURE(render(step));
      CHECK_MESSAGE((t == Trigger::resolve_succeeded || t == Trigger::resolve_failed_final), to_string(t));
      CHECK(step->event == EventType::corrected);
    }
  }
}

TEST_CASE("deferred_refund_step: a payment's new state moves its DEFERRED refunds") {
  const auto on_success = deferred_refund_step(PaymentState::succeeded);
  REQUIRE(on_success.has_value());
  CHECK(on_success->transition.from == RefundState::deferred);
  CHECK(render(on_success->transition) == "PROCESSING/submit/refund.processing/-");
  CHECK_FALSE(on_success->failure_code.has_value());
  CHECK_FALSE(on_success->transition.noop());

  const auto on_failure = deferred_refund_step(PaymentState::failed_final);
  REQUIRE(on_failure.has_value());
  CHECK(on_failure->transition.from == RefundState::deferred);
  CHECK(render(on_failure->transition) == "FAILED_FINAL/none/refund.failed/-");
  CHECK(on_failure->failure_code == std::optional<std::string_view>("payment_failed"));

  CHECK_FALSE(deferred_refund_step(PaymentState::processing).has_value());
  CHECK_FALSE(deferred_refund_step(PaymentState::unknown).has_value());
}

// Whatever path a payment takes through its machine, each of its arrivals moves a DEFERRED
// refund at most once, and only a terminal arrival does; a refund is sent (next submit) only
// after its payment SUCCEEDED.
TEST_CASE("deferred_refund_step: only a payment's terminal states release or fail a refund") {
  for (PaymentState from : all_payment_states) {
    for (Trigger t : all_triggers) {
      const auto payment_step = transition(from, t);
      if (!payment_step || !payment_step->changes_state()) continue;
      const auto refund_step = deferred_refund_step(payment_step->to);
      CAPTURE(to_string(from));
      CAPTURE(to_string(t));
      CHECK(refund_step.has_value() == is_terminal(payment_step->to));
      if (refund_step && refund_step->transition.next == NextAction::submit) {
        CHECK(payment_step->to == PaymentState::succeeded);
      }
    }
  }
}
