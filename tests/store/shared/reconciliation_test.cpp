// Reconciliation through store::Tx, on each driver (store/cases.h, store/resolution.h,
// store/settlement.h): operator resolutions against the state machine (every outcome × the
// states a case can be opened in), key retention for `retry`, listing cases, evidence, cases
// with no payment, the settlement import — and two resolutions of one case, or two escalations
// of one payment, at once.
#include <doctest/doctest.h>

#include <boost/json/parse.hpp>
#include <algorithm>
#include <string>
#include <variant>
#include <vector>

#include "core/settlement_csv.h"
#include "support/store_fixture.h"
#include "support/store_under_test.h"
#include "store/shared/side_by_side.h"

namespace payorch::test {
namespace {

using store::CallbackResult;
using store::CallbackStatus;
using store::CasResult;
using store::CaseStatus;
using store::Held;
using store::ImportSummary;
using store::ReconciliationCase;
using store::Resolution;
using store::ResolutionOutcome;
using store::Resolved;
using store::ResolveRefusal;
using store::ResolveResult;
using store::TransitionUpdate;
using store::Tx;
using store::VendorCallback;
using store::WriteStatus;
using namespace std::chrono_literals;

constexpr UnixMillis t0 = 1'700'000'000'000;

struct Recon {
  StoreUnderTest& s;
  SeededRandom rng{42};
  int next_op = 0;
  Contract contract = [] {
    Contract c;
    c.key_retention = 24h;
    c.request_timeout = 10s;
    c.lease = 30s;
    return c;
  }();

  Payment intake(std::int64_t amount = 1000, std::string currency = "EUR") {
    const store::IntakeRequest r = intake_request("op-" + std::to_string(++next_op), amount, currency);
    return s.committed([&](Tx& tx) { return tx.record_intake(r, t0, rng).payment; });
  }

  Payment payment(const Payment& p) { return s.payment(p.id); }

  void apply(const Payment& p, Trigger trigger, CaseReason reason = CaseReason::retry_budget_exhausted,
             TransitionUpdate u = {}) {
    const auto t = transition(payment(p).state, trigger, reason);
    REQUIRE(t);
    CHECK(s.committed([&](Tx& tx) { return tx.apply_transition(p.id, std::nullopt, *t, u, t0 + 1'000, rng); }) ==
          CasResult::applied);
  }

  // Three attempts made, the first submit at `first_submit_at`.
  void attempted(const Payment& p, UnixMillis first_submit_at) {
    s.exec("UPDATE payments SET first_submit_at = " + std::to_string(first_submit_at) +
           ", attempt_count = 3 WHERE id = '" + p.id + "'");
  }

  // A payment in `state` whose key was first sent at `first_submit_at`, with an open case.
  Payment with_case(PaymentState state, UnixMillis first_submit_at = t0 + 10) {
    Payment p = intake();
    attempted(p, first_submit_at);
    if (state == PaymentState::unknown) apply(p, Trigger::submit_ambiguous);
    if (is_terminal(state)) {
      apply(p, state == PaymentState::succeeded ? Trigger::submit_succeeded : Trigger::submit_declined);
      // A contradicting final answer: the state machine opens late_contradiction.
      apply(p, state == PaymentState::succeeded ? Trigger::callback_declined : Trigger::callback_succeeded);
    } else {
      apply(p, Trigger::give_up, CaseReason::retry_budget_exhausted);
    }
    return payment(p);
  }

  std::optional<ReconciliationCase> find_case(const std::string& id) {
    return s.read([&](Tx& tx) { return tx.find_case(id); });
  }

  // The payment's open case (its latest case, when that is open).
  std::optional<ReconciliationCase> open_case(const Payment& p) {
    const Payment now = payment(p);
    if (!now.reconciliation || now.reconciliation->status != "open") return std::nullopt;
    return find_case(now.reconciliation->case_id);
  }

  std::string open_case_id(const Payment& p) {
    const auto c = open_case(p);
    REQUIRE(c);
    return c->id;
  }

  store::CasePage list(std::optional<CaseStatus> status, int limit, std::optional<std::string> cursor = {}) {
    return s.read([&](Tx& tx) { return tx.list_cases(status, limit, cursor); });
  }

  std::vector<store::OutboxEvent> events_of(const Payment& p) {
    std::vector<store::OutboxEvent> out;
    for (auto& e : s.read([](Tx& tx) { return tx.list_events("acme", 0, 1000); }).events)
      if (e.payment_id == p.id) out.push_back(std::move(e));
    return out;
  }

  std::int64_t events(const Payment& p, std::string_view type = "") {
    std::int64_t n = 0;
    for (const auto& e : events_of(p)) n += type.empty() || e.type == type;
    return n;
  }

  static Resolution resolution(ResolutionOutcome outcome, std::optional<std::string> vendor_reference) {
    Resolution r;
    r.outcome = outcome;
    r.vendor_reference = std::move(vendor_reference);
    r.note = "checked in the vendor dashboard";
    r.by = "alice";
    r.evidence = boost::json::object{{"source", "operator"}, {"ticket", "OPS-1"}};
    return r;
  }

  ResolveResult resolve(const std::string& case_id, ResolutionOutcome outcome, UnixMillis now,
                        std::optional<std::string> vendor_reference = std::nullopt) {
    const Resolution r = resolution(outcome, std::move(vendor_reference));
    return s.committed([&](Tx& tx) -> ResolveResult { return tx.resolve_case(case_id, r, contract, now, rng); });
  }

  ImportSummary import(const std::string& provider, const std::string& csv, UnixMillis now) {
    const store::SettlementFile file = parse_settlement(csv);
    return s.committed([&](Tx& tx) { return tx.import_settlement(provider, file, "ops-bot", now, rng); });
  }

  // A callback_mismatch case with no payment: `provider` reports `reference`, which no payment
  // of it has.
  std::string orphan(const std::string& provider, const std::string& reference, const std::string& event_id,
                     UnixMillis now) {
    VendorCallback cb;
    cb.provider = provider;
    cb.event_id = event_id;
    cb.client_key = reference;
    cb.status = CallbackStatus::succeeded;
    cb.payload = "{}";
    const auto out = s.committed([&](Tx& tx) { return tx.record_callback(cb, now, rng); });
    REQUIRE(out.result == CallbackResult::unknown_reference);
    return *out.case_id;
  }
};

Resolved resolved(const ResolveResult& r) {
  const auto* out = std::get_if<Resolved>(&r);
  if (!out) FAIL("refused: " << std::get<ResolveRefusal>(r).detail);
  return *out;
}

ResolveRefusal::Code refusal(const ResolveResult& r) {
  const auto* out = std::get_if<ResolveRefusal>(&r);
  if (!out) FAIL("expected a refusal");
  return out->code;
}

}  // namespace

TEST_CASE_TEMPLATE("shared store: resolve succeeded / failed_final from PROCESSING and UNKNOWN", D,
                   PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  Recon t{*s};
  for (PaymentState from : {PaymentState::processing, PaymentState::unknown}) {
    for (ResolutionOutcome outcome : {ResolutionOutcome::succeeded, ResolutionOutcome::failed_final}) {
      CAPTURE(to_string(from));
      CAPTURE(to_string(outcome));
      Payment p = t.with_case(from);
      const std::string case_id = t.open_case_id(p);
      const auto events_before = t.events(p);

      const auto out = resolved(t.resolve(case_id, outcome, t0 + 60'000, "ch_123"));
      const bool success = outcome == ResolutionOutcome::succeeded;
      REQUIRE(out.payment);
      CHECK(out.payment->state == (success ? PaymentState::succeeded : PaymentState::failed_final));
      CHECK(out.payment->next_action == NextAction::none);
      CHECK(out.payment->vendor_reference == "ch_123");
      CHECK(out.event == (success ? EventType::succeeded : EventType::failed));
      CHECK(t.events(p) == events_before + 1);
      CHECK(t.events(p, success ? "payment.succeeded" : "payment.failed") == 1);
      if (!success) {
        CHECK(out.payment->failure_code == "reconciliation_failed");
        CHECK(out.payment->failure_message == "marked failed by reconciliation case " + case_id);
      }
      check_same_payment(t.payment(p), *out.payment);

      const auto& c = out.resolved_case;
      CHECK(c.id == case_id);
      CHECK(c.status == CaseStatus::resolved);
      CHECK(c.resolved_at == t0 + 60'000);
      CHECK(c.outcome == std::string(to_string(outcome)));
      CHECK(c.note == "checked in the vendor dashboard");
      CHECK(c.resolved_by == "alice");
      CHECK(c.vendor_reference == "ch_123");
      REQUIRE(c.evidence.size() == 1);
      CHECK(c.evidence[0].as_object().at("source").as_string() == "operator");
      CHECK(c.evidence[0].as_object().at("at").as_string() == format_rfc3339(t0 + 60'000));
      CHECK_FALSE(t.open_case(p));

      // The event carries the payment as resolved, case included.
      const auto body = boost::json::parse(t.events_of(p).back().payload);
      CHECK(body.at("payment").at("reconciliation").at("status").as_string() == "resolved");
    }
  }
}

TEST_CASE_TEMPLATE("shared store: resolve retry keeps the state, resumes by state, with a fresh budget", D,
                   PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  Recon t{*s};
  for (PaymentState from : {PaymentState::processing, PaymentState::unknown}) {
    CAPTURE(to_string(from));
    Payment p = t.with_case(from);
    const auto events_before = t.events(p);
    const UnixMillis now = t0 + 3'600'000;

    const auto out = resolved(t.resolve(t.open_case_id(p), ResolutionOutcome::retry, now));
    REQUIRE(out.payment);
    CHECK(out.payment->state == from);
    CHECK(out.payment->next_action == (from == PaymentState::unknown ? NextAction::query : NextAction::submit));
    CHECK(out.payment->next_attempt_at == now);
    CHECK(out.payment->budget_started_at == now);
    CHECK(out.payment->budget_attempts_base == 3);
    CHECK(out.payment->first_submit_at == t0 + 10);  // retention still counts from here
    CHECK(out.payment->client_key == p.client_key);
    CHECK_FALSE(out.event);
    CHECK(t.events(p) == events_before);
    CHECK(out.resolved_case.outcome == "retry");
  }

  // A payment the vendor answered pending (naming its charge) resumes with a query.
  Payment p = t.intake();
  t.attempted(p, t0 + 10);
  TransitionUpdate pending;
  pending.vendor_reference = "ch_pending";
  t.apply(p, Trigger::submit_pending, CaseReason::retry_budget_exhausted, pending);
  CHECK(t.payment(p).next_action == NextAction::query);
  t.apply(p, Trigger::give_up, CaseReason::retry_budget_exhausted);
  const auto out = resolved(t.resolve(t.open_case_id(p), ResolutionOutcome::retry, t0 + 3'600'000));
  CHECK(out.payment->state == PaymentState::processing);
  CHECK(out.payment->next_action == NextAction::query);
}

TEST_CASE_TEMPLATE("shared store: resolve retry only while the vendor retains the key", D, PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  Recon t{*s};
  // Key retention 24h, request timeout 10s, lease 30s: a retry must be able to end by
  // first_submit_at + 0.9 × 24h.
  const UnixMillis first = t0 + 10;
  const UnixMillis deadline = first + 24 * 3'600'000 * 9 / 10;
  const UnixMillis last_allowed = deadline - 40'000;

  Payment inside = t.with_case(PaymentState::unknown, first);
  resolved(t.resolve(t.open_case_id(inside), ResolutionOutcome::retry, last_allowed));

  // Outside: refused, nothing written.
  Payment p = t.with_case(PaymentState::unknown, first);
  const std::string case_id = t.open_case_id(p);
  const auto events_before = t.events(p);
  const Payment before = t.payment(p);
  const auto out = t.resolve(case_id, ResolutionOutcome::retry, last_allowed + 1);
  CHECK(refusal(out) == ResolveRefusal::Code::retry_not_allowed);
  CHECK(std::get<ResolveRefusal>(out).detail.find(p.client_key) != std::string::npos);
  const auto still_open = t.find_case(case_id);
  REQUIRE(still_open);
  CHECK(still_open->status == CaseStatus::open);
  check_same_payment(t.payment(p), before);
  CHECK(t.events(p) == events_before);
  // The operator can still decide the outcome.
  resolved(t.resolve(case_id, ResolutionOutcome::failed_final, last_allowed + 1));

  // Never submitted: the vendor never saw the key.
  Payment fresh = t.intake();
  t.apply(fresh, Trigger::give_up, CaseReason::retry_budget_exhausted);
  resolved(t.resolve(t.open_case_id(fresh), ResolutionOutcome::retry, t0 + 365LL * 86'400'000));
}

TEST_CASE_TEMPLATE("shared store: resolving a late_contradiction keeps the state quietly or corrects it", D,
                   PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  Recon t{*s};
  for (PaymentState terminal : {PaymentState::succeeded, PaymentState::failed_final}) {
    CAPTURE(to_string(terminal));
    const bool was_success = terminal == PaymentState::succeeded;
    const auto same = was_success ? ResolutionOutcome::succeeded : ResolutionOutcome::failed_final;
    const auto other = was_success ? ResolutionOutcome::failed_final : ResolutionOutcome::succeeded;

    {  // the same state: the case closes, the payment row is not written
      Payment p = t.with_case(terminal);
      const auto opened = t.open_case(p);
      REQUIRE(opened);
      REQUIRE(opened->reason == "late_contradiction");
      const auto events_before = t.events(p);
      const Payment before = t.payment(p);
      const auto out = resolved(t.resolve(t.open_case_id(p), same, t0 + 90'000, "ch_9"));
      REQUIRE(out.payment);
      CHECK(out.payment->state == terminal);
      CHECK_FALSE(out.event);
      CHECK(t.events(p) == events_before);
      CHECK(out.payment->updated_at == before.updated_at);
      CHECK(out.payment->fence == before.fence);
      CHECK(out.resolved_case.status == CaseStatus::resolved);
      CHECK(out.resolved_case.vendor_reference == "ch_9");
    }
    {  // the other state: payment.corrected
      Payment p = t.with_case(terminal);
      const auto events_before = t.events(p);
      const auto out = resolved(t.resolve(t.open_case_id(p), other, t0 + 90'000));
      REQUIRE(out.payment);
      CHECK(out.payment->state == (was_success ? PaymentState::failed_final : PaymentState::succeeded));
      CHECK(out.event == EventType::corrected);
      CHECK(t.events(p) == events_before + 1);
      CHECK(t.events(p, "payment.corrected") == 1);
      // A payment corrected to SUCCEEDED carries no stale failure.
      if (!was_success) {
        CHECK_FALSE(out.payment->failure_code);
        CHECK_FALSE(out.payment->failure_message);
      }
    }
    {  // retry is refused
      Payment p = t.with_case(terminal);
      CHECK(refusal(t.resolve(t.open_case_id(p), ResolutionOutcome::retry, t0 + 90'000)) ==
            ResolveRefusal::Code::retry_not_allowed);
      CHECK(t.open_case(p));
    }
  }
}

TEST_CASE_TEMPLATE("shared store: a case resolves once; an unknown case is not found", D, PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  Recon t{*s};
  Payment p = t.with_case(PaymentState::unknown);
  const std::string case_id = t.open_case_id(p);
  resolved(t.resolve(case_id, ResolutionOutcome::succeeded, t0 + 5'000));
  const auto events_after_first = t.events(p);
  for (auto outcome : {ResolutionOutcome::succeeded, ResolutionOutcome::failed_final, ResolutionOutcome::retry}) {
    const auto out = t.resolve(case_id, outcome, t0 + 6'000);
    CHECK(refusal(out) == ResolveRefusal::Code::case_not_open);
    CHECK(std::get<ResolveRefusal>(out).detail.find("by alice") != std::string::npos);
  }
  CHECK(t.events(p) == events_after_first);
  CHECK(t.payment(p).state == PaymentState::succeeded);
  const auto c = t.find_case(case_id);
  REQUIRE(c);
  CHECK(c->resolved_by == "alice");
  CHECK(refusal(t.resolve("rc_00000000000000000000000000", ResolutionOutcome::succeeded, t0)) ==
        ResolveRefusal::Code::case_not_found);
  CHECK_FALSE(t.find_case("rc_00000000000000000000000000"));
}

TEST_CASE_TEMPLATE("shared store: cases list newest first with a cursor and a status filter; evidence appends", D,
                   PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  Recon t{*s};
  std::vector<Payment> payments;
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) {
    payments.push_back(t.with_case(PaymentState::processing));
    ids.push_back(t.open_case_id(payments.back()));
  }
  resolved(t.resolve(ids[1], ResolutionOutcome::succeeded, t0 + 2'000));

  const auto page = t.list(std::nullopt, 3);
  REQUIRE(page.cases.size() == 3);
  REQUIRE(page.next_cursor);
  CHECK(page.next_cursor == page.cases.back().id);
  const auto rest = t.list(std::nullopt, 3, page.next_cursor);
  CHECK(rest.cases.size() == 2);
  CHECK_FALSE(rest.next_cursor);
  std::vector<std::string> seen;
  for (const auto* pg : {&page, &rest})
    for (const auto& c : pg->cases) seen.push_back(c.id);
  CHECK(std::is_sorted(seen.rbegin(), seen.rend()));
  CHECK(seen.size() == 5);
  CHECK(t.list(std::nullopt, 5).next_cursor == std::nullopt);

  CHECK(t.list(CaseStatus::open, 10).cases.size() == 4);
  const auto done = t.list(CaseStatus::resolved, 10);
  REQUIRE(done.cases.size() == 1);
  CHECK(done.cases[0].id == ids[1]);
  CHECK(done.cases[0].tenant_id == "acme");
  CHECK(done.cases[0].provider == "sim");
  REQUIRE(done.cases[0].operation_id);
  CHECK(done.cases[0].operation_id->starts_with("op-"));
  CHECK(done.cases[0].reason == "retry_budget_exhausted");
  CHECK_FALSE(done.cases[0].reference);

  // Evidence on a payment's open case: "at" defaults to now; a case no longer open takes none.
  CHECK(s->committed([&](Tx& tx) {
    return tx.append_open_case_evidence(payments[0].id,
                                        boost::json::object{{"source", "vendor-support"}, {"ticket", "V-7"}}, t0 + 9);
  }));
  CHECK(s->committed([&](Tx& tx) {
    return tx.append_open_case_evidence(
        payments[0].id, boost::json::object{{"source", "x"}, {"at", "2020-01-01T00:00:00.000Z"}}, t0);
  }));
  auto c = t.find_case(ids[0]);
  REQUIRE(c);
  REQUIRE(c->evidence.size() == 2);
  CHECK(c->evidence[0].at("ticket").as_string() == "V-7");
  CHECK(c->evidence[0].at("at").as_string() == format_rfc3339(t0 + 9));
  CHECK(c->evidence[1].at("at").as_string() == "2020-01-01T00:00:00.000Z");
  const auto resolved_case = t.find_case(ids[1]);
  REQUIRE(resolved_case);
  const auto resolved_before = resolved_case->evidence.size();
  CHECK_FALSE(s->committed([&](Tx& tx) {
    return tx.append_open_case_evidence(payments[1].id, boost::json::object{{"source", "x"}}, t0);
  }));
  const auto resolved_after = t.find_case(ids[1]);
  REQUIRE(resolved_after);
  CHECK(resolved_after->evidence.size() == resolved_before);
  CHECK_FALSE(s->committed([&](Tx& tx) {
    return tx.append_open_case_evidence("pay_missing", boost::json::object{{"source", "x"}}, t0);
  }));
  // An entry that names no source is refused, and the job with it.
  CHECK(s->run([&](Tx& tx) {
           tx.append_open_case_evidence(payments[0].id, boost::json::object{{"note", "no source"}}, t0);
         }).status == WriteStatus::rejected);
  c = t.find_case(ids[0]);
  REQUIRE(c);
  CHECK(c->evidence.size() == 2);
}

TEST_CASE_TEMPLATE("shared store: a case row that cannot be read is named beside the list, the rest served", D,
                   PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  Recon t{*s};
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) ids.push_back(t.open_case_id(t.with_case(PaymentState::processing)));
  // Damage planted in the database: evidence that is not a JSON array.
  s->exec("UPDATE reconciliation_cases SET evidence = '{}' WHERE id = '" + ids[2] + "'");

  const auto all = t.list(CaseStatus::open, 10);
  CHECK(all.cases.size() == 3);
  REQUIRE(all.unreadable.size() == 1);
  CHECK(all.unreadable[0].id == ids[2]);
  CHECK(all.unreadable[0].detail == "reconciliation case " + ids[2] + ": evidence is not a JSON array");
  CHECK_FALSE(all.next_cursor);

  // Paging counts the unreadable row and moves past it: every row is seen exactly once.
  std::vector<std::string> seen;
  std::optional<std::string> cursor;
  int pages = 0;
  do {
    const auto page = t.list(CaseStatus::open, 2, cursor);
    for (const auto& c : page.cases) seen.push_back(c.id);
    for (const auto& u : page.unreadable) seen.push_back(u.id);
    cursor = page.next_cursor;
  } while (cursor && ++pages < 10);
  std::sort(seen.begin(), seen.end());
  std::sort(ids.begin(), ids.end());
  CHECK(seen == ids);
}

TEST_CASE_TEMPLATE("shared store: text that is not UTF-8 is never written into a case", D, PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  Recon t{*s};
  const Payment p = t.with_case(PaymentState::processing);
  const std::string id = t.open_case_id(p);
  const auto before = t.find_case(id)->evidence.size();
  CHECK(s->run([&](Tx& tx) {
           tx.append_open_case_evidence(p.id, boost::json::object{{"source", "vendor"}, {"detail", "ref\xFF\xFE"}}, t0);
         }).status == WriteStatus::rejected);
  CHECK(t.find_case(id)->evidence.size() == before);

  // A callback naming a reference that is not UTF-8 opens no case.
  const auto cases_before = s->count_rows("reconciliation_cases");
  VendorCallback cb;
  cb.provider = "sim";
  cb.event_id = "evt_not_utf8";
  cb.client_key = "ck_\xFF\xFE";
  cb.status = CallbackStatus::succeeded;
  cb.payload = "{}";
  CHECK(s->run([&](Tx& tx) { tx.record_callback(cb, t0, t.rng); }).status != WriteStatus::committed);
  CHECK(s->count_rows("reconciliation_cases") == cases_before);
  CHECK(t.list(CaseStatus::open, 10).unreadable.empty());
}

TEST_CASE_TEMPLATE("shared store: hold_with_evidence adds to the open case, or the escalation opens one", D,
                   PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  Recon t{*s};
  Payment p = t.intake();
  const auto events_before = t.events(p);
  const auto [first, second] = s->committed([&](Tx& tx) {
    Held a = tx.hold_with_evidence(p, store::mismatch_escalation(p.state), boost::json::object{{"source", "x"}},
                                   t0 + 1'000, t.rng);
    const auto found = tx.find_payment_by_id(p.id);
    REQUIRE(found);
    const Payment now = *found;
    Held b = tx.hold_with_evidence(now, store::mismatch_escalation(now.state),
                                   boost::json::object{{"source", "y"}}, t0 + 2'000, t.rng);
    return std::pair{a, b};
  });
  CHECK(first.event == EventType::escalated);
  CHECK_FALSE(second.event);
  CHECK(first.case_id == second.case_id);
  CHECK(t.events(p) == events_before + 1);
  const auto c = t.find_case(first.case_id);
  REQUIRE(c);
  CHECK(c->reason == "callback_mismatch");
  CHECK(c->evidence.size() == 2);
  CHECK(t.payment(p).next_action == NextAction::none);
  CHECK(t.payment(p).state == PaymentState::processing);

  const Transition terminal = store::mismatch_escalation(PaymentState::succeeded);
  CHECK(terminal.from == PaymentState::succeeded);
  CHECK(terminal.to == PaymentState::succeeded);
  CHECK(terminal.event == EventType::escalated);
  CHECK(terminal.open_case == CaseReason::callback_mismatch);
}

TEST_CASE_TEMPLATE("shared store: a case with no payment lists beside the others and is closed by an operator", D,
                   PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  Recon t{*s};
  Payment p = t.with_case(PaymentState::unknown);  // an ordinary case beside it
  const auto outbox_before = s->count_rows("outbox");
  const std::string case_id = t.orphan("sim", "ck_UNKNOWN", "evt_1", t0 + 1'000);
  CHECK(t.orphan("sim", "ck_UNKNOWN", "evt_2", t0 + 2'000) == case_id);
  CHECK(t.orphan("other", "ck_UNKNOWN", "evt_3", t0 + 2'000) != case_id);

  const auto open = t.list(CaseStatus::open, 10);
  CHECK(open.cases.size() == 3);
  const auto beside = t.open_case(p);
  REQUIRE(beside);
  CHECK(beside->provider == "sim");
  auto c = t.find_case(case_id);
  REQUIRE(c);
  CHECK(c->reference == "ck_UNKNOWN");
  CHECK(c->opened_at == t0 + 1'000);
  CHECK(c->evidence.size() == 2);

  // retry: nothing to retry.
  const auto retry = t.resolve(case_id, ResolutionOutcome::retry, t0 + 3'000);
  CHECK(refusal(retry) == ResolveRefusal::Code::retry_not_allowed);
  CHECK(std::get<ResolveRefusal>(retry).detail.find("no payment to retry") != std::string::npos);
  c = t.find_case(case_id);
  REQUIRE(c);
  CHECK(c->status == CaseStatus::open);

  const auto out = resolved(t.resolve(case_id, ResolutionOutcome::failed_final, t0 + 4'000, "ch_x"));
  CHECK_FALSE(out.payment);
  CHECK_FALSE(out.event);
  CHECK(out.resolved_case.status == CaseStatus::resolved);
  CHECK(out.resolved_case.outcome == "failed_final");
  CHECK(out.resolved_case.note == "checked in the vendor dashboard");
  CHECK(out.resolved_case.resolved_by == "alice");
  CHECK(out.resolved_case.vendor_reference == "ch_x");
  CHECK(out.resolved_case.evidence.size() == 3);  // the operator's evidence too
  CHECK(s->count_rows("outbox") == outbox_before);
  CHECK(refusal(t.resolve(case_id, ResolutionOutcome::succeeded, t0 + 5'000)) == ResolveRefusal::Code::case_not_open);

  // Once it is closed, the reference can open a new case.
  CHECK(t.orphan("sim", "ck_UNKNOWN", "evt_4", t0 + 6'000) != case_id);
}

TEST_CASE_TEMPLATE("shared store: settlement import resolves, confirms, contradicts, holds mismatches and unmatched rows",
                   D, PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  Recon t{*s};
  Payment a = t.with_case(PaymentState::processing);  // resolved by a success
  Payment b = t.with_case(PaymentState::unknown);     // resolved by a decline
  Payment c = t.intake();                             // SUCCEEDED, no case: confirmed
  t.apply(c, Trigger::submit_succeeded);
  Payment d = t.intake();                             // SUCCEEDED, the file says failed
  t.apply(d, Trigger::submit_succeeded);
  Payment e = t.with_case(PaymentState::unknown);     // amount differs: stays open
  Payment f = t.intake();                             // PROCESSING, no case: finalized
  Payment g = t.intake();                             // amount differs, no case: case opens
  const auto d_events = t.events(d);

  const std::string csv =
      "reference,status,amount_minor,currency,vendor_reference\r\n" +  // 1
      a.client_key + ",succeeded,1000,EUR,ch_a\r\n" +                 // 2
      b.client_key + ",declined,1000,EUR,\r\n" +                      // 3
      c.client_key + ",succeeded,1000,EUR,ch_c\r\n" +                 // 4
      d.client_key + ",failed,1000,EUR,ch_d\r\n" +                    // 5
      e.client_key + ",succeeded,999,EUR,ch_e\r\n" +                  // 6
      "ck_NOSUCHKEY0000000000000000,succeeded,1000,EUR,ch_x\r\n"      // 7
      "bad,row\r\n"                                                   // 8
      "\r\n" +                                                        // 9 (blank)
      f.client_key + ",succeeded,12.5,EUR,ch_f\r\n" +                 // 10
      f.client_key + ",refunded,1000,eur,ch_f\r\n" +                  // 11
      "\"" + f.client_key + "\",\"Succeeded\",1000,EUR,\"ch_f, settled\"\r\n" +  // 12
      g.client_key + ",succeeded,1000,USD,ch_g\n";                    // 13

  const ImportSummary sum = t.import("sim", csv, t0 + 100'000);
  CHECK(sum.rows == 11);
  CHECK(sum.resolved == 2);
  CHECK(sum.confirmed == 1);
  CHECK(sum.contradictions == 1);
  CHECK(sum.mismatched == 2);
  CHECK(sum.unmatched == 1);
  CHECK(sum.finalized == 1);
  std::vector<std::string> changed{a.id, b.id, d.id, e.id, f.id, g.id};  // not c, nor the unmatched key
  std::sort(changed.begin(), changed.end());
  CHECK(sum.changed_payments == changed);
  REQUIRE(sum.errors.size() == 3);
  CHECK(sum.errors[0].line == 8);
  CHECK(sum.errors[0].message.find("expected 5 columns") != std::string::npos);
  CHECK(sum.errors[1].line == 10);
  CHECK(sum.errors[1].message.find("amount_minor") != std::string::npos);
  CHECK(sum.errors[2].line == 11);
  CHECK(sum.errors[2].message.find("status 'refunded'") != std::string::npos);

  const Payment pa = t.payment(a);
  CHECK(pa.state == PaymentState::succeeded);
  CHECK(pa.vendor_reference == "ch_a");
  REQUIRE(pa.reconciliation);
  const auto ca = t.find_case(pa.reconciliation->case_id);
  REQUIRE(ca);
  CHECK(ca->status == CaseStatus::resolved);
  CHECK(ca->resolved_by == "ops-bot");
  CHECK(ca->note == "settlement file");
  REQUIRE(ca->evidence.size() == 1);
  CHECK(ca->evidence[0].at("line").as_int64() == 2);
  CHECK(ca->evidence[0].at("source").as_string() == "settlement-import");
  CHECK(ca->evidence[0].at("finding").as_string() == "resolves");
  CHECK(t.events(a, "payment.succeeded") == 1);

  CHECK(t.payment(b).state == PaymentState::failed_final);
  CHECK(t.events(b, "payment.failed") == 1);

  CHECK(t.payment(c).state == PaymentState::succeeded);
  CHECK_FALSE(t.payment(c).reconciliation);

  // A contradiction changes no terminal state: it opens late_contradiction with the row.
  CHECK(t.payment(d).state == PaymentState::succeeded);
  const auto cd = t.open_case(d);
  REQUIRE(cd);
  CHECK(cd->reason == "late_contradiction");
  REQUIRE(cd->evidence.size() == 1);
  CHECK(cd->evidence[0].at("finding").as_string() == "contradiction");
  CHECK(t.events(d) == d_events + 1);
  CHECK(t.events(d, "payment.escalated") == 1);

  const auto ce = t.open_case(e);
  REQUIRE(ce);
  CHECK(ce->reason == "retry_budget_exhausted");
  REQUIRE(ce->evidence.size() == 1);
  CHECK(ce->evidence[0].at("amount_minor").as_int64() == 999);
  CHECK(t.payment(e).state == PaymentState::unknown);

  const Payment pf = t.payment(f);
  CHECK(pf.state == PaymentState::succeeded);
  CHECK(pf.vendor_reference == "ch_f, settled");
  CHECK(t.events(f, "payment.succeeded") == 1);

  const auto cg = t.open_case(g);
  REQUIRE(cg);
  CHECK(cg->reason == "callback_mismatch");
  CHECK(cg->evidence[0].at("currency").as_string() == "USD");
  CHECK(t.payment(g).state == PaymentState::processing);
  CHECK(t.payment(g).next_action == NextAction::none);  // automatic work stops

  // A row no payment matches is named in the answer and held by a case with no payment.
  REQUIRE(sum.unmatched_references.size() == 1);
  CHECK(sum.unmatched_references[0] == "ck_NOSUCHKEY0000000000000000");
  auto orphans = t.list(CaseStatus::open, 50).cases;
  auto orphan = std::find_if(orphans.begin(), orphans.end(),
                             [](const ReconciliationCase& rc) { return !rc.payment_id; });
  REQUIRE(orphan != orphans.end());
  CHECK(orphan->reason == "callback_mismatch");
  CHECK(orphan->provider == "sim");
  CHECK(orphan->reference == "ck_NOSUCHKEY0000000000000000");
  REQUIRE(orphan->evidence.size() == 1);
  CHECK(orphan->evidence[0].at("finding").as_string() == "unmatched");
  CHECK(orphan->evidence[0].at("line").as_int64() == 7);
  CHECK(orphan->evidence[0].at("vendor_reference").as_string() == "ch_x");

  // Importing the same file again changes no state.
  std::int64_t before = 0;
  for (const auto* p : {&a, &b, &c, &d, &e, &f, &g}) before += t.events(*p);
  const ImportSummary again = t.import("sim", csv, t0 + 200'000);
  CHECK(again.resolved == 0);
  CHECK(again.confirmed == 4);       // a, b, c, f
  CHECK(again.contradictions == 1);  // d: the row joins its open case, SUCCEEDED stands
  CHECK(again.mismatched == 2);
  CHECK(again.finalized == 0);
  CHECK(t.payment(d).state == PaymentState::succeeded);
  const auto joined = t.open_case(d);
  REQUIRE(joined);
  CHECK(joined->evidence.size() == 2);
  CHECK(again.unmatched_references == sum.unmatched_references);
  int orphan_cases = 0;
  for (const auto& rc : t.list(CaseStatus::open, 50).cases)
    if (!rc.payment_id) {
      ++orphan_cases;
      CHECK(rc.evidence.size() == 2);
    }
  CHECK(orphan_cases == 1);
  std::int64_t after = 0;
  for (const auto* p : {&a, &b, &c, &d, &e, &f, &g}) after += t.events(*p);
  CHECK(after == before);
}

TEST_CASE_TEMPLATE("shared store: settlement import of another provider's keys is unmatched; a bad header imports nothing",
                   D, PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  Recon t{*s};
  Payment p = t.with_case(PaymentState::unknown);
  const std::string row = p.client_key + ",succeeded,1000,EUR,ch_1\n";
  CHECK(t.import("other", std::string(store::settlement_header) + "\n" + row, t0).unmatched == 1);
  const auto outbox_before = s->count_rows("outbox");
  const auto cases_before = s->count_rows("reconciliation_cases");
  const ImportSummary bad = t.import("sim", "ref,status,amount,currency,vendor_reference\n" + row, t0);
  CHECK(bad.rows == 0);
  REQUIRE(bad.errors.size() == 1);
  CHECK(bad.errors[0].line == 1);
  CHECK(bad.errors[0].message.find("expected the header") != std::string::npos);
  CHECK(t.import("sim", "", t0).errors.size() == 1);
  CHECK(t.open_case(p));
  CHECK(t.payment(p).state == PaymentState::unknown);
  CHECK(s->count_rows("outbox") == outbox_before);
  CHECK(s->count_rows("reconciliation_cases") == cases_before);
}

TEST_CASE_TEMPLATE("shared store: two resolutions of one case at once: exactly one wins", D, PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  Recon t{*s};
  Payment p = t.with_case(PaymentState::unknown);
  const std::string case_id = t.open_case_id(p);
  const auto events_before = t.events(p);
  const std::vector<ResolutionOutcome> outcomes{ResolutionOutcome::succeeded, ResolutionOutcome::failed_final};
  std::vector<std::optional<ResolveResult>> results(2);
  std::vector<std::function<void(Tx&)>> jobs;
  for (int i = 0; i < 2; ++i)
    jobs.push_back([&, i](Tx& tx) {
      SeededRandom rng(80 + i);
      results[i] = tx.resolve_case(case_id, Recon::resolution(outcomes[i], std::nullopt), t.contract,
                                   t0 + 5'000 + i, rng);
    });
  for (const auto& r : run_side_by_side(s->store(), std::move(jobs)))
    CHECK_MESSAGE(r.status == WriteStatus::committed, r.error);
  int won = -1, refused = 0;
  for (int i = 0; i < 2; ++i) {
    REQUIRE(results[i]);
    if (std::holds_alternative<Resolved>(*results[i])) {
      CHECK(won == -1);
      won = i;
    } else {
      refused += refusal(*results[i]) == ResolveRefusal::Code::case_not_open;
    }
  }
  REQUIRE(won != -1);
  CHECK(refused == 1);
  // The case and the payment say what the winner decided, once.
  const auto c = t.find_case(case_id);
  REQUIRE(c);
  CHECK(c->outcome == std::string(to_string(outcomes[won])));
  CHECK(c->resolved_at == t0 + 5'000 + won);
  CHECK(c->evidence.size() == 1);
  CHECK(t.payment(p).state ==
        (outcomes[won] == ResolutionOutcome::succeeded ? PaymentState::succeeded : PaymentState::failed_final));
  CHECK(t.events(p) == events_before + 1);
}

TEST_CASE_TEMPLATE("shared store: two escalations of one payment at once open one case with both pieces of evidence",
                   D, PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  Recon t{*s};
  Payment p = t.intake();
  t.apply(p, Trigger::submit_succeeded);
  const Payment succeeded = t.payment(p);
  const auto events_before = t.events(p);
  std::vector<Held> held(2);
  std::vector<std::function<void(Tx&)>> jobs;
  for (int i = 0; i < 2; ++i)
    jobs.push_back([&, i](Tx& tx) {
      SeededRandom rng(90 + i);
      held[i] = tx.hold_with_evidence(succeeded, store::mismatch_escalation(succeeded.state),
                                      boost::json::object{{"source", "x"}, {"n", i}}, t0 + 5'000, rng);
    });
  for (const auto& r : run_side_by_side(s->store(), std::move(jobs)))
    CHECK_MESSAGE(r.status == WriteStatus::committed, r.error);
  CHECK(held[0].case_id == held[1].case_id);
  CHECK(held[0].event.has_value() != held[1].event.has_value());
  CHECK(s->count_rows("reconciliation_cases") == 1);
  CHECK(t.events(p) == events_before + 1);
  CHECK(t.events(p, "payment.escalated") == 1);
  const auto c = t.find_case(held[0].case_id);
  REQUIRE(c);
  CHECK(c->evidence.size() == 2);
  CHECK(t.payment(p).state == PaymentState::succeeded);
}

}  // namespace payorch::test
