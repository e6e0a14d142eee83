// store/reconciliation on SQLite alone: append_evidence by case id, and the names of case
// statuses and resolution outcomes. Resolutions, listing, cases with no payment and the
// settlement import are tested on both drivers (tests/store/shared/reconciliation_test.cpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "store/intake.h"
#include "store/payments.h"
#include "store/transitions.h"
#include "store/cases.h"
#include "store/resolution.h"
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
    return test::stored_payment(*db, p.id);
  }

  std::string open_case_id(const Payment& p) {
    auto c = find_open_case(*db, p.id);
    REQUIRE(c);
    return c->id;
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

}  // namespace

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

TEST_CASE("case statuses and resolution outcomes: every value has a name that parses back") {
  test::check_names({CaseStatus::open, CaseStatus::resolved}, parse_case_status);
  test::check_names({ResolutionOutcome::succeeded, ResolutionOutcome::failed_final,
                     ResolutionOutcome::retry},
                    parse_resolution_outcome);
  CHECK_FALSE(parse_resolution_outcome("SUCCEEDED").has_value());
}
