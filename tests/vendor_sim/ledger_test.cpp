#include "vendor_sim/ledger.h"

#include <doctest/doctest.h>

#include <boost/json/parse.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "support/process.h"
#include "support/sqlite_probe.h"

namespace {

using namespace payorch;
using namespace payorch::vendor_sim;
using namespace std::chrono_literals;

constexpr UnixMillis t0 = 1'700'000'000'000;

// A ledger in a fresh temp dir, removed afterwards.
struct TempLedger {
  TempLedger() { ledger.emplace(path(), rng); }
  ~TempLedger() { ledger.reset(); }  // closed before the directory goes
  std::string path() const { return dir.path() + "/sim.db"; }
  std::int64_t count(const std::string& sql, const std::vector<std::string>& params = {}) const {
    return test::SqliteProbe(path()).count(sql, params);
  }

  test::TempDir dir{"payorch-sim-ledger"};
  SeededRandom rng{42};
  std::optional<Ledger> ledger;
};

ChargeParams params(const std::string& key, const std::string& source = "tok_ok",
                    std::int64_t amount = 1000) {
  return ChargeParams{key, amount, "EUR", "merchant-1", source};
}

ChargeTiming at(UnixMillis now) { return ChargeTiming{now, 24h, 2s}; }

}  // namespace

TEST_CASE("sim ledger: create, replay, mismatch") {
  TempLedger t;
  const auto first = t.ledger->execute(params("ck_a"), at(t0), 1);
  CHECK(first.kind == ExecuteKind::created);
  CHECK(first.charge.id.starts_with("ch_"));
  CHECK(first.charge.key_expires_at == t0 + 24 * 3'600'000);

  const auto again = t.ledger->execute(params("ck_a"), at(t0 + 1000), 1);
  CHECK(again.kind == ExecuteKind::replayed);
  CHECK(again.charge.id == first.charge.id);

  const auto other = t.ledger->execute(params("ck_a", "tok_ok", 999), at(t0 + 2000), 1);
  CHECK(other.kind == ExecuteKind::mismatch);
  CHECK(other.charge.params.amount_minor == 1000);

  CHECK(t.count("SELECT COUNT(*) FROM charges WHERE reference = ?", {"ck_a"}) == 1);
  CHECK(t.count("SELECT COUNT(*) FROM callbacks") == 1);  // one per status reached, not per call
}

TEST_CASE("sim ledger: after key retention the same key is a new charge") {
  TempLedger t;
  const auto first = t.ledger->execute(params("ck_b"), at(t0), std::nullopt);
  const UnixMillis later = t0 + 24 * 3'600'000;  // exactly at expiry: forgotten
  const auto second = t.ledger->execute(params("ck_b"), at(later), std::nullopt);
  CHECK(second.kind == ExecuteKind::created);
  CHECK(second.charge.id != first.charge.id);
  CHECK(t.ledger->find_by_reference("ck_b").size() == 2);
  // The new charge holds the key now: a retry replays it.
  const auto third = t.ledger->execute(params("ck_b"), at(later + 1), std::nullopt);
  CHECK(third.kind == ExecuteKind::replayed);
  CHECK(third.charge.id == second.charge.id);
  CHECK(t.count("SELECT COUNT(*) FROM callbacks") == 0);  // callbacks off
}

TEST_CASE("sim ledger: pending settles at its time, with a callback") {
  TempLedger t;
  const auto c = t.ledger->execute(params("ck_p", "tok_pending"), at(t0), 2);
  CHECK(c.charge.status == ChargeStatus::pending);
  CHECK(t.ledger->settle_due(t0 + 1999, 2).empty());
  const auto settled = t.ledger->settle_due(t0 + 2000, 2);
  REQUIRE(settled.size() == 1);
  CHECK(settled[0].status == ChargeStatus::succeeded);
  CHECK(t.ledger->find_by_id(c.charge.id)->status == ChargeStatus::succeeded);
  CHECK(t.ledger->settle_due(t0 + 5000, 2).empty());
  CHECK(t.count("SELECT COUNT(*) FROM callbacks WHERE type = 'charge.pending'") == 1);
  CHECK(t.count("SELECT COUNT(*) FROM callbacks WHERE type = 'charge.succeeded'") == 1);
}

TEST_CASE("sim ledger: the callback queue: due, acked per copy, failed, expired") {
  TempLedger t;
  t.ledger->execute(params("ck_c"), at(t0), 2);
  auto due = t.ledger->due_callbacks(t0, 10, {});
  REQUIRE(due.size() == 1);
  const std::string id = due[0].event_id;
  const auto body = boost::json::parse(due[0].body).as_object();
  CHECK(body.at("id").as_string() == id);
  CHECK(body.at("created").as_int64() == t0 / 1000);
  CHECK(t.ledger->due_callbacks(t0, 10, {id}).empty());  // in flight: skipped

  t.ledger->callback_failed(id, t0 + 1000, "HTTP 500");
  CHECK(t.ledger->due_callbacks(t0 + 999, 10, {}).empty());
  CHECK(t.ledger->due_callbacks(t0 + 1000, 10, {}).size() == 1);
  t.ledger->callback_acked(id, t0 + 1000);
  CHECK(t.ledger->due_callbacks(t0 + 1000, 10, {}).size() == 1);  // the second copy is owed
  t.ledger->callback_acked(id, t0 + 1001);
  CHECK(t.ledger->due_callbacks(t0 + 99'999, 10, {}).empty());
  CHECK(t.count("SELECT COUNT(*) FROM callbacks WHERE state = 'delivered' AND attempts = 3") == 1);

  t.ledger->execute(params("ck_d"), at(t0), 1);
  due = t.ledger->due_callbacks(t0, 10, {});
  REQUIRE(due.size() == 1);
  t.ledger->callback_failed(due[0].event_id, std::nullopt, "connect: refused");
  CHECK(t.count("SELECT COUNT(*) FROM callbacks WHERE state = 'expired'") == 1);
}

TEST_CASE("sim ledger: reopening keeps everything") {
  TempLedger t;
  const auto c = t.ledger->execute(params("ck_r"), at(t0), 1);
  t.ledger.emplace(t.path(), t.rng);
  CHECK(t.ledger->find_by_id(c.charge.id));
  CHECK(t.ledger->execute(params("ck_r"), at(t0 + 1), 1).kind == ExecuteKind::replayed);
  CHECK(t.ledger->due_callbacks(t0, 10, {}).size() == 1);
}

namespace {

RefundParams refund(const std::string& key, const std::string& charge_id, std::int64_t amount,
                    const std::string& currency = "EUR") {
  return RefundParams{key, charge_id, amount, currency};
}

}  // namespace

TEST_CASE("sim ledger: refund create, replay, mismatch, with one callback") {
  TempLedger t;
  const std::string ch = t.ledger->execute(params("ck_ch"), at(t0), 1).charge.id;
  const auto first = t.ledger->execute(refund("rk_a", ch, 400), at(t0 + 1), 1);
  CHECK(first.kind == ExecuteKind::created);
  CHECK(first.refund.id.starts_with("rf_"));
  CHECK(first.refund.status == ChargeStatus::succeeded);
  CHECK(first.refund.key_expires_at == t0 + 1 + 24 * 3'600'000);
  const auto again = t.ledger->execute(refund("rk_a", ch, 400), at(t0 + 2), 1);
  CHECK(again.kind == ExecuteKind::replayed);
  CHECK(again.refund.id == first.refund.id);
  CHECK(t.ledger->execute(refund("rk_a", ch, 401), at(t0 + 3), 1).kind == ExecuteKind::mismatch);
  CHECK(t.count("SELECT COUNT(*) FROM refunds WHERE reference = ?", {"rk_a"}) == 1);
  CHECK(t.count("SELECT COUNT(*) FROM callbacks WHERE type = 'refund.succeeded' AND refund_id = ? "
                "AND charge_id = ?",
                {first.refund.id, ch}) == 1);
  REQUIRE(t.ledger->find_refunds_by_reference("rk_a").size() == 1);
  CHECK(t.ledger->find_refunds_by_reference("rk_a")[0].id == first.refund.id);
}

TEST_CASE("sim ledger: succeeded and pending refunds count against the charge, declined ones do not") {
  TempLedger t;
  const std::string ch = t.ledger->execute(params("ck_m", "tok_ok", 1000), at(t0), 1).charge.id;
  CHECK(t.ledger->execute(refund("rk_1", ch, 600), at(t0), 1).refund.status == ChargeStatus::succeeded);
  const auto over = t.ledger->execute(refund("rk_2", ch, 401), at(t0), 1);
  CHECK(over.kind == ExecuteKind::created);
  CHECK(over.refund.status == ChargeStatus::declined);
  CHECK(over.refund.decline_code == "exceeds_charge");
  // The declined 401 freed nothing and took nothing: exactly the remaining 400 is accepted.
  CHECK(t.ledger->execute(refund("rk_3", ch, 400), at(t0), 1).refund.status == ChargeStatus::succeeded);
  CHECK(t.ledger->execute(refund("rk_4", ch, 1), at(t0), 1).refund.decline_code == "exceeds_charge");

  // A tok_pending charge: its refunds are pending, and a pending one already counts.
  const auto pc = t.ledger->execute(params("ck_p2", "tok_pending", 500), at(t0), 1).charge;
  const auto early = t.ledger->execute(refund("rk_5", pc.id, 100), at(t0), 1);
  CHECK(early.refund.status == ChargeStatus::declined);  // the charge has not succeeded yet
  CHECK(early.refund.decline_code == "charge_not_refundable");
  REQUIRE(t.ledger->settle_due(t0 + 2000, 1).size() == 1);
  const auto pending = t.ledger->execute(refund("rk_6", pc.id, 300), at(t0 + 2000), 1);
  CHECK(pending.refund.status == ChargeStatus::pending);
  CHECK(t.ledger->execute(refund("rk_7", pc.id, 201), at(t0 + 2000), 1).refund.decline_code ==
        "exceeds_charge");
  CHECK(t.ledger->settle_due_refunds(t0 + 3999, 1).empty());
  const auto settled = t.ledger->settle_due_refunds(t0 + 4000, 1);
  REQUIRE(settled.size() == 1);
  CHECK(settled[0].id == pending.refund.id);
  CHECK(settled[0].status == ChargeStatus::succeeded);
  CHECK(t.ledger->execute(refund("rk_6", pc.id, 300), at(t0 + 4001), 1).refund.status ==
        ChargeStatus::succeeded);  // a replay shows the ledger as it is now
  CHECK(t.ledger->execute(refund("rk_8", pc.id, 200), at(t0 + 4001), 1).refund.status == ChargeStatus::pending);
  CHECK(t.count("SELECT COUNT(*) FROM callbacks WHERE type = 'refund.pending'") == 2);
  CHECK(t.count("SELECT COUNT(*) FROM callbacks WHERE type = 'refund.succeeded' AND refund_id = ?",
                {pending.refund.id}) == 1);
}

TEST_CASE("sim ledger: a refund of an unknown charge or in another currency stores nothing") {
  TempLedger t;
  const std::string ch = t.ledger->execute(params("ck_u"), at(t0), 1).charge.id;
  CHECK(t.ledger->execute(refund("rk_u", "ch_nope", 100), at(t0), 1).kind == ExecuteKind::charge_not_found);
  CHECK(t.ledger->execute(refund("rk_u", ch, 100, "USD"), at(t0), 1).kind == ExecuteKind::currency_mismatch);
  CHECK(t.count("SELECT COUNT(*) FROM refunds") == 0);
  CHECK(t.count("SELECT COUNT(*) FROM callbacks WHERE refund_id IS NOT NULL") == 0);
  // The key is still free.
  CHECK(t.ledger->execute(refund("rk_u", ch, 100), at(t0), 1).kind == ExecuteKind::created);
}

TEST_CASE("sim ledger: after key retention the same refund key is a new refund, still within the charge") {
  TempLedger t;
  const std::string ch = t.ledger->execute(params("ck_rr", "tok_ok", 1000), at(t0), 1).charge.id;
  const auto first = t.ledger->execute(refund("rk_rr", ch, 700), at(t0), std::nullopt);
  const UnixMillis later = t0 + 24 * 3'600'000;
  const auto second = t.ledger->execute(refund("rk_rr", ch, 700), at(later), std::nullopt);
  CHECK(second.kind == ExecuteKind::created);
  CHECK(second.refund.id != first.refund.id);
  CHECK(second.refund.decline_code == "exceeds_charge");  // a late retry cannot refund twice past the charge
  CHECK(t.ledger->execute(refund("rk_rr", ch, 700), at(later + 1), std::nullopt).refund.id ==
        second.refund.id);
}

TEST_CASE("sim ledger: refunds survive reopening") {
  TempLedger t;
  const std::string ch = t.ledger->execute(params("ck_ro"), at(t0), 1).charge.id;
  const auto r = t.ledger->execute(refund("rk_ro", ch, 10), at(t0), 1);
  t.ledger.emplace(t.path(), t.rng);
  CHECK(t.ledger->find_refund_by_id(r.refund.id));
  CHECK(t.ledger->execute(refund("rk_ro", ch, 10), at(t0 + 1), 1).kind == ExecuteKind::replayed);
  CHECK(t.ledger->all_refunds().size() == 1);
}

TEST_CASE("sim ledger: a version 1 file gains refunds and keeps its charges") {
  TempLedger t;
  t.ledger.reset();
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(t.path() + suffix);
  std::ofstream(t.path()).close();  // an empty file is an empty database
  {
    // The version 1 schema as released (charges and callbacks, no refunds), one statement at a time.
    test::SqliteProbe v1(t.path(), test::SqliteProbe::Mode::for_writing);
    for (const char* sql : {
             "CREATE TABLE charges (id TEXT PRIMARY KEY, idempotency_key TEXT NOT NULL, reference TEXT NOT NULL, "
             "amount_minor INTEGER NOT NULL, currency TEXT NOT NULL, payee TEXT NOT NULL, source TEXT NOT NULL, "
             "status TEXT NOT NULL CHECK (status IN ('succeeded', 'declined', 'pending')), decline_code TEXT, "
             "request_hash TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, "
             "key_expires_at INTEGER NOT NULL, key_forgotten INTEGER NOT NULL DEFAULT 0, settles_at INTEGER)",
             "CREATE UNIQUE INDEX charges_retained_key ON charges(idempotency_key) WHERE key_forgotten = 0",
             "CREATE INDEX charges_reference ON charges(reference)",
             "CREATE INDEX charges_settling ON charges(settles_at) WHERE status = 'pending'",
             "CREATE TABLE callbacks (event_id TEXT PRIMARY KEY, charge_id TEXT NOT NULL REFERENCES charges(id), "
             "type TEXT NOT NULL, body TEXT NOT NULL, created_at INTEGER NOT NULL, next_attempt_at INTEGER NOT NULL, "
             "attempts INTEGER NOT NULL DEFAULT 0, copies_left INTEGER NOT NULL, state TEXT NOT NULL CHECK (state IN "
             "('queued', 'delivered', 'expired')), last_error TEXT)",
             "CREATE INDEX callbacks_due ON callbacks(next_attempt_at) WHERE state = 'queued'",
             "INSERT INTO charges (id, idempotency_key, reference, amount_minor, currency, payee, source, status, "
             "request_hash, created_at, updated_at, key_expires_at) VALUES ('ch_v1', 'ck_v1', 'ck_v1', 500, 'EUR', "
             "'p', 'tok_ok', 'succeeded', 'h', 1, 1, 1)",
             "INSERT INTO callbacks (event_id, charge_id, type, body, created_at, next_attempt_at, copies_left, "
             "state) VALUES ('evt_v1', 'ch_v1', 'charge.succeeded', '{}', 1, 1, 0, 'delivered')",
             "PRAGMA user_version = 1"})
      v1.query(sql);
  }
  t.ledger.emplace(t.path(), t.rng);
  CHECK(t.count("PRAGMA user_version") == 2);
  CHECK(t.ledger->find_by_id("ch_v1"));
  const auto r = t.ledger->execute(refund("rk_v1", "ch_v1", 500), at(t0), 1);
  CHECK(r.refund.status == ChargeStatus::succeeded);
  CHECK(t.count("SELECT COUNT(*) FROM callbacks WHERE refund_id IS NULL") == 1);
  CHECK(t.count("SELECT COUNT(*) FROM callbacks WHERE refund_id = ?", {r.refund.id}) == 1);
}
