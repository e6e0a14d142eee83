// store/reconciliation: operator resolutions against the state machine (every outcome × the
// states a case can be opened in), key retention for `retry`, and the settlement import.
#include <doctest/doctest.h>

#include <boost/json/parse.hpp>
#include <algorithm>
#include <string>

#include "store/intake.h"
#include "store/payments.h"
#include "store/transitions.h"
#include "store/cases.h"
#include "store/resolution.h"
#include "store/settlement.h"
#include "support/enum_names.h"
#include "support/store_fixture.h"

using namespace payorch;
using namespace payorch::store;
using namespace std::chrono_literals;

namespace {

constexpr UnixMillis t0 = 1'700'000'000'000;

struct ReconDb {
  test::TempDatabase file{"recon", t0};
  Db* db = file.db.get();
  SeededRandom rng{42};
  int next_op = 0;

  Payment intake(std::int64_t amount = 1000, std::string currency = "EUR") {
    const IntakeRequest r = test::intake_request("op-" + std::to_string(++next_op), amount, currency);
    Transaction tx(*db);
    auto out = record_intake(*db, r, t0, rng);
    tx.commit();
    REQUIRE(out.kind == IntakeOutcome::Kind::created);
    return out.payment;
  }

  void apply(const Payment& p, Trigger trigger, CaseReason reason = CaseReason::retry_budget_exhausted) {
    auto current = find_payment_by_id(*db, p.id);
    auto t = transition(current->state, trigger, reason);
    REQUIRE(t);
    Transaction tx(*db);
    REQUIRE(apply_transition(*db, p.id, std::nullopt, *t, TransitionUpdate{}, t0 + 1'000, rng) ==
            CasResult::applied);
    tx.commit();
  }

  // A payment in `state` whose key was first sent at `first_submit_at`, with an open case.
  Payment with_case(PaymentState state, UnixMillis first_submit_at = t0 + 10) {
    Payment p = intake();
    db->prepare("UPDATE payments SET first_submit_at = ?, attempt_count = 3 WHERE id = ?")
        .bind(1, first_submit_at)
        .bind(2, p.id)
        .run();
    if (state == PaymentState::unknown) apply(p, Trigger::submit_ambiguous);
    if (is_terminal(state)) {
      apply(p, state == PaymentState::succeeded ? Trigger::submit_succeeded : Trigger::submit_declined);
      // A contradicting final answer: the state machine opens late_contradiction.
      apply(p, state == PaymentState::succeeded ? Trigger::callback_declined : Trigger::callback_succeeded);
    } else {
      apply(p, Trigger::give_up, CaseReason::retry_budget_exhausted);
    }
    return *find_payment_by_id(*db, p.id);
  }

  std::string open_case_id(const Payment& p) {
    auto c = find_open_case(*db, p.id);
    REQUIRE(c);
    return c->id;
  }

  std::int64_t events(const Payment& p, std::string_view type = "") {
    auto st = db->prepare("SELECT COUNT(*) FROM outbox WHERE payment_id = ?1 AND (?2 = '' OR type = ?2)");
    st.bind(1, p.id).bind(2, type);
    st.step();
    return st.col_int(0);
  }

  ResolveResult resolve(const std::string& case_id, ResolutionOutcome outcome, UnixMillis now,
                        std::optional<std::string> vendor_reference = std::nullopt) {
    Resolution r;
    r.outcome = outcome;
    r.vendor_reference = std::move(vendor_reference);
    r.note = "checked in the vendor dashboard";
    r.by = "alice";
    r.evidence = boost::json::object{{"source", "operator"}, {"ticket", "OPS-1"}};
    Transaction tx(*db);
    auto out = resolve_case(*db, case_id, r, contract, now, rng);
    tx.commit();
    return out;
  }

  Contract contract = [] {
    Contract c;
    c.key_retention = 24h;
    c.request_timeout = 10s;
    c.lease = 30s;
    return c;
  }();
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

std::string next_action(Db& db, const std::string& id) {
  auto st = db.prepare("SELECT next_action FROM payments WHERE id = ?");
  st.bind(1, id);
  st.step();
  return st.col_text(0);
}

}  // namespace

TEST_CASE("resolve succeeded / failed_final from PROCESSING and UNKNOWN: one event, case closed") {
  for (PaymentState from : {PaymentState::processing, PaymentState::unknown}) {
    for (ResolutionOutcome outcome : {ResolutionOutcome::succeeded, ResolutionOutcome::failed_final}) {
      CAPTURE(to_string(from));
      CAPTURE(to_string(outcome));
      ReconDb t;
      Payment p = t.with_case(from);
      const std::string case_id = t.open_case_id(p);
      const auto events_before = t.events(p);

      const auto& out = resolved(t.resolve(case_id, outcome, t0 + 60'000, "ch_123"));
      const bool success = outcome == ResolutionOutcome::succeeded;
      CHECK(out.payment->state == (success ? PaymentState::succeeded : PaymentState::failed_final));
      CHECK(out.payment->next_action == NextAction::none);
      CHECK(out.payment->vendor_reference == "ch_123");
      CHECK(out.event == (success ? EventType::succeeded : EventType::failed));
      CHECK(t.events(p) == events_before + 1);
      CHECK(t.events(p, success ? "payment.succeeded" : "payment.failed") == 1);
      if (!success) CHECK(out.payment->failure_code == "reconciliation_failed");

      const auto& c = out.resolved_case;
      CHECK(c.status == CaseStatus::resolved);
      CHECK(c.resolved_at == t0 + 60'000);
      CHECK(c.outcome == std::string(to_string(outcome)));
      CHECK(c.note == "checked in the vendor dashboard");
      CHECK(c.resolved_by == "alice");
      CHECK(c.vendor_reference == "ch_123");
      REQUIRE(c.evidence.size() == 1);
      CHECK(c.evidence[0].as_object().at("source").as_string() == "operator");
      CHECK(c.evidence[0].as_object().at("at").as_string() == format_rfc3339(t0 + 60'000));
      CHECK_FALSE(find_open_case(*t.db, p.id));

      // The event carries the payment as resolved, case included.
      auto st = t.db->prepare("SELECT payload FROM outbox WHERE payment_id = ? ORDER BY seq DESC LIMIT 1");
      st.bind(1, p.id);
      REQUIRE(st.step());
      auto body = boost::json::parse(st.col_text(0));
      CHECK(body.at("payment").at("reconciliation").at("status").as_string() == "resolved");
    }
  }
}

TEST_CASE("resolve retry: same state, next action by state, fresh budget, no event") {
  for (PaymentState from : {PaymentState::processing, PaymentState::unknown}) {
    CAPTURE(to_string(from));
    ReconDb t;
    Payment p = t.with_case(from);
    const auto events_before = t.events(p);
    const UnixMillis now = t0 + 3'600'000;

    const auto& out = resolved(t.resolve(t.open_case_id(p), ResolutionOutcome::retry, now));
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
}

TEST_CASE("resolve retry: a payment the vendor answered pending resumes with a query, not a submit") {
  ReconDb t;
  Payment p = t.intake();
  t.db->prepare("UPDATE payments SET first_submit_at = ?, attempt_count = 3 WHERE id = ?").bind(1, t0 + 10).bind(2, p.id).run();
  // The vendor said pending, naming its charge; then the budget ran out.
  {
    auto pending = transition(PaymentState::processing, Trigger::submit_pending);
    TransitionUpdate u;
    u.vendor_reference = "ch_pending";
    Transaction tx(*t.db);
    REQUIRE(apply_transition(*t.db, p.id, std::nullopt, *pending, u, t0 + 1'000, t.rng) == CasResult::applied);
    tx.commit();
  }
  CHECK(next_action(*t.db, p.id) == "query");
  t.apply(p, Trigger::give_up, CaseReason::retry_budget_exhausted);
  const auto& out = resolved(t.resolve(t.open_case_id(p), ResolutionOutcome::retry, t0 + 3'600'000));
  CHECK(out.payment->state == PaymentState::processing);
  CHECK(out.payment->next_action == NextAction::query);
}

TEST_CASE("retry only while the vendor retains the key") {
  // Key retention 24h, request timeout 10s, lease 30s: a retry must be able to end by
  // first_submit_at + 0.9 × 24h.
  const UnixMillis first = t0 + 10;
  const UnixMillis deadline = first + 24 * 3'600'000 * 9 / 10;
  const UnixMillis last_allowed = deadline - 40'000;

  SUBCASE("inside") {
    ReconDb t;
    Payment p = t.with_case(PaymentState::unknown, first);
    resolved(t.resolve(t.open_case_id(p), ResolutionOutcome::retry, last_allowed));
  }
  SUBCASE("outside: refused, nothing written") {
    ReconDb t;
    Payment p = t.with_case(PaymentState::unknown, first);
    const std::string case_id = t.open_case_id(p);
    const auto events_before = t.events(p);
    auto out = t.resolve(case_id, ResolutionOutcome::retry, last_allowed + 1);
    CHECK(refusal(out) == ResolveRefusal::Code::retry_not_allowed);
    CHECK(std::get<ResolveRefusal>(out).detail.find(p.client_key) != std::string::npos);
    CHECK(find_case(*t.db, case_id)->status == CaseStatus::open);
    CHECK(find_payment_by_id(*t.db, p.id)->state == PaymentState::unknown);
    CHECK(next_action(*t.db, p.id) == "none");
    CHECK(t.events(p) == events_before);
    // The operator can still decide the outcome.
    resolved(t.resolve(case_id, ResolutionOutcome::failed_final, last_allowed + 1));
  }
  SUBCASE("never submitted: the vendor never saw the key") {
    ReconDb t;
    Payment p = t.intake();
    t.apply(p, Trigger::give_up, CaseReason::retry_budget_exhausted);
    resolved(t.resolve(t.open_case_id(p), ResolutionOutcome::retry, t0 + 365LL * 86'400'000));
  }
}

TEST_CASE("late_contradiction: confirming the state is a quiet close, changing it is payment.corrected") {
  for (PaymentState terminal : {PaymentState::succeeded, PaymentState::failed_final}) {
    CAPTURE(to_string(terminal));
    const bool was_success = terminal == PaymentState::succeeded;
    const auto same = was_success ? ResolutionOutcome::succeeded : ResolutionOutcome::failed_final;
    const auto other = was_success ? ResolutionOutcome::failed_final : ResolutionOutcome::succeeded;

    {  // the same state
      ReconDb t;
      Payment p = t.with_case(terminal);
      REQUIRE(find_open_case(*t.db, p.id)->reason == "late_contradiction");
      const auto events_before = t.events(p);
      const auto updated_before = find_payment_by_id(*t.db, p.id)->updated_at;
      const auto& out = resolved(t.resolve(t.open_case_id(p), same, t0 + 90'000, "ch_9"));
      CHECK(out.payment->state == terminal);
      CHECK_FALSE(out.event);
      CHECK(t.events(p) == events_before);
      CHECK(out.payment->updated_at == updated_before);  // the payment row was not written
      CHECK(out.resolved_case.status == CaseStatus::resolved);
      CHECK(out.resolved_case.vendor_reference == "ch_9");
    }
    {  // the other state
      ReconDb t;
      Payment p = t.with_case(terminal);
      const auto events_before = t.events(p);
      const auto& out = resolved(t.resolve(t.open_case_id(p), other, t0 + 90'000));
      CHECK(out.payment->state == (was_success ? PaymentState::failed_final : PaymentState::succeeded));
      CHECK(out.event == EventType::corrected);
      CHECK(t.events(p) == events_before + 1);
      CHECK(t.events(p, "payment.corrected") == 1);
      // A payment corrected to SUCCEEDED carries no stale failure.
      if (!was_success) CHECK_FALSE(out.payment->failure_code);
    }
    {  // retry is refused
      ReconDb t;
      Payment p = t.with_case(terminal);
      CHECK(refusal(t.resolve(t.open_case_id(p), ResolutionOutcome::retry, t0 + 90'000)) ==
            ResolveRefusal::Code::retry_not_allowed);
      CHECK(find_open_case(*t.db, p.id));
    }
  }
}

TEST_CASE("a case resolves once; an unknown case is not found") {
  ReconDb t;
  Payment p = t.with_case(PaymentState::unknown);
  const std::string case_id = t.open_case_id(p);
  resolved(t.resolve(case_id, ResolutionOutcome::succeeded, t0 + 5'000));
  const auto events_after_first = t.events(p);
  for (auto outcome : {ResolutionOutcome::succeeded, ResolutionOutcome::failed_final, ResolutionOutcome::retry})
    CHECK(refusal(t.resolve(case_id, outcome, t0 + 6'000)) == ResolveRefusal::Code::case_not_open);
  CHECK(t.events(p) == events_after_first);
  CHECK(find_payment_by_id(*t.db, p.id)->state == PaymentState::succeeded);
  CHECK(find_case(*t.db, case_id)->resolved_by == "alice");
  CHECK(refusal(t.resolve("rc_00000000000000000000000000", ResolutionOutcome::succeeded, t0)) ==
        ResolveRefusal::Code::case_not_found);
}

TEST_CASE("cases list newest first with a cursor and a status filter; evidence appends") {
  ReconDb t;
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(t.open_case_id(t.with_case(PaymentState::processing)));
  resolved(t.resolve(ids[1], ResolutionOutcome::succeeded, t0 + 2'000));

  auto page = list_cases(*t.db, std::nullopt, 3, std::nullopt);
  REQUIRE(page.cases.size() == 3);
  REQUIRE(page.next_cursor);
  auto rest = list_cases(*t.db, std::nullopt, 3, page.next_cursor);
  CHECK(rest.cases.size() == 2);
  CHECK_FALSE(rest.next_cursor);
  std::vector<std::string> seen;
  for (const auto* pg : {&page, &rest})
    for (const auto& c : pg->cases) seen.push_back(c.id);
  CHECK(std::is_sorted(seen.rbegin(), seen.rend()));
  CHECK(seen.size() == 5);

  CHECK(list_cases(*t.db, CaseStatus::open, 10, std::nullopt).cases.size() == 4);
  auto done = list_cases(*t.db, CaseStatus::resolved, 10, std::nullopt);
  REQUIRE(done.cases.size() == 1);
  CHECK(done.cases[0].id == ids[1]);
  CHECK(done.cases[0].tenant_id == "acme");
  CHECK(done.cases[0].provider == "sim");
  CHECK(done.cases[0].operation_id->starts_with("op-"));

  CHECK(append_evidence(*t.db, ids[0], boost::json::object{{"source", "vendor-support"}, {"ticket", "V-7"}}, t0 + 9));
  CHECK(append_evidence(*t.db, ids[0], boost::json::object{{"source", "x"}, {"at", "2020-01-01T00:00:00.000Z"}}, t0));
  auto c = find_case(*t.db, ids[0]);
  REQUIRE(c->evidence.size() == 2);
  CHECK(c->evidence[0].at("at").as_string() == format_rfc3339(t0 + 9));
  CHECK(c->evidence[1].at("at").as_string() == "2020-01-01T00:00:00.000Z");
  CHECK_FALSE(append_evidence(*t.db, "rc_missing", boost::json::object{{"source", "x"}}, t0));
  CHECK_THROWS(append_evidence(*t.db, ids[0], boost::json::object{{"note", "no source"}}, t0));
}

TEST_CASE("settlement import: resolve, confirm, contradict, mismatch, unmatched, malformed lines") {
  ReconDb t;
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

  ImportSummary s;
  {
    Transaction tx(*t.db);
    s = import_settlement(*t.db, "sim", csv, t0 + 100'000, t.rng);
    tx.commit();
  }
  CHECK(s.rows == 11);
  CHECK(s.resolved == 2);
  CHECK(s.confirmed == 1);
  CHECK(s.contradictions == 1);
  CHECK(s.mismatched == 2);
  CHECK(s.unmatched == 1);
  CHECK(s.finalized == 1);
  CHECK(s.changed_payments.size() == 6);  // a, b, d, e, f, g: not c, nor the unmatched key
  REQUIRE(s.errors.size() == 3);
  CHECK(s.errors[0].line == 8);
  CHECK(s.errors[0].message.find("expected 5 columns") != std::string::npos);
  CHECK(s.errors[1].line == 10);
  CHECK(s.errors[1].message.find("amount_minor") != std::string::npos);
  CHECK(s.errors[2].line == 11);
  CHECK(s.errors[2].message.find("status 'refunded'") != std::string::npos);
  CHECK(s.errors[2].message.find("currency 'eur'") != std::string::npos);

  auto pa = find_payment_by_id(*t.db, a.id);
  CHECK(pa->state == PaymentState::succeeded);
  CHECK(pa->vendor_reference == "ch_a");
  auto ca = find_case(*t.db, pa->reconciliation->case_id);
  CHECK(ca->status == CaseStatus::resolved);
  CHECK(ca->resolved_by == "settlement-import");
  CHECK(ca->note == "settlement file");
  REQUIRE(ca->evidence.size() == 1);
  CHECK(ca->evidence[0].at("line").as_int64() == 2);
  CHECK(ca->evidence[0].at("source").as_string() == "settlement-import");
  CHECK(t.events(a, "payment.succeeded") == 1);

  CHECK(find_payment_by_id(*t.db, b.id)->state == PaymentState::failed_final);
  CHECK(t.events(b, "payment.failed") == 1);

  CHECK(find_payment_by_id(*t.db, c.id)->state == PaymentState::succeeded);
  CHECK_FALSE(find_payment_by_id(*t.db, c.id)->reconciliation);

  // A contradiction changes no terminal state: it opens late_contradiction with the row.
  auto pd = find_payment_by_id(*t.db, d.id);
  CHECK(pd->state == PaymentState::succeeded);
  auto cd = find_open_case(*t.db, d.id);
  REQUIRE(cd);
  CHECK(cd->reason == "late_contradiction");
  REQUIRE(cd->evidence.size() == 1);
  CHECK(cd->evidence[0].at("finding").as_string() == "contradiction");
  CHECK(t.events(d) == d_events + 1);
  CHECK(t.events(d, "payment.escalated") == 1);

  auto ce = find_open_case(*t.db, e.id);
  REQUIRE(ce);
  CHECK(ce->reason == "retry_budget_exhausted");
  REQUIRE(ce->evidence.size() == 1);
  CHECK(ce->evidence[0].at("amount_minor").as_int64() == 999);
  CHECK(find_payment_by_id(*t.db, e.id)->state == PaymentState::unknown);

  auto pf = find_payment_by_id(*t.db, f.id);
  CHECK(pf->state == PaymentState::succeeded);
  CHECK(pf->vendor_reference == "ch_f, settled");
  CHECK(t.events(f, "payment.succeeded") == 1);

  auto cg = find_open_case(*t.db, g.id);
  REQUIRE(cg);
  CHECK(cg->reason == "callback_mismatch");
  CHECK(cg->evidence[0].at("currency").as_string() == "USD");
  CHECK(find_payment_by_id(*t.db, g.id)->state == PaymentState::processing);
  CHECK(next_action(*t.db, g.id) == "none");  // automatic work stops

  // A row no payment matches is named in the answer and held by an orphan case, as an
  // unknown-reference callback is.
  REQUIRE(s.unmatched_references.size() == 1);
  CHECK(s.unmatched_references[0] == "ck_NOSUCHKEY0000000000000000");
  auto orphans = list_cases(*t.db, CaseStatus::open, 50, std::nullopt);
  auto orphan = std::find_if(orphans.cases.begin(), orphans.cases.end(),
                             [](const ReconciliationCase& rc) { return !rc.payment_id; });
  REQUIRE(orphan != orphans.cases.end());
  CHECK(orphan->reason == "callback_mismatch");
  CHECK(orphan->provider == "sim");
  CHECK(orphan->reference == "ck_NOSUCHKEY0000000000000000");
  REQUIRE(orphan->evidence.size() == 1);
  CHECK(orphan->evidence[0].at("finding").as_string() == "unmatched");
  CHECK(orphan->evidence[0].at("line").as_int64() == 7);
  CHECK(orphan->evidence[0].at("vendor_reference").as_string() == "ch_x");

  SUBCASE("importing the same file again changes no state") {
    std::int64_t before = 0;
    for (const auto* p : {&a, &b, &c, &d, &e, &f, &g}) before += t.events(*p);
    Transaction tx(*t.db);
    auto again = import_settlement(*t.db, "sim", csv, t0 + 200'000, t.rng);
    tx.commit();
    CHECK(again.resolved == 0);
    CHECK(again.confirmed == 4);       // a, b, c, f
    CHECK(again.contradictions == 1);  // d: the row joins its open case, SUCCEEDED stands
    CHECK(again.mismatched == 2);
    CHECK(again.finalized == 0);
    CHECK(find_payment_by_id(*t.db, d.id)->state == PaymentState::succeeded);
    CHECK(find_open_case(*t.db, d.id)->evidence.size() == 2);
    // The unmatched row joins its orphan case: one case, two pieces of evidence.
    CHECK(again.unmatched_references == s.unmatched_references);
    int orphan_cases = 0;
    for (const auto& rc : list_cases(*t.db, CaseStatus::open, 50, std::nullopt).cases)
      if (!rc.payment_id) {
        ++orphan_cases;
        CHECK(rc.evidence.size() == 2);
      }
    CHECK(orphan_cases == 1);
    std::int64_t after = 0;
    for (const auto* p : {&a, &b, &c, &d, &e, &f, &g}) after += t.events(*p);
    CHECK(after == before);
  }
}

TEST_CASE("settlement import: another provider's keys are unmatched; a bad header imports nothing") {
  ReconDb t;
  Payment p = t.with_case(PaymentState::unknown);
  const std::string row = p.client_key + ",succeeded,1000,EUR,ch_1\n";
  Transaction tx(*t.db);
  auto other = import_settlement(*t.db, "other", std::string(settlement_header) + "\n" + row, t0, t.rng);
  CHECK(other.unmatched == 1);
  auto bad = import_settlement(*t.db, "sim", "ref,status,amount,currency,vendor_reference\n" + row, t0, t.rng);
  CHECK(bad.rows == 0);
  REQUIRE(bad.errors.size() == 1);
  CHECK(bad.errors[0].line == 1);
  CHECK(bad.errors[0].message.find("expected the header") != std::string::npos);
  CHECK(import_settlement(*t.db, "sim", "", t0, t.rng).errors.size() == 1);
  tx.commit();
  CHECK(find_open_case(*t.db, p.id));
  CHECK(find_payment_by_id(*t.db, p.id)->state == PaymentState::unknown);
}

TEST_CASE("a case with no payment: provider and reference, one open per reference, closed by an operator") {
  ReconDb t;
  Payment p = t.with_case(PaymentState::unknown);  // an ordinary case beside it
  const auto outbox_before = [&] {
    auto st = t.db->prepare("SELECT COUNT(*) FROM outbox");
    st.step();
    return st.col_int(0);
  };
  const auto events_before = outbox_before();

  std::string case_id;
  {
    Transaction tx(*t.db);
    case_id = hold_unknown_reference(*t.db, "sim", "ck_UNKNOWN", boost::json::object{{"source", "callback"}, {"n", 1}},
                                     t0 + 1'000, t.rng);
    // The same reference again joins the open case; another provider's is its own case.
    CHECK(hold_unknown_reference(*t.db, "sim", "ck_UNKNOWN", boost::json::object{{"source", "callback"}, {"n", 2}},
                                 t0 + 2'000, t.rng) == case_id);
    CHECK(hold_unknown_reference(*t.db, "other", "ck_UNKNOWN", boost::json::object{{"source", "callback"}},
                                 t0 + 2'000, t.rng) != case_id);
    tx.commit();
  }
  auto c = find_case(*t.db, case_id);
  REQUIRE(c);
  CHECK_FALSE(c->payment_id);
  CHECK_FALSE(c->tenant_id);
  CHECK_FALSE(c->operation_id);
  CHECK(c->provider == "sim");
  CHECK(c->reference == "ck_UNKNOWN");
  CHECK(c->reason == "callback_mismatch");
  CHECK(c->opened_at == t0 + 1'000);
  REQUIRE(c->evidence.size() == 2);
  CHECK(c->evidence[1].at("n").as_int64() == 2);

  // Listed beside cases about payments.
  auto open = list_cases(*t.db, CaseStatus::open, 10, std::nullopt);
  CHECK(open.cases.size() == 3);
  CHECK(find_open_case(*t.db, p.id)->provider == "sim");

  // retry: nothing to retry.
  auto retry = t.resolve(case_id, ResolutionOutcome::retry, t0 + 3'000);
  CHECK(refusal(retry) == ResolveRefusal::Code::retry_not_allowed);
  CHECK(std::get<ResolveRefusal>(retry).detail.find("no payment to retry") != std::string::npos);
  CHECK(find_case(*t.db, case_id)->status == CaseStatus::open);

  const auto& out = resolved(t.resolve(case_id, ResolutionOutcome::failed_final, t0 + 4'000, "ch_x"));
  CHECK_FALSE(out.payment);
  CHECK_FALSE(out.event);
  CHECK(out.resolved_case.status == CaseStatus::resolved);
  CHECK(out.resolved_case.outcome == "failed_final");
  CHECK(out.resolved_case.note == "checked in the vendor dashboard");
  CHECK(out.resolved_case.resolved_by == "alice");
  CHECK(out.resolved_case.vendor_reference == "ch_x");
  CHECK(out.resolved_case.evidence.size() == 3);  // the operator's evidence too
  CHECK(outbox_before() == events_before);
  CHECK(refusal(t.resolve(case_id, ResolutionOutcome::succeeded, t0 + 5'000)) == ResolveRefusal::Code::case_not_open);

  // Once it is closed, the reference can open a new case.
  Transaction tx(*t.db);
  CHECK(hold_unknown_reference(*t.db, "sim", "ck_UNKNOWN", boost::json::object{{"source", "callback"}}, t0 + 6'000,
                               t.rng) != case_id);
  tx.commit();
}

TEST_CASE("hold_with_evidence: a payment's open case gets the evidence, otherwise the escalation opens one") {
  ReconDb t;
  Payment p = t.intake();
  const auto events_before = t.events(p);
  Held first, second;
  {
    Transaction tx(*t.db);
    first = hold_with_evidence(*t.db, p, mismatch_escalation(p.state), boost::json::object{{"source", "x"}},
                               t0 + 1'000, t.rng);
    Payment now = *find_payment_by_id(*t.db, p.id);
    second = hold_with_evidence(*t.db, now, mismatch_escalation(now.state), boost::json::object{{"source", "y"}},
                                t0 + 2'000, t.rng);
    tx.commit();
  }
  CHECK(first.event == EventType::escalated);
  CHECK_FALSE(second.event);
  CHECK(first.case_id == second.case_id);
  CHECK(t.events(p) == events_before + 1);
  CHECK(find_case(*t.db, first.case_id)->evidence.size() == 2);
  CHECK(next_action(*t.db, p.id) == "none");

  const Transition terminal = mismatch_escalation(PaymentState::succeeded);
  CHECK(terminal.from == PaymentState::succeeded);
  CHECK(terminal.to == PaymentState::succeeded);
  CHECK(terminal.event == EventType::escalated);
  CHECK(terminal.open_case == CaseReason::callback_mismatch);
}

TEST_CASE("case statuses and resolution outcomes: every value has a name that parses back") {
  test::check_names({CaseStatus::open, CaseStatus::resolved}, parse_case_status);
  test::check_names({ResolutionOutcome::succeeded, ResolutionOutcome::failed_final,
                     ResolutionOutcome::retry},
                    parse_resolution_outcome);
  CHECK_FALSE(parse_resolution_outcome("SUCCEEDED").has_value());
}
