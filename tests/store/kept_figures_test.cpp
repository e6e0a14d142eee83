// The figures the schema keeps as payments change (schema 005): exposure per provider and
// currency, payments per state, and the due-work index the claims read.
#include <doctest/doctest.h>

#include <tuple>
#include <string>
#include <vector>

#include "store/payments.h"
#include "store/leases.h"
#include "store/transitions.h"
#include "store/exposure.h"
#include "store/intake.h"
#include "store/sqlite.h"
#include "store/status.h"
#include "support/store_fixture.h"

using namespace payorch;
using namespace payorch::store;

namespace {

Payment intake(Db& db, const std::string& op, const std::string& provider, const std::string& currency,
               std::int64_t amount, UnixMillis now, Random& rng) {
  IntakeRequest r = test::intake_request(op, amount, currency);
  r.provider = provider;  // routed, not named in the intent: the digest stays the same
  return test::created_payment(db, r, now, rng);
}

std::vector<ExposureRow> kept(Db& db) { return exposure(db); }

}  // namespace

TEST_CASE("kept exposure follows every change in its transaction, and always equals a recount") {
  test::TempDatabase t{"kept", 1};
  Db& db = *t.db;
  SeededRandom rng(5);
  Payment a = intake(db, "a", "sim", "EUR", 100, 1'000, rng);
  Payment b = intake(db, "b", "sim", "EUR", 250, 1'000, rng);
  Payment c = intake(db, "c", "sim", "USD", 40, 1'000, rng);
  CHECK(kept(db).empty());  // PROCESSING, nothing sent: no exposure

  // A submit marked started counts at once (the claim's own later reads see it).
  auto la = claim_lease(db, a.id, "w", 2'000, Millis(30'000));
  REQUIRE(la);
  REQUIRE(record_call_started(db, a.id, la->fence, true, 2'000));
  CHECK(kept(db) == std::vector<ExposureRow>{{"sim", "EUR", 1, 100}});
  CHECK(exposure_of(db, "sim", "EUR").count == 1);
  CHECK(exposure_of(db, "sim", "EUR").amount_minor == 100);
  CHECK(exposure_of(db, "sim", "USD").amount_minor == 0);

  // The submit's answer is ambiguous: still exposed (now UNKNOWN), counted once.
  {
    TransitionUpdate u;
    u.next_attempt_at = 3'000;
    u.last_submit_ended_at = 3'000;
    REQUIRE(apply_transition(db, a.id, la->fence, test::legal_transition(PaymentState::processing, Trigger::submit_ambiguous), u,
                             3'000, rng) == CasResult::applied);
  }
  CHECK(kept(db) == std::vector<ExposureRow>{{"sim", "EUR", 1, 100}});

  // A query (not a submit) does not add exposure; a second payment's submit does.
  auto lb = claim_lease(db, b.id, "w", 3'000, Millis(30'000));
  REQUIRE(lb);
  REQUIRE(record_call_started(db, b.id, lb->fence, true, 3'000));
  auto lc = claim_lease(db, c.id, "w", 3'000, Millis(30'000));
  REQUIRE(lc);
  REQUIRE(record_call_started(db, c.id, lc->fence, false, 3'000));
  CHECK(kept(db) == std::vector<ExposureRow>{{"sim", "EUR", 2, 350}});
  CHECK(exposure_of(db, "sim", "USD").count == 2);  // the count is per provider

  // A rolled-back change rolls its figures back with it.
  {
    Transaction tx(db);
    TransitionUpdate u;
    u.next_attempt_at = 4'000;
    u.last_submit_ended_at = 4'000;
    REQUIRE(apply_transition(db, b.id, lb->fence, test::legal_transition(PaymentState::processing, Trigger::submit_succeeded), u,
                             4'000, rng) == CasResult::applied);
    CHECK(kept(db) == std::vector<ExposureRow>{{"sim", "EUR", 1, 100}});
  }  // no commit
  CHECK(kept(db) == std::vector<ExposureRow>{{"sim", "EUR", 2, 350}});

  // Terminal answers leave the exposure; a row with nothing exposed is not reported.
  for (auto [id, fence, trigger] : {std::tuple{a.id, la->fence, Trigger::recovery_succeeded},
                                    std::tuple{b.id, lb->fence, Trigger::submit_declined}}) {
    const PaymentState from = id == a.id ? PaymentState::unknown : PaymentState::processing;
    TransitionUpdate u;
    u.next_attempt_at = 5'000;
    if (from == PaymentState::processing) u.last_submit_ended_at = 5'000;
    REQUIRE(apply_transition(db, id, fence, test::legal_transition(from, trigger), u, 5'000, rng) == CasResult::applied);
  }
  CHECK(kept(db).empty());
  CHECK(exposure_differences(db).empty());

  // Payments per state are kept too.
  const StatusCounts s = status_counts(db);
  CHECK(s.payments_by_state.at("PROCESSING") == 1);
  CHECK(s.payments_by_state.at("SUCCEEDED") == 1);
  CHECK(s.payments_by_state.at("FAILED_FINAL") == 1);
  CHECK(s.payments_by_state.at("UNKNOWN") == 0);
}

TEST_CASE("check-exposure's comparison names any difference between the kept figures and the rows") {
  test::TempDatabase t{"kept", 1};
  Db& db = *t.db;
  SeededRandom rng(6);
  Payment a = intake(db, "a", "sim", "EUR", 100, 1'000, rng);
  auto la = claim_lease(db, a.id, "w", 2'000, Millis(30'000));
  REQUIRE(la);
  REQUIRE(record_call_started(db, a.id, la->fence, true, 2'000));
  CHECK(exposure_differences(db).empty());
  // Tampering with the kept table (what a bug in a trigger would look like) is reported.
  db.exec("UPDATE exposure SET count = 2, amount_minor = 180");
  const auto diff = exposure_differences(db);
  REQUIRE(diff.size() == 1);
  CHECK(diff[0] == "sim EUR: kept 2 payment(s), 180 minor units; recounted 1 payment(s), 100 minor units");
  db.exec("DELETE FROM exposure");
  CHECK(exposure_differences(db).size() == 1);
}

TEST_CASE("claims read each provider's due work only: leased payments are not due until their lease lapses") {
  test::TempDatabase t{"kept", 1};
  Db& db = *t.db;
  SeededRandom rng(7);
  for (int i = 0; i < 5; ++i) intake(db, "s" + std::to_string(i), "sim", "EUR", 10, 1'000 + i, rng);
  for (int i = 0; i < 3; ++i) intake(db, "o" + std::to_string(i), "other", "EUR", 10, 1'000 + i, rng);

  // A provider left out of the quotas (an open breaker) is not touched at all.
  auto first = claim_due(db, "w", 2'000, Millis(10'000), {{"sim", 2}}, 10);
  CHECK(first.size() == 2);
  for (const auto& l : first) CHECK(test::stored_payment(db, l.payment_id).provider == "sim");
  // The lease moved next_attempt_at to its expiry: the index no longer shows them as due.
  for (const auto& l : first) CHECK(test::stored_payment(db, l.payment_id).next_attempt_at == 12'000);

  // Oldest due first across providers, bounded by the round's free slots: o0 (1000), o1 (1001),
  // then s2 and o2 (1002), ahead of s3 and s4.
  auto second = claim_due(db, "w", 2'000, Millis(10'000), {{"sim", 10}, {"other", 10}}, 4);
  REQUIRE(second.size() == 4);
  int sim = 0;
  for (const auto& l : second) sim += test::stored_payment(db, l.payment_id).provider == "sim" ? 1 : 0;
  CHECK(sim == 1);

  // The rest, and then nothing until the leases lapse: all six taken at 2'000 come back at once.
  CHECK(claim_due(db, "w", 11'999, Millis(10'000), {{"sim", 10}, {"other", 10}}, 10).size() == 2);
  CHECK(claim_due(db, "w", 11'999, Millis(10'000), {{"sim", 10}, {"other", 10}}, 10).empty());
  CHECK(claim_due(db, "w2", 12'000, Millis(10'000), {{"sim", 10}, {"other", 10}}, 10).size() == 6);
}
