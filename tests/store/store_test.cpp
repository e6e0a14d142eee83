#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <string>
#include <system_error>
#include <vector>

#include "store/database.h"
#include "store/intake.h"
#include "store/migrations.h"
#include "store/payments.h"
#include "store/leases.h"
#include "store/transitions.h"
#include "store/writer.h"
#include "support/enum_names.h"
#include "support/store_fixture.h"

using namespace payorch;
using namespace payorch::store;

namespace {

// A migrated file and no connection: each test opens its own.
struct TempDb : test::TempDatabase {
  TempDb() : TempDatabase("store", 1'000, file_only) {}
};

std::int64_t count(Db& db, const std::string& sql) {
  auto st = db.prepare(sql);
  st.step();
  return st.col_int(0);
}

using test::created_payment;

}  // namespace

TEST_CASE("migrations: applied once, recorded, and a newer database is refused") {
  TempDb t;
  Db db(t.path(), Db::Mode::read_write);
  const int latest = embedded_migrations().back().version;
  CHECK(schema_version(db) == latest);
  CHECK(migrate(db, embedded_migrations(), 2'000) == 0);  // idempotent
  CHECK(count(db, "SELECT COUNT(*) FROM schema_migrations") == static_cast<std::int64_t>(embedded_migrations().size()));
  {
    auto mode = db.prepare("PRAGMA journal_mode");
    mode.step();
    CHECK(mode.col_text(0) == "wal");
  }  // an unfinished statement would hold a read transaction and hide the next write

  db.exec("INSERT INTO schema_migrations VALUES (999, 'from_the_future', 0)");
  CHECK_THROWS_AS(migrate(db, embedded_migrations(), 3'000), SchemaTooNew);
  CHECK_THROWS_WITH_AS(prepare_database(t.path(), 3'000), doctest::Contains("999"), SchemaTooNew);
}

TEST_CASE("intake: created, replayed with the stored result, conflict audited and unchanged") {
  TempDb t;
  Db db(t.path(), Db::Mode::read_write);
  SeededRandom rng(7);

  Payment first = created_payment(db, "order-1", 10'000, rng);
  CHECK(first.state == PaymentState::processing);
  CHECK(first.client_key.starts_with("ck_"));
  CHECK(first.id.starts_with("pay_"));
  CHECK(count(db, "SELECT COUNT(*) FROM outbox WHERE type = 'payment.created'") == 1);

  {
    Transaction tx(db);
    auto again = record_intake(db, test::intake_request("order-1"), 20'000, rng);
    tx.commit();
    CHECK(again.kind == IntakeOutcome::Kind::replayed);
    CHECK(again.payment.id == first.id);
    CHECK(again.payment.client_key == first.client_key);  // never regenerated
    CHECK(again.payment.created_at == 10'000);
  }
  {
    Transaction tx(db);
    auto other = record_intake(db, test::intake_request("order-1", 2000), 30'000, rng);
    tx.commit();
    CHECK(other.kind == IntakeOutcome::Kind::conflict);
    CHECK(other.payment.amount_minor == 1000);
    CHECK(other.attempted_digest != first.request_digest);
  }
  CHECK(count(db, "SELECT COUNT(*) FROM payments") == 1);
  CHECK(count(db, "SELECT COUNT(*) FROM outbox") == 1);
  CHECK(count(db, "SELECT COUNT(*) FROM idempotency_conflicts WHERE operation_id = 'order-1'") == 1);
  auto stored = find_payment_by_operation(db, "acme", "payment", "order-1");
  REQUIRE(stored);
  CHECK(stored->amount_minor == 1000);
}

TEST_CASE("intake: the same operation_id in another tenant is another payment") {
  TempDb t;
  Db db(t.path(), Db::Mode::read_write);
  SeededRandom rng(8);
  created_payment(db, "shared-key", 1, rng);
  auto r = test::intake_request("shared-key");
  r.tenant_id = "globex";
  Transaction tx(db);
  CHECK(record_intake(db, r, 2, rng).kind == IntakeOutcome::Kind::created);
  tx.commit();
  CHECK(count(db, "SELECT COUNT(*) FROM payments") == 2);
}

TEST_CASE("the schema keeps the intent immutable and rows undeletable") {
  TempDb t;
  Db db(t.path(), Db::Mode::read_write);
  SeededRandom rng(9);
  Payment p = created_payment(db, "imm-1", 1, rng);
  for (const char* sql : {"UPDATE payments SET amount_minor = 5 WHERE id = ?",
                          "UPDATE payments SET client_key = 'ck_other' WHERE id = ?",
                          "UPDATE payments SET currency = 'USD' WHERE id = ?",
                          "UPDATE payments SET request_digest = 'x' WHERE id = ?",
                          "DELETE FROM payments WHERE id = ?"}) {
    CAPTURE(sql);
    auto st = db.prepare(sql);
    st.bind(1, p.id);
    CHECK_THROWS_AS(st.run(), SqliteError);
  }
  // Progress columns may change.
  auto st = db.prepare("UPDATE payments SET attempt_count = 1 WHERE id = ?");
  st.bind(1, p.id);
  CHECK_NOTHROW(st.run());
  // Amount bounds are enforced by the schema too.
  Payment q = p;
  q.id = "pay_01ARZ3NDEKTSV4RRFFQ69G5FAV";
  q.operation_id = "too-big";
  q.client_key = "ck_other";
  q.amount_minor = 9'007'199'254'740'992;
  CHECK_THROWS_AS(insert_payment(db, q), SqliteError);
}

TEST_CASE("lease claim: increments the fence, excludes others until expiry") {
  TempDb t;
  Db db(t.path(), Db::Mode::read_write);
  SeededRandom rng(10);
  Payment p = created_payment(db, "lease-1", 1'000, rng);

  auto a = claim_lease(db, p.id, "worker-a", 1'000, Millis(5'000));
  REQUIRE(a);
  CHECK(a->fence == 1);
  CHECK_FALSE(claim_lease(db, p.id, "worker-b", 2'000, Millis(5'000)));  // held by A
  auto b = claim_lease(db, p.id, "worker-b", 6'000, Millis(5'000));       // A's lease expired
  REQUIRE(b);
  CHECK(b->fence == 2);
  const std::vector<ClaimQuota> sim{{"sim", 10}};
  CHECK(claim_due(db, "worker-c", 7'000, Millis(5'000), sim, 10).empty());
  CHECK(claim_due(db, "worker-c", 11'000, Millis(5'000), sim, 10).size() == 1);
}

TEST_CASE("invariant 5: a stale lease holder cannot overwrite a newer decision") {
  TempDb t;
  Db db(t.path(), Db::Mode::read_write);
  SeededRandom rng(11);
  Payment p = created_payment(db, "stale-1", 1'000, rng);
  auto a = claim_lease(db, p.id, "worker-a", 1'000, Millis(1'000));
  auto b = claim_lease(db, p.id, "worker-b", 3'000, Millis(1'000));
  REQUIRE(a);
  REQUIRE(b);

  // B decides first: the vendor said succeeded.
  auto ok = transition(PaymentState::processing, Trigger::submit_succeeded);
  CHECK(apply_transition(db, p.id, b->fence, *ok, {}, 3'500, rng) == CasResult::applied);
  // A wakes up with an older answer: its write changes nothing.
  auto amb = transition(PaymentState::processing, Trigger::submit_ambiguous);
  CHECK(apply_transition(db, p.id, a->fence, *amb, {}, 3'600, rng) == CasResult::stale_fence);
  auto now = find_payment_by_id(db, p.id);
  CHECK(now->state == PaymentState::succeeded);
  CHECK(count(db, "SELECT COUNT(*) FROM outbox WHERE type = 'payment.succeeded'") == 1);
  CHECK(count(db, "SELECT COUNT(*) FROM outbox WHERE type = 'payment.unknown'") == 0);
}

TEST_CASE("CAS: zero rows is classified, never swallowed") {
  TempDb t;
  Db db(t.path(), Db::Mode::read_write);
  SeededRandom rng(12);
  Payment p = created_payment(db, "cas-1", 1'000, rng);
  auto ok = test::legal_transition(PaymentState::processing, Trigger::submit_succeeded);
  CHECK(apply_transition(db, p.id, std::nullopt, ok, {}, 2'000, rng) == CasResult::applied);
  // Replaying the same decision: already there.
  CHECK(apply_transition(db, p.id, std::nullopt, ok, {}, 2'100, rng) == CasResult::already_in_state);
  // A decision made for a state the payment is no longer in: illegal.
  auto amb = test::legal_transition(PaymentState::processing, Trigger::submit_ambiguous);
  CHECK(apply_transition(db, p.id, std::nullopt, amb, {}, 2'200, rng) == CasResult::illegal);
  CHECK(apply_transition(db, "pay_missing", std::nullopt, ok, {}, 2'300, rng) == CasResult::not_found);
  CHECK(test::stored_payment(db, p.id).state == PaymentState::succeeded);
}

TEST_CASE("invariant 6: each applied state change writes exactly one outbox event with the new view") {
  TempDb t;
  Db db(t.path(), Db::Mode::read_write);
  SeededRandom rng(13);
  Payment p = created_payment(db, "evt-1", 1'000, rng);
  struct Step {
    PaymentState from;
    Trigger trigger;
    const char* event;  // nullptr: no state change, no event
  };
  const Step steps[] = {
      {PaymentState::processing, Trigger::submit_pending, nullptr},
      {PaymentState::processing, Trigger::submit_ambiguous, "payment.unknown"},
      {PaymentState::unknown, Trigger::recovery_inconclusive, nullptr},
      {PaymentState::unknown, Trigger::recovery_pending, "payment.processing"},
      {PaymentState::processing, Trigger::callback_succeeded, "payment.succeeded"},
      {PaymentState::succeeded, Trigger::callback_declined, "payment.escalated"},
      {PaymentState::succeeded, Trigger::resolve_failed_final, "payment.corrected"},
  };
  std::int64_t events = 1;  // payment.created
  UnixMillis now = 2'000;
  for (const auto& s : steps) {
    CAPTURE(to_string(s.trigger));
    auto tr = transition(s.from, s.trigger);
    REQUIRE(tr);
    Transaction tx(db);
    CHECK(apply_transition(db, p.id, std::nullopt, *tr, {}, now += 100, rng) == CasResult::applied);
    tx.commit();
    if (s.event) ++events;
    CHECK(count(db, "SELECT COUNT(*) FROM outbox") == events);
    if (s.event) {
      auto st = db.prepare("SELECT type, payload FROM outbox ORDER BY seq DESC LIMIT 1");
      st.step();
      CHECK(st.col_text(0) == s.event);
      CHECK(st.col_text(1).find(std::string("\"state\":\"") + std::string(to_string(tr->to)) + "\"") != std::string::npos);
    }
  }
  CHECK(count(db, "SELECT COUNT(*) FROM reconciliation_cases WHERE reason = 'late_contradiction'") == 1);
  const Payment held = test::stored_payment(db, p.id);
  CHECK(held.state == PaymentState::failed_final);
  REQUIRE(held.reconciliation);
  CHECK(held.reconciliation->reason == "late_contradiction");
}

TEST_CASE("list_payments pages newest first with a cursor") {
  TempDb t;
  Db db(t.path(), Db::Mode::read_write);
  SeededRandom rng(14);
  std::vector<std::string> ids;
  for (int i = 0; i < 7; ++i) ids.push_back(created_payment(db, "list-" + std::to_string(i), 1'000 + i * 10, rng).id);
  std::vector<std::string> seen;
  std::optional<std::string> cursor;
  do {
    auto page = list_payments(db, "acme", std::nullopt, 3, cursor);
    for (auto& p : page.payments) seen.push_back(p.id);
    cursor = page.next_cursor;
  } while (cursor);
  REQUIRE(seen.size() == 7);
  for (std::size_t i = 0; i < 7; ++i) CHECK(seen[i] == ids[6 - i]);
  CHECK(list_payments(db, "acme", PaymentState::succeeded, 10, std::nullopt).payments.empty());
  CHECK(list_payments(db, "globex", std::nullopt, 10, std::nullopt).payments.empty());
}

TEST_CASE("writer: jobs share a commit, a refused job rolls back alone, answers come after commit") {
  TempDb t;
  Writer w(t.path(), WriterOptions{});
  // Queue before starting so all jobs land in one batch.
  std::vector<std::future<WriteStatus>> results;
  for (int i = 0; i < 10; ++i) {
    auto promise = std::make_shared<std::promise<WriteStatus>>();
    results.push_back(promise->get_future());
    w.submit(
        [i](Db& db) {
          db.prepare("INSERT INTO callback_inbox (provider, event_id, received_at, payload, result)"
                     " VALUES ('sim', ?, 0, '{}', 'ok')")
              .bind(1, "evt-" + std::to_string(i))
              .run();
          if (i == 3) throw std::runtime_error("refused");
        },
        [promise](WriteStatus s, const std::string&) { promise->set_value(s); });
  }
  w.start();
  for (int i = 0; i < 10; ++i) CHECK(results[i].get() == (i == 3 ? WriteStatus::rejected : WriteStatus::committed));
  CHECK(w.transactions() == 1);
  CHECK(w.jobs_committed() == 9);
  w.stop();
  Db db(t.path(), Db::Mode::read_write);
  CHECK(count(db, "SELECT COUNT(*) FROM callback_inbox") == 9);
  CHECK(count(db, "SELECT COUNT(*) FROM callback_inbox WHERE event_id = 'evt-3'") == 0);
}

TEST_CASE("writer: a job that takes its work back is declined alone: nothing of it is written, its actions never run") {
  TempDb t;
  Writer w(t.path(), WriterOptions{});
  std::vector<std::future<WriteStatus>> results;
  std::atomic<int> actions{0};
  for (int i = 0; i < 4; ++i) {
    auto promise = std::make_shared<std::promise<WriteStatus>>();
    results.push_back(promise->get_future());
    w.submit_judged(
        [i, &actions](Db& db) {
          db.prepare("INSERT INTO callback_inbox (provider, event_id, received_at, payload, result)"
                     " VALUES ('sim', ?, 0, '{}', 'ok')")
              .bind(1, "evt-" + std::to_string(i))
              .run();
          db.after_commit([&actions] { ++actions; });
          return i == 1 ? Writer::Verdict::take_back : Writer::Verdict::keep;
        },
        [promise](WriteStatus s, const std::string&) { promise->set_value(s); });
  }
  w.start();  // queued before the start: one batch
  for (int i = 0; i < 4; ++i) CHECK(results[i].get() == (i == 1 ? WriteStatus::declined : WriteStatus::committed));
  CHECK(w.transactions() == 1);
  CHECK(w.jobs_committed() == 3);  // a declined job is not a committed one
  w.stop();
  CHECK(actions == 3);
  Db db(t.path(), Db::Mode::read_write);
  CHECK(count(db, "SELECT COUNT(*) FROM callback_inbox") == 3);
  CHECK(count(db, "SELECT COUNT(*) FROM callback_inbox WHERE event_id = 'evt-1'") == 0);
}

TEST_CASE("writer: a database held locked by another process answers busy, never a duplicate") {
  TempDb t;
  Db other(t.path(), Db::Mode::read_write);
  other.exec("BEGIN IMMEDIATE");  // holds the write lock
  Writer w(t.path(), WriterOptions{2, Millis(20), 16});
  w.start();
  std::promise<WriteStatus> p;
  w.submit([](Db& db) { db.exec("INSERT INTO callback_inbox VALUES ('sim','x',0,NULL,'{}','ok')"); },
           [&](WriteStatus s, const std::string&) { p.set_value(s); });
  CHECK(p.get_future().get() == WriteStatus::busy);
  other.exec("ROLLBACK");
  std::promise<WriteStatus> p2;
  w.submit([](Db& db) { db.exec("INSERT INTO callback_inbox VALUES ('sim','x',0,NULL,'{}','ok')"); },
           [&](WriteStatus s, const std::string&) { p2.set_value(s); });
  CHECK(p2.get_future().get() == WriteStatus::committed);
  w.stop();
  std::promise<WriteStatus> p3;
  w.submit([](Db&) {}, [&](WriteStatus s, const std::string&) { p3.set_value(s); });
  CHECK(p3.get_future().get() == WriteStatus::stopped);
}

namespace {

// The temporary files SQLite holds open in this process (it names them etilqs_…, unlinked).
std::vector<std::string> sqlite_temp_files() {
  std::vector<std::string> out;
  for (const auto& fd : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const std::string target = std::filesystem::read_symlink(fd.path(), ec).string();
    if (!ec && target.find("etilqs_") != std::string::npos) out.push_back(target);
  }
  return out;
}

}  // namespace

TEST_CASE("writer: a job's savepoint journal stays in memory, never a temporary file") {
  TempDb t;
  {
    Db db(t.path(), Db::Mode::read_write);
    Transaction tx(db);
    for (int i = 0; i < 200; ++i)
      db.prepare("INSERT INTO callback_inbox (provider, event_id, received_at, payload, result)"
                 " VALUES ('sim', ?, 0, ?, 'ok')")
          .bind(1, "evt-" + std::to_string(i))
          .bind(2, std::string(1000, 'x'))
          .run();
    tx.commit();
  }
  Writer w(t.path(), WriterOptions{});
  w.start();
  std::vector<std::string> temp_files;
  std::promise<WriteStatus> p;
  w.submit(
      [&](Db& db) {
        // Changes every page of the table (about 50): the savepoint journal outgrows the 64 KiB
        // SQLite keeps in memory by default.
        db.exec("UPDATE callback_inbox SET payload = payload || 'y'");
        temp_files = sqlite_temp_files();
      },
      [&](WriteStatus s, const std::string&) { p.set_value(s); });
  REQUIRE(p.get_future().get() == WriteStatus::committed);
  CHECK_MESSAGE(temp_files.empty(), "a temporary file was open during the transaction: "
                                        << (temp_files.empty() ? "" : temp_files.front()));
}

TEST_CASE("every CAS result and write status has a name of its own") {
  test::check_names({CasResult::applied, CasResult::already_in_state, CasResult::stale_fence,
                     CasResult::illegal, CasResult::not_found});
  test::check_names({WriteStatus::committed, WriteStatus::declined, WriteStatus::rejected, WriteStatus::busy,
                     WriteStatus::failed, WriteStatus::stopped});
}
