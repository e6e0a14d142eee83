// Intake and payment reads through store::Store and store::Tx, on each driver: one payment per
// business key decided inside the transaction, replays and conflicts as store/intake.h says,
// and the payment read back exactly as it was created.
#include <doctest/doctest.h>

#include <future>
#include <vector>

#include "core/digest.h"
#include "support/store_fixture.h"
#include "support/store_under_test.h"

namespace payorch::test {
namespace {

using store::IntakeOutcome;
using store::Tx;
using store::WriteStatus;

constexpr UnixMillis t0 = 1'700'000'000'000;

// Records `req` at `now` in a job of its own; the job must commit.
IntakeOutcome intake(StoreUnderTest& s, const store::IntakeRequest& req, UnixMillis now, Random& rng) {
  return s.committed([&](Tx& tx) { return tx.record_intake(req, now, rng); });
}

}  // namespace

TEST_CASE_TEMPLATE("shared store: an intake creates the payment and its payment.created event", D,
                   PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  SeededRandom rng(1);
  auto req = intake_request("op-1", 1234, "EUR");
  req.intent.description = "rent, March";
  req.intent.metadata = {{"order", "42"}, {"note", "é \"quoted\""}};
  req.request_digest = request_digest(req.intent);
  const IntakeOutcome out = intake(*s, req, t0, rng);
  CHECK(out.kind == IntakeOutcome::Kind::created);
  const Payment& p = out.payment;
  CHECK(p.state == PaymentState::processing);
  CHECK(p.next_action == NextAction::submit);
  CHECK(p.next_attempt_at == t0);
  CHECK(p.amount_minor == 1234);
  CHECK(p.fence == 0);
  CHECK(s->count_rows("payments") == 1);
  CHECK(s->count_rows("outbox") == 1);

  const auto by_id = s->read([&](Tx& tx) { return tx.find_payment_by_id(p.id); });
  REQUIRE(by_id.has_value());
  check_same_payment(*by_id, p);
  const auto by_operation = s->read([&](Tx& tx) {
    return tx.find_payment_by_operation("acme", req.intent.operation_type, "op-1");
  });
  REQUIRE(by_operation.has_value());
  check_same_payment(*by_operation, p);
  CHECK_FALSE(s->read([](Tx& tx) { return tx.find_payment_by_id("pay_missing"); }).has_value());
  CHECK_FALSE(s->read([&](Tx& tx) {
                 return tx.find_payment_by_operation("other", req.intent.operation_type, "op-1");
               }).has_value());
}

TEST_CASE_TEMPLATE("shared store: the same key and body is replayed, another body is a conflict", D,
                   PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  SeededRandom rng(2);
  const auto req = intake_request("op-1", 1000);
  const Payment created = intake(*s, req, t0, rng).payment;

  const IntakeOutcome replay = intake(*s, req, t0 + 5, rng);
  CHECK(replay.kind == IntakeOutcome::Kind::replayed);
  check_same_payment(replay.payment, created);
  CHECK(s->count_rows("idempotency_conflicts") == 0);

  const auto other_body = intake_request("op-1", 2000);
  const IntakeOutcome conflict = intake(*s, other_body, t0 + 9, rng);
  CHECK(conflict.kind == IntakeOutcome::Kind::conflict);
  check_same_payment(conflict.payment, created);
  CHECK(conflict.attempted_digest == other_body.request_digest);
  CHECK(s->count_rows("idempotency_conflicts") == 1);
  CHECK(s->count_rows("payments") == 1);
  CHECK(s->count_rows("outbox") == 1);
}

TEST_CASE_TEMPLATE("shared store: simultaneous intakes of one key create one payment", D,
                   PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  constexpr int requests = 8;
  std::vector<std::promise<IntakeOutcome::Kind>> kinds(requests);
  // A job may run more than once (after a conflict): the kind its committed run saw is answered
  // once, from `done`.
  std::vector<IntakeOutcome::Kind> seen(requests, IntakeOutcome::Kind::conflict);
  for (int i = 0; i < requests; ++i) {
    s->store().submit(
        [&, i](Tx& tx) {
          SeededRandom rng(100 + i);
          seen[i] = tx.record_intake(intake_request("op-same"), t0, rng).kind;
        },
        [&, i](WriteStatus st, const std::string& error) {
          CHECK_MESSAGE(st == WriteStatus::committed, error);
          kinds[i].set_value(seen[i]);
        });
  }
  int created = 0, replayed = 0;
  for (auto& k : kinds) {
    const auto kind = k.get_future().get();
    created += kind == IntakeOutcome::Kind::created;
    replayed += kind == IntakeOutcome::Kind::replayed;
  }
  CHECK(created == 1);
  CHECK(replayed == requests - 1);
  CHECK(s->count_rows("payments") == 1);
  CHECK(s->count_rows("outbox") == 1);
}

TEST_CASE_TEMPLATE("shared store: list_payments pages a tenant's payments newest first", D,
                   PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  SeededRandom rng(3);
  std::vector<std::string> ids;  // in creation order
  for (int i = 0; i < 5; ++i)
    ids.push_back(intake(*s, intake_request("op-" + std::to_string(i)), t0 + i, rng).payment.id);
  store::IntakeRequest other = intake_request("op-0");
  other.tenant_id = "globex";
  intake(*s, other, t0 + 10, rng);

  std::vector<std::string> seen;
  std::optional<std::string> cursor;
  int pages = 0;
  do {
    const auto page = s->read([&](Tx& tx) { return tx.list_payments("acme", std::nullopt, 2, cursor); });
    for (const auto& p : page.payments) {
      CHECK(p.tenant_id == "acme");
      seen.push_back(p.id);
    }
    CHECK(page.payments.size() <= 2);
    if (page.next_cursor) CHECK(*page.next_cursor == page.payments.back().id);
    cursor = page.next_cursor;
    ++pages;
  } while (cursor && pages < 10);
  CHECK(pages == 3);
  CHECK(seen == std::vector<std::string>(ids.rbegin(), ids.rend()));

  const auto exact = s->read([](Tx& tx) { return tx.list_payments("acme", std::nullopt, 5, std::nullopt); });
  CHECK(exact.payments.size() == 5);
  CHECK_FALSE(exact.next_cursor.has_value());  // nothing follows a full last page
  CHECK(s->read([](Tx& tx) {
           return tx.list_payments("acme", PaymentState::processing, 10, std::nullopt);
         }).payments.size() == 5);
  CHECK(s->read([](Tx& tx) {
           return tx.list_payments("acme", PaymentState::succeeded, 10, std::nullopt);
         }).payments.empty());
  CHECK(s->read([](Tx& tx) { return tx.list_payments("nobody", std::nullopt, 10, std::nullopt); })
            .payments.empty());
}

}  // namespace payorch::test
