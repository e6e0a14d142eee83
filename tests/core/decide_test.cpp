#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

#include "core/decide.h"
#include "support/enum_names.h"

using namespace payorch;
using namespace std::chrono_literals;

namespace {

constexpr VendorOutcome outcomes[] = {
    VendorOutcome::succeeded, VendorOutcome::declined,     VendorOutcome::pending,
    VendorOutcome::not_found, VendorOutcome::ambiguous,    VendorOutcome::not_sent,
    VendorOutcome::key_mismatch, VendorOutcome::auth_refused, VendorOutcome::unsupported,
};

Contract contract(RecoveryMode mode, std::optional<Millis> not_found_final_after) {
  Contract c;
  c.recovery = mode;
  c.not_found_final_after = not_found_final_after;
  c.key_retention = 24h;
  c.max_attempts = 10;
  c.initial_backoff = 1s;
  c.max_backoff = 60s;
  c.give_up_after = 1h;
  c.request_timeout = 10s;
  c.lease = 30s;
  return c;
}

const Contract lookup_30s = contract(RecoveryMode::lookup, Millis(30s));
const Contract lookup_never = contract(RecoveryMode::lookup, std::nullopt);
const Contract replay = contract(RecoveryMode::replay, std::nullopt);
const Contract receipt_only = contract(RecoveryMode::none, std::nullopt);

constexpr UnixMillis t0 = 1'700'000'000'000;

// The result of one call as "STATE/next", plus "!reason" when the decision gives up at once.
std::string render(const Progress& p, CallKind call, VendorOutcome o, const Contract& c, UnixMillis now) {
  Decision d = decide(p, call, o, c, now, 0.5);
  auto t = transition(p.state, d.trigger);
  if (!t) return "illegal:" + std::string(to_string(d.trigger));
  std::string s = std::string(to_string(t->to)) + "/" + std::string(to_string(t->next));
  if (t->open_case) s += "+" + std::string(to_string(*t->open_case));
  if (d.give_up) s += "!" + std::string(to_string(*d.give_up));
  return s;
}

std::vector<std::string> split(const std::string& row) {
  std::vector<std::string> out;
  std::istringstream in(row);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// One row: the results for the outcomes in the order of `outcomes`.
void check_row(std::string_view name, const Progress& p, CallKind call, const Contract& c, UnixMillis now,
               const std::string& expected_row) {
  auto expected = split(expected_row);
  REQUIRE(expected.size() == std::size(outcomes));
  for (std::size_t i = 0; i < std::size(outcomes); ++i) {
    CAPTURE(name);
    CAPTURE(to_string(outcomes[i]));
    CHECK(render(p, call, outcomes[i], c, now) == expected[i]);
  }
}

Progress first_submit() {
  Progress p;
  p.state = PaymentState::processing;
  p.next_action = NextAction::submit;
  p.attempt_count = 1;
  p.first_submit_at = t0;
  return p;
}

Progress unknown_after_submit() {
  Progress p;
  p.state = PaymentState::unknown;
  p.next_action = NextAction::query;
  p.attempt_count = 2;
  p.first_submit_at = t0;
  p.last_submit_ended_at = t0 + 10'000;
  return p;
}

}  // namespace

// outcomes:          succeeded          declined              pending            not_found
//                    ambiguous          not_sent              key_mismatch       auth_refused   unsupported
TEST_CASE("decide: every outcome x contract x state, inside and outside not_found_final_after") {
  const UnixMillis inside = t0 + 10'000 + 5'000;    // 5 s after the submit ended
  const UnixMillis outside = t0 + 10'000 + 31'000;  // 31 s after: past not_found_final_after (30 s)

  const std::string fresh_submit =
      "SUCCEEDED/none FAILED_FINAL/none PROCESSING/query UNKNOWN/query "
      "UNKNOWN/query PROCESSING/submit UNKNOWN/none+vendor_key_mismatch PROCESSING/submit UNKNOWN/query";
  for (auto* c : {&lookup_30s, &lookup_never, &replay})
    check_row("fresh submit", first_submit(), CallKind::submit, *c, t0 + 1'000, fresh_submit);
  // Receipt-only: an ambiguous submit goes straight to reconciliation.
  check_row("fresh submit, receipt-only", first_submit(), CallKind::submit, receipt_only, t0 + 1'000,
            "SUCCEEDED/none FAILED_FINAL/none PROCESSING/query UNKNOWN/query!unrecoverable_contract "
            "UNKNOWN/query!unrecoverable_contract PROCESSING/submit UNKNOWN/none+vendor_key_mismatch "
            "PROCESSING/submit UNKNOWN/query!unrecoverable_contract");

  const std::string lookup_untrusted =
      "SUCCEEDED/none FAILED_FINAL/none PROCESSING/query UNKNOWN/query "
      "UNKNOWN/query UNKNOWN/query UNKNOWN/query!vendor_key_mismatch UNKNOWN/query "
      "UNKNOWN/query!unrecoverable_contract";
  const std::string lookup_trusted =
      "SUCCEEDED/none FAILED_FINAL/none PROCESSING/query PROCESSING/submit "
      "UNKNOWN/query UNKNOWN/query UNKNOWN/query!vendor_key_mismatch UNKNOWN/query "
      "UNKNOWN/query!unrecoverable_contract";
  // A not-found is never trusted early: the vendor may commit later than it answered.
  check_row("lookup 30s, UNKNOWN, inside", unknown_after_submit(), CallKind::query, lookup_30s, inside, lookup_untrusted);
  check_row("lookup 30s, UNKNOWN, outside", unknown_after_submit(), CallKind::query, lookup_30s, outside, lookup_trusted);
  // "never": eventually consistent search; a not-found proves nothing, however late.
  check_row("lookup never, UNKNOWN, inside", unknown_after_submit(), CallKind::query, lookup_never, inside, lookup_untrusted);
  check_row("lookup never, UNKNOWN, outside", unknown_after_submit(), CallKind::query, lookup_never, outside, lookup_untrusted);

  // Replay: recovery re-sends the same request with the same key.
  const std::string replay_row =
      "SUCCEEDED/none FAILED_FINAL/none PROCESSING/query UNKNOWN/query "
      "UNKNOWN/query UNKNOWN/query UNKNOWN/query!vendor_key_mismatch UNKNOWN/query "
      "UNKNOWN/query!unrecoverable_contract";
  check_row("replay, UNKNOWN, inside", unknown_after_submit(), CallKind::submit, replay, inside, replay_row);
  check_row("replay, UNKNOWN, outside", unknown_after_submit(), CallKind::submit, replay, outside, replay_row);

  // A pending payment being followed up (PROCESSING/query).
  Progress pending = first_submit();
  pending.next_action = NextAction::query;
  pending.attempt_count = 2;
  pending.last_submit_ended_at = t0 + 1'000;
  const std::string pending_row =
      "SUCCEEDED/none FAILED_FINAL/none PROCESSING/query PROCESSING/query "
      "PROCESSING/query PROCESSING/query PROCESSING/query!vendor_key_mismatch PROCESSING/query "
      "PROCESSING/query!unrecoverable_contract";
  check_row("lookup 30s, pending, outside", pending, CallKind::query, lookup_30s, outside, pending_row);
  check_row("replay, pending", pending, CallKind::submit, replay, outside, pending_row);
}

TEST_CASE("decide: a not-found without a recorded submit end is not trusted") {
  Progress p = unknown_after_submit();
  p.last_submit_ended_at.reset();
  CHECK(decide(p, CallKind::query, VendorOutcome::not_found, lookup_30s, t0 + 3'600'000, 0.5).trigger ==
        Trigger::recovery_inconclusive);
}

TEST_CASE("decide: a trusted not-found past the key's retention opens key_retention_expiring, never PROCESSING") {
  // Key retention 24h, request 10s, lease 30s: a resubmit must be able to end by
  // first_submit_at + 0.9 x 24h. One started later could meet a vendor that forgot the key.
  Progress p = unknown_after_submit();
  const UnixMillis last_allowed = t0 + 24 * 3'600'000LL * 9 / 10 - 40'000;
  CHECK(render(p, CallKind::query, VendorOutcome::not_found, lookup_30s, last_allowed) == "PROCESSING/submit");
  CHECK(render(p, CallKind::query, VendorOutcome::not_found, lookup_30s, last_allowed + 1) ==
        "UNKNOWN/query!key_retention_expiring");
  // The same rule as plan's for the resubmit that would follow.
  Progress resubmit = p;
  resubmit.state = PaymentState::processing;
  resubmit.next_action = NextAction::submit;
  resubmit.budget_started_at = last_allowed - 60'000;  // an operator's retry: a fresh budget
  resubmit.budget_attempts_base = resubmit.attempt_count;
  CHECK(plan(resubmit, lookup_30s, last_allowed).kind == Plan::Kind::call);
  CHECK(plan(resubmit, lookup_30s, last_allowed + 1).reason == CaseReason::key_retention_expiring);
  CHECK(resubmit_outlives_key(t0, lookup_30s, last_allowed + 1));
  CHECK_FALSE(resubmit_outlives_key(std::nullopt, lookup_30s, last_allowed + 1));
}

TEST_CASE("decide: next look is backoff after now, or now once the budget is spent") {
  Progress p = unknown_after_submit();
  const UnixMillis now = t0 + 20'000;
  auto d = decide(p, CallKind::query, VendorOutcome::ambiguous, lookup_30s, now, 0.0);
  CHECK(d.next_attempt_at == now + backoff(lookup_30s, 2, 0.0).count());
  p.attempt_count = lookup_30s.max_attempts;
  CHECK(decide(p, CallKind::query, VendorOutcome::ambiguous, lookup_30s, now, 0.0).next_attempt_at == now);
  p.attempt_count = 3;
  CHECK(decide(p, CallKind::query, VendorOutcome::ambiguous, lookup_30s, t0 + 3'600'000, 0.0).next_attempt_at ==
        t0 + 3'600'000);
}

TEST_CASE("backoff: exponential, equal jitter, capped") {
  CHECK(backoff(lookup_30s, 1, 0.0) == 500ms);
  CHECK(backoff(lookup_30s, 1, 0.999) == 999ms);
  CHECK(backoff(lookup_30s, 2, 0.0) == 1000ms);
  CHECK(backoff(lookup_30s, 3, 0.0) == 2000ms);
  CHECK(backoff(lookup_30s, 7, 0.0) == 30s);     // 64 s capped at 60 s, half fixed
  CHECK(backoff(lookup_30s, 7, 0.999) < 60s);
  CHECK(backoff(lookup_30s, 1000, 0.5) <= 60s);  // no overflow
  for (int n = 1; n < 20; ++n) CHECK(backoff(lookup_30s, n, 0.0) <= backoff(lookup_30s, n + 1, 0.0));
}

TEST_CASE("plan: what a worker does with a claimed payment") {
  SUBCASE("first submit") {
    Progress p;
    auto pl = plan(p, lookup_30s, t0);
    CHECK(pl.kind == Plan::Kind::call);
    CHECK(pl.call == CallKind::submit);
    CHECK_FALSE(pl.resubmit);
  }
  SUBCASE("terminal and stopped payments need nothing") {
    Progress p;
    p.state = PaymentState::succeeded;
    CHECK(plan(p, lookup_30s, t0).kind == Plan::Kind::nothing);
    p.state = PaymentState::unknown;
    p.next_action = NextAction::none;
    CHECK(plan(p, lookup_30s, t0).kind == Plan::Kind::nothing);
  }
  SUBCASE("recovery per contract") {
    Progress p = unknown_after_submit();
    auto l = plan(p, lookup_30s, t0 + 20'000);
    CHECK(l.kind == Plan::Kind::call);
    CHECK(l.call == CallKind::query);
    auto r = plan(p, replay, t0 + 20'000);
    CHECK(r.kind == Plan::Kind::call);
    CHECK(r.call == CallKind::submit);
    CHECK(r.resubmit);
    auto n = plan(p, receipt_only, t0 + 20'000);
    CHECK(n.kind == Plan::Kind::give_up);
    CHECK(n.reason == CaseReason::unrecoverable_contract);
  }
  SUBCASE("a pending payment at a receipt-only vendor waits for its callback") {
    Progress p = first_submit();
    p.next_action = NextAction::query;
    auto w = plan(p, receipt_only, t0 + 5'000);
    CHECK(w.kind == Plan::Kind::wait);
    CHECK(w.next_attempt_at > t0 + 5'000);
    // ... until the budget runs out.
    CHECK(plan(p, receipt_only, t0 + 3'600'000).kind == Plan::Kind::give_up);
  }
  SUBCASE("budget: attempts and give_up_after") {
    Progress p = unknown_after_submit();
    p.attempt_count = 10;
    auto a = plan(p, lookup_30s, t0 + 20'000);
    CHECK(a.kind == Plan::Kind::give_up);
    CHECK(a.reason == CaseReason::retry_budget_exhausted);
    p.attempt_count = 9;
    CHECK(plan(p, lookup_30s, t0 + 20'000).kind == Plan::Kind::call);
    CHECK(plan(p, lookup_30s, t0 + 3'599'999).kind == Plan::Kind::call);
    CHECK(plan(p, lookup_30s, t0 + 3'600'000).reason == CaseReason::retry_budget_exhausted);
  }
  SUBCASE("a resubmit close to the end of key retention escalates instead") {
    Contract c = replay;
    c.give_up_after = 48h;  // (config refuses this; the plan must hold even so)
    Progress p = unknown_after_submit();
    const UnixMillis limit = t0 + 24 * 3'600'000LL * 9 / 10 - 10'000 - 30'000;
    CHECK(plan(p, c, limit).kind == Plan::Kind::call);
    auto late = plan(p, c, limit + 1);
    CHECK(late.kind == Plan::Kind::give_up);
    CHECK(late.reason == CaseReason::key_retention_expiring);
    // A lookup contract only queries, so retention does not stop it...
    Contract l = lookup_30s;
    l.give_up_after = 48h;
    CHECK(plan(p, l, limit + 1).call == CallKind::query);
    // ... but the resubmit after a trusted not-found is bounded the same way.
    p.state = PaymentState::processing;
    p.next_action = NextAction::submit;
    CHECK(plan(p, l, limit + 1).reason == CaseReason::key_retention_expiring);
  }
}

TEST_CASE("plan: an operator's retry starts a fresh budget, not a fresh key retention") {
  Progress p = unknown_after_submit();
  p.attempt_count = 10;
  CHECK(plan(p, lookup_30s, t0 + 20'000).kind == Plan::Kind::give_up);
  p.budget_attempts_base = 10;
  p.budget_started_at = t0 + 2 * 3'600'000;
  CHECK(plan(p, lookup_30s, t0 + 2 * 3'600'000 + 1'000).kind == Plan::Kind::call);
  CHECK(plan(p, lookup_30s, t0 + 3 * 3'600'000).reason == CaseReason::retry_budget_exhausted);
  Contract c = replay;
  c.give_up_after = 48h;
  p.budget_started_at = t0 + 23 * 3'600'000;
  CHECK(plan(p, c, t0 + 23 * 3'600'000).reason == CaseReason::key_retention_expiring);
}

TEST_CASE("key retention: a call may last until exactly 0.9 x key_retention, not a millisecond past") {
  CHECK(key_retention_limit(24h) == Millis(24 * 3'600'000LL * 9 / 10));
  CHECK_FALSE(outlives_key_retention(key_retention_limit(24h), 24h));
  CHECK(outlives_key_retention(key_retention_limit(24h) + 1ms, 24h));
  // Not a multiple of 10 ms: 0.9 x 1001 ms = 900.9 ms, so 900 ms fits and 901 ms does not.
  CHECK(key_retention_limit(Millis(1'001)) == Millis(900));
  CHECK_FALSE(outlives_key_retention(Millis(900), Millis(1'001)));
  CHECK(outlives_key_retention(Millis(901), Millis(1'001)));
  // The engine's question is the same rule, measured from the first submit.
  const Contract c = replay;  // request timeout 10s + lease 30s
  const UnixMillis last = t0 + key_retention_limit(c.key_retention).count() - 40'000;
  CHECK(resubmit_deadline(t0, c) == t0 + key_retention_limit(c.key_retention).count());
  CHECK_FALSE(resubmit_outlives_key(t0, c, last));
  CHECK(resubmit_outlives_key(t0, c, last + 1));
  CHECK_FALSE(resubmit_outlives_key(std::nullopt, c, last + 1));
}

TEST_CASE("names: every outcome, call kind and recovery mode has one, and modes parse back") {
  test::check_names(outcomes);
  test::check_names({CallKind::submit, CallKind::query, CallKind::close});
  test::check_names({RecoveryMode::lookup, RecoveryMode::replay, RecoveryMode::none},
                    parse_recovery_mode);
  CHECK_FALSE(parse_recovery_mode("Lookup").has_value());
}

TEST_CASE("plan under a confirmed close: a spent budget closes the order first, never before close_not_before") {
  Contract c = lookup_30s;
  c.confirmed_close = true;
  c.close_not_before = Millis(5 * 60'000);
  c.max_attempts = 2;
  Progress p = first_submit();
  p.next_action = NextAction::query;
  p.attempt_count = 2;  // spent
  p.last_submit_ended_at = t0 + 2'000;
  const UnixMillis close_from = t0 + 2'000 + 5 * 60'000;

  SUBCASE("before close_not_before since the submit ended: wait until then, no case") {
    const Plan w = plan(p, c, t0 + 60'000);
    CHECK(w.kind == Plan::Kind::wait);
    CHECK(w.stopping);
    CHECK(w.next_attempt_at == close_from);
    CHECK(plan(p, c, close_from - 1).kind == Plan::Kind::wait);
  }
  SUBCASE("from then on: the close, for the reason the budget gives") {
    const Plan k = plan(p, c, close_from);
    CHECK(k.kind == Plan::Kind::call);
    CHECK(k.call == CallKind::close);
    CHECK(k.stopping);
    CHECK(k.reason == CaseReason::retry_budget_exhausted);
  }
  SUBCASE("after an accepted close: the confirming query") {
    p.vendor_closed_at = close_from + 10;
    const Plan q = plan(p, c, close_from + 20);
    CHECK(q.kind == Plan::Kind::call);
    CHECK(q.call == CallKind::query);
    CHECK(q.stopping);
  }
  SUBCASE("nothing to close: a refund, or a key that never left") {
    Progress r = p;
    r.refund = true;
    CHECK(plan(r, c, close_from).kind == Plan::Kind::give_up);
    Progress never = p;
    never.first_submit_at.reset();
    never.last_submit_ended_at.reset();
    CHECK(plan(never, c, close_from).kind == Plan::Kind::give_up);
  }
  SUBCASE("without a confirmed close the budget opens the case at once") {
    c.confirmed_close = false;
    CHECK(plan(p, c, t0 + 60'000).kind == Plan::Kind::give_up);
  }
  SUBCASE("a budget not yet spent: the contract's query, not a stopping one") {
    p.attempt_count = 1;
    const Plan q = plan(p, c, t0 + 60'000);
    CHECK(q.call == CallKind::query);
    CHECK_FALSE(q.stopping);
  }
}

TEST_CASE("decide_stopping: FAILED_FINAL only from a confirming query that finds the order closed and unpaid") {
  const CaseReason why = CaseReason::retry_budget_exhausted;
  for (VendorOutcome o : outcomes) {
    CAPTURE(to_string(o));
    const Decision close = decide_stopping(CallKind::close, o, why, false, t0);
    CHECK(close.next_attempt_at == t0);
    if (o == VendorOutcome::succeeded) {
      CHECK(close.trigger == Trigger::vendor_closed);
      CHECK_FALSE(close.give_up);
    } else {
      CHECK(close.trigger == Trigger::recovery_inconclusive);
      CHECK(close.give_up == why);
    }
    const Decision query = decide_stopping(CallKind::query, o, CaseReason::key_retention_expiring, false, t0);
    // After an operator's failed_final the same, except that a close finding no order at all
    // carries out the operator's decision.
    const Decision asked = decide_stopping(CallKind::close, o, why, true, t0);
    if (o == VendorOutcome::not_found) CHECK(asked.trigger == Trigger::recovery_declined);
    else CHECK(asked.trigger == close.trigger);
    const Decision asked_query = decide_stopping(CallKind::query, o, why, true, t0);
    if (o == VendorOutcome::not_found) CHECK(asked_query.trigger == Trigger::recovery_declined);
    else CHECK(asked_query.trigger == query.trigger);
    if (o == VendorOutcome::declined) {
      CHECK(query.trigger == Trigger::recovery_declined);
      CHECK_FALSE(query.give_up);
    } else {
      CHECK(query.trigger == Trigger::recovery_inconclusive);
      CHECK(query.give_up == CaseReason::key_retention_expiring);
    }
  }
  // A "no such order" that may still become one (a QR code not yet expired) fails nothing:
  // the close is asked again once it cannot.
  for (CallKind call : {CallKind::close, CallKind::query}) {
    const Decision early = decide_stopping(call, VendorOutcome::not_found, why, true, t0, t0 + 1);
    CHECK(early.trigger == Trigger::recovery_inconclusive);
    CHECK_FALSE(early.give_up);
    CHECK(early.next_attempt_at == t0 + 1);
    CHECK(decide_stopping(call, VendorOutcome::not_found, why, true, t0 + 1, t0 + 1).trigger ==
          Trigger::recovery_declined);
    // Without an operator's decision the absent order still opens the case.
    const Decision budget = decide_stopping(call, VendorOutcome::not_found, why, false, t0, t0 + 1);
    CHECK(budget.give_up == why);
  }
  // vendor_closed keeps the state and asks for the query next.
  for (PaymentState s : {PaymentState::processing, PaymentState::unknown}) {
    const auto t = transition(s, Trigger::vendor_closed);
    REQUIRE(t);
    CHECK(t->to == s);
    CHECK(t->next == NextAction::query);
    CHECK_FALSE(t->event);
  }
  CHECK_FALSE(transition(PaymentState::failed_final, Trigger::vendor_closed));
}

TEST_CASE("order_absent_final_at: the order's expiry after the last submit ended, plus the allowance") {
  Contract c;
  Progress p;
  CHECK_FALSE(order_absent_final_at(p, c, t0));
  c.order_expiry = std::chrono::minutes(30);
  const std::int64_t wait = 30 * 60'000 + order_expiry_allowance.count();
  // No submit ended yet: not before now + the expiry.
  CHECK(order_absent_final_at(p, c, t0) == t0 + wait);
  p.first_submit_at = t0 - 5'000;
  p.last_submit_ended_at = t0 - 1'000;
  CHECK(order_absent_final_at(p, c, t0) == t0 - 1'000 + wait);
}
