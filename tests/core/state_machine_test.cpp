#include <doctest/doctest.h>

#include <map>
#include <string>

#include "core/state_machine.h"

using namespace payorch;

namespace {

constexpr PaymentState all_states[] = {PaymentState::processing, PaymentState::unknown,
                                       PaymentState::succeeded, PaymentState::failed_final};

constexpr Trigger all_triggers[] = {
    Trigger::submit_succeeded,  Trigger::submit_declined,      Trigger::submit_pending,
    Trigger::submit_not_sent,   Trigger::submit_ambiguous,     Trigger::submit_key_mismatch,
    Trigger::submit_auth_refused, Trigger::recovery_succeeded, Trigger::recovery_declined,
    Trigger::recovery_not_found, Trigger::recovery_pending,    Trigger::recovery_inconclusive,
    Trigger::give_up,           Trigger::callback_succeeded,   Trigger::callback_declined,
    Trigger::resolve_succeeded, Trigger::resolve_failed_final, Trigger::resolve_retry,
};

// Renders a transition as "TO/next/event/case" ("-" for none), or "illegal".
std::string render(const std::optional<Transition>& t) {
  if (!t) return "illegal";
  std::string s(to_string(t->to));
  s += "/";
  s += to_string(t->next);
  s += "/";
  s += t->event ? std::string(to_string(*t->event)) : "-";
  s += "/";
  s += t->open_case ? std::string(to_string(*t->open_case)) : "-";
  if (t->resolves_system_case) s += "/resolves";
  return s;
}

}  // namespace

// The whole docs/contract.md §3 table, one row per (state, trigger). A change to the state machine must
// change this table on purpose.
TEST_CASE("every state x trigger has the transition docs/contract.md §3 gives") {
  const std::map<std::pair<PaymentState, Trigger>, std::string> expected = {
      // PROCESSING
      {{PaymentState::processing, Trigger::submit_succeeded}, "SUCCEEDED/none/payment.succeeded/-"},
      {{PaymentState::processing, Trigger::submit_declined}, "FAILED_FINAL/none/payment.failed/-"},
      {{PaymentState::processing, Trigger::submit_pending}, "PROCESSING/query/-/-"},
      {{PaymentState::processing, Trigger::submit_not_sent}, "PROCESSING/submit/-/-"},
      {{PaymentState::processing, Trigger::submit_ambiguous}, "UNKNOWN/query/payment.unknown/-"},
      {{PaymentState::processing, Trigger::submit_key_mismatch}, "UNKNOWN/none/payment.unknown/vendor_key_mismatch"},
      {{PaymentState::processing, Trigger::submit_auth_refused}, "PROCESSING/submit/-/-"},
      {{PaymentState::processing, Trigger::recovery_succeeded}, "SUCCEEDED/none/payment.succeeded/-"},
      {{PaymentState::processing, Trigger::recovery_declined}, "FAILED_FINAL/none/payment.failed/-"},
      {{PaymentState::processing, Trigger::recovery_not_found}, "PROCESSING/submit/-/-"},
      {{PaymentState::processing, Trigger::recovery_pending}, "PROCESSING/query/-/-"},
      {{PaymentState::processing, Trigger::recovery_inconclusive}, "PROCESSING/query/-/-"},
      {{PaymentState::processing, Trigger::give_up}, "PROCESSING/none/payment.escalated/retry_budget_exhausted"},
      {{PaymentState::processing, Trigger::callback_succeeded}, "SUCCEEDED/none/payment.succeeded/-/resolves"},
      {{PaymentState::processing, Trigger::callback_declined}, "FAILED_FINAL/none/payment.failed/-/resolves"},
      {{PaymentState::processing, Trigger::resolve_succeeded}, "SUCCEEDED/none/payment.succeeded/-"},
      {{PaymentState::processing, Trigger::resolve_failed_final}, "FAILED_FINAL/none/payment.failed/-"},
      {{PaymentState::processing, Trigger::resolve_retry}, "PROCESSING/submit/-/-"},
      // UNKNOWN
      {{PaymentState::unknown, Trigger::submit_succeeded}, "illegal"},
      {{PaymentState::unknown, Trigger::submit_declined}, "illegal"},
      {{PaymentState::unknown, Trigger::submit_pending}, "illegal"},
      {{PaymentState::unknown, Trigger::submit_not_sent}, "illegal"},
      {{PaymentState::unknown, Trigger::submit_ambiguous}, "illegal"},
      {{PaymentState::unknown, Trigger::submit_key_mismatch}, "illegal"},
      {{PaymentState::unknown, Trigger::submit_auth_refused}, "illegal"},
      {{PaymentState::unknown, Trigger::recovery_succeeded}, "SUCCEEDED/none/payment.succeeded/-"},
      {{PaymentState::unknown, Trigger::recovery_declined}, "FAILED_FINAL/none/payment.failed/-"},
      {{PaymentState::unknown, Trigger::recovery_not_found}, "PROCESSING/submit/payment.processing/-"},
      {{PaymentState::unknown, Trigger::recovery_pending}, "PROCESSING/query/payment.processing/-"},
      {{PaymentState::unknown, Trigger::recovery_inconclusive}, "UNKNOWN/query/-/-"},
      {{PaymentState::unknown, Trigger::give_up}, "UNKNOWN/none/payment.escalated/retry_budget_exhausted"},
      {{PaymentState::unknown, Trigger::callback_succeeded}, "SUCCEEDED/none/payment.succeeded/-/resolves"},
      {{PaymentState::unknown, Trigger::callback_declined}, "FAILED_FINAL/none/payment.failed/-/resolves"},
      {{PaymentState::unknown, Trigger::resolve_succeeded}, "SUCCEEDED/none/payment.succeeded/-"},
      {{PaymentState::unknown, Trigger::resolve_failed_final}, "FAILED_FINAL/none/payment.failed/-"},
      {{PaymentState::unknown, Trigger::resolve_retry}, "UNKNOWN/query/-/-"},
      // SUCCEEDED: terminal. Only a resolution changes it; a contradiction opens a case.
      {{PaymentState::succeeded, Trigger::submit_succeeded}, "illegal"},
      {{PaymentState::succeeded, Trigger::submit_declined}, "illegal"},
      {{PaymentState::succeeded, Trigger::submit_pending}, "illegal"},
      {{PaymentState::succeeded, Trigger::submit_not_sent}, "illegal"},
      {{PaymentState::succeeded, Trigger::submit_ambiguous}, "illegal"},
      {{PaymentState::succeeded, Trigger::submit_key_mismatch}, "illegal"},
      {{PaymentState::succeeded, Trigger::submit_auth_refused}, "illegal"},
      {{PaymentState::succeeded, Trigger::recovery_succeeded}, "SUCCEEDED/none/-/-"},
      {{PaymentState::succeeded, Trigger::recovery_declined}, "SUCCEEDED/none/payment.escalated/late_contradiction"},
      {{PaymentState::succeeded, Trigger::recovery_not_found}, "illegal"},
      {{PaymentState::succeeded, Trigger::recovery_pending}, "illegal"},
      {{PaymentState::succeeded, Trigger::recovery_inconclusive}, "illegal"},
      {{PaymentState::succeeded, Trigger::give_up}, "illegal"},
      {{PaymentState::succeeded, Trigger::callback_succeeded}, "SUCCEEDED/none/-/-"},
      {{PaymentState::succeeded, Trigger::callback_declined}, "SUCCEEDED/none/payment.escalated/late_contradiction"},
      {{PaymentState::succeeded, Trigger::resolve_succeeded}, "SUCCEEDED/none/-/-"},
      {{PaymentState::succeeded, Trigger::resolve_failed_final}, "FAILED_FINAL/none/payment.corrected/-"},
      {{PaymentState::succeeded, Trigger::resolve_retry}, "illegal"},
      // FAILED_FINAL: terminal.
      {{PaymentState::failed_final, Trigger::submit_succeeded}, "illegal"},
      {{PaymentState::failed_final, Trigger::submit_declined}, "illegal"},
      {{PaymentState::failed_final, Trigger::submit_pending}, "illegal"},
      {{PaymentState::failed_final, Trigger::submit_not_sent}, "illegal"},
      {{PaymentState::failed_final, Trigger::submit_ambiguous}, "illegal"},
      {{PaymentState::failed_final, Trigger::submit_key_mismatch}, "illegal"},
      {{PaymentState::failed_final, Trigger::submit_auth_refused}, "illegal"},
      {{PaymentState::failed_final, Trigger::recovery_succeeded}, "FAILED_FINAL/none/payment.escalated/late_contradiction"},
      {{PaymentState::failed_final, Trigger::recovery_declined}, "FAILED_FINAL/none/-/-"},
      {{PaymentState::failed_final, Trigger::recovery_not_found}, "illegal"},
      {{PaymentState::failed_final, Trigger::recovery_pending}, "illegal"},
      {{PaymentState::failed_final, Trigger::recovery_inconclusive}, "illegal"},
      {{PaymentState::failed_final, Trigger::give_up}, "illegal"},
      {{PaymentState::failed_final, Trigger::callback_succeeded}, "FAILED_FINAL/none/payment.escalated/late_contradiction"},
      {{PaymentState::failed_final, Trigger::callback_declined}, "FAILED_FINAL/none/-/-"},
      {{PaymentState::failed_final, Trigger::resolve_succeeded}, "SUCCEEDED/none/payment.corrected/-"},
      {{PaymentState::failed_final, Trigger::resolve_failed_final}, "FAILED_FINAL/none/-/-"},
      {{PaymentState::failed_final, Trigger::resolve_retry}, "illegal"},
  };
  CHECK(expected.size() == std::size(all_states) * std::size(all_triggers));
  for (auto s : all_states) {
    for (auto t : all_triggers) {
      CAPTURE(to_string(s));
      CAPTURE(to_string(t));
      auto it = expected.find({s, t});
      REQUIRE(it != expected.end());
      CHECK(render(transition(s, t)) == it->second);
    }
  }
}

TEST_CASE("invariant 6: a state change always carries exactly one event, a non-change only with a case") {
  for (auto s : all_states) {
    for (auto t : all_triggers) {
      auto tr = transition(s, t);
      if (!tr) continue;
      CAPTURE(to_string(s));
      CAPTURE(to_string(t));
      if (tr->changes_state()) {
        CHECK(tr->event.has_value());
        CHECK(tr->event != EventType::escalated);
      } else if (tr->event) {
        CHECK(*tr->event == EventType::escalated);
        CHECK(tr->open_case.has_value());
      }
    }
  }
}

TEST_CASE("invariant 4: a terminal state changes only through resolve_*") {
  for (auto s : {PaymentState::succeeded, PaymentState::failed_final}) {
    for (auto t : all_triggers) {
      auto tr = transition(s, t);
      if (!tr || !tr->changes_state()) continue;
      CAPTURE(to_string(t));
      CHECK((t == Trigger::resolve_succeeded || t == Trigger::resolve_failed_final));
      CHECK(tr->event == EventType::corrected);
    }
  }
}

TEST_CASE("terminal states have no next action") {
  for (auto s : all_states)
    for (auto t : all_triggers)
      if (auto tr = transition(s, t); tr && is_terminal(tr->to)) CHECK(tr->next == NextAction::none);
}

TEST_CASE("give_up carries the reason it is given") {
  auto t = transition(PaymentState::unknown, Trigger::give_up, CaseReason::key_retention_expiring);
  REQUIRE(t);
  CHECK(t->open_case == CaseReason::key_retention_expiring);
  CHECK(t->to == PaymentState::unknown);
  CHECK(t->next == NextAction::none);
}

TEST_CASE("names round-trip") {
  for (auto s : all_states) CHECK(parse_payment_state(to_string(s)) == s);
  CHECK_FALSE(parse_payment_state("processing").has_value());
  for (auto r : {CaseReason::retry_budget_exhausted, CaseReason::unrecoverable_contract,
                 CaseReason::key_retention_expiring, CaseReason::late_contradiction,
                 CaseReason::callback_mismatch, CaseReason::vendor_key_mismatch})
    CHECK(parse_case_reason(to_string(r)) == r);
  for (auto a : {NextAction::submit, NextAction::query, NextAction::none})
    CHECK(parse_next_action(to_string(a)) == a);
}

TEST_CASE("noop: only a final answer confirming the terminal state writes nothing") {
  CHECK(transition(PaymentState::succeeded, Trigger::callback_succeeded)->noop());
  CHECK(transition(PaymentState::failed_final, Trigger::recovery_declined)->noop());
  // Same state but a new next action must still be written.
  CHECK_FALSE(transition(PaymentState::processing, Trigger::submit_pending)->noop());
  CHECK_FALSE(transition(PaymentState::unknown, Trigger::recovery_inconclusive)->noop());
  CHECK_FALSE(transition(PaymentState::succeeded, Trigger::callback_declined)->noop());
}

TEST_CASE("resume: an operator's retry queries first whenever the vendor may have the charge") {
  CHECK(render(resume(PaymentState::processing, false)) == "PROCESSING/submit/-/-");
  CHECK(render(resume(PaymentState::processing, true)) == "PROCESSING/query/-/-");
  CHECK(render(resume(PaymentState::unknown, false)) == "UNKNOWN/query/-/-");
  CHECK(render(resume(PaymentState::unknown, true)) == "UNKNOWN/query/-/-");
  CHECK(render(resume(PaymentState::succeeded, true)) == "illegal");
  CHECK(render(resume(PaymentState::failed_final, false)) == "illegal");
}

TEST_CASE("every step names the trigger that produced it (the history's cause); resume() is resolve_retry") {
  for (auto s : all_states)
    for (auto t : all_triggers)
      if (auto tr = transition(s, t)) CHECK(tr->trigger == t);
  for (bool has_charge : {false, true}) {
    CHECK(resume(PaymentState::processing, has_charge)->trigger == Trigger::resolve_retry);
    CHECK(resume(PaymentState::unknown, has_charge)->trigger == Trigger::resolve_retry);
  }
}
