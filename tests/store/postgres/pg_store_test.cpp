// PgStore's answers that only PostgreSQL can give (store/postgres/pg_store.h): a conflict
// through every retry is `busy`, never a duplicate; a lost connection is `failed` and the next
// job gets a new one; a COMMIT whose outcome is unknown is `failed` and says so. The answers
// both drivers share are in tests/store/shared.
#include <doctest/doctest.h>

#include <array>
#include <future>
#include <stdexcept>

#include "store/postgres/migrations.h"
#include "store/postgres/pg_store.h"
#include "support/postgres_cluster.h"
#include "support/store_fixture.h"
#include "support/store_under_test.h"

namespace payorch::store::pg {
namespace {

using test::JobResult;
using test::run_job;

constexpr UnixMillis t0 = 1'700'000'000'000;

struct Rig {
  explicit Rig(const test::PostgresDatabase& db)
      : store((prepare_database(db.url(), t0), PgStoreOptions{.url = db.url(), .pool_size = 2, .threads = 1,
                                                              .retry = RetryPolicy{.max_attempts = 3}})) {}
  PgStore store;
};

}  // namespace

TEST_CASE("PgStore: a job that loses a conflict on every run is busy, and ran max_attempts times") {
  auto db = test::postgres_database_or_skip();
  if (!db) return;
  Rig rig(*db);
  int runs = 0, actions = 0;
  const JobResult r = run_job(rig.store, [&](Tx& tx) {
    ++runs;
    tx.after_commit([&] { ++actions; });
    throw Error(ErrorKind::serialization_failure, "40001", "", "could not serialize access");
  });
  CHECK(r.status == WriteStatus::busy);
  CHECK(runs == 3);
  CHECK(actions == 0);
  CHECK(rig.store.storage_errors().at("busy") == 1);
  CHECK_FALSE(rig.store.health().writable);
  CHECK(rig.store.health().error_kind == "busy");

  // The next commit makes the store writable again.
  CHECK(run_job(rig.store, [](Tx&) {}).status == WriteStatus::committed);
  CHECK(rig.store.health().writable);
}

TEST_CASE("PgStore: a lost connection fails the job; the next job runs on a new connection") {
  auto db = test::postgres_database_or_skip();
  if (!db) return;
  Rig rig(*db);
  SeededRandom rng(1);
  const JobResult lost = run_job(rig.store, [&](Tx& tx) {
    tx.record_intake(test::intake_request("op-1"), t0, rng);
    static_cast<PgTx&>(tx).conn().exec("SELECT pg_terminate_backend(pg_backend_pid())");
  });
  CHECK(lost.status == WriteStatus::failed);
  CHECK(rig.store.storage_errors().at("connection_lost") == 1);
  CHECK(rig.store.health().error_kind == "connection_lost");

  IntakeOutcome out;
  const JobResult again = run_job(rig.store, [&](Tx& tx) {
    out = tx.record_intake(test::intake_request("op-1"), t0, rng);
  });
  CHECK(again.status == WriteStatus::committed);
  CHECK(out.kind == IntakeOutcome::Kind::created);  // nothing of the lost job was written
}

TEST_CASE("PgStore: a COMMIT whose outcome is unknown is failed, and the answer says so") {
  auto db = test::postgres_database_or_skip();
  if (!db) return;
  Rig rig(*db);
  int actions = 0;
  // run_transaction's commit_unknown is provoked for real in transaction_test.cpp; here the
  // work raises it, to see how PgStore answers it.
  const JobResult r = run_job(rig.store, [&](Tx& tx) {
    tx.after_commit([&] { ++actions; });
    throw Error(ErrorKind::commit_unknown, "", "", "server closed the connection during COMMIT");
  });
  CHECK(r.status == WriteStatus::failed);
  CHECK(r.error.find("outcome of COMMIT is unknown") != std::string::npos);
  CHECK(actions == 0);
  CHECK(rig.store.storage_errors().at("commit_unknown") == 1);
}

TEST_CASE("PgStore: a constraint's refusal is rejected; a failing database is failed") {
  auto db = test::postgres_database_or_skip();
  if (!db) return;
  Rig rig(*db);
  const JobResult refused = run_job(rig.store, [](Tx& tx) {
    static_cast<PgTx&>(tx).conn().exec("UPDATE payments SET id = 'x'");  // no rows: fine
    static_cast<PgTx&>(tx).conn().exec("SELECT 1/0");                    // 22012
  });
  CHECK(refused.status == WriteStatus::rejected);
  CHECK(rig.store.health().writable);
  const JobResult failed = run_job(rig.store, [](Tx& tx) {
    static_cast<PgTx&>(tx).conn().exec("SELECT * FROM no_such_table");  // 42P01
  });
  CHECK(failed.status == WriteStatus::failed);
  CHECK(rig.store.storage_errors().at("other") == 1);
}

TEST_CASE("PgStore: a database that cannot be reached fails jobs and reads, not the constructor") {
  PgStore store(PgStoreOptions{.url = "postgresql://nobody@127.0.0.1:1/none?connect_timeout=2"});
  const JobResult r = run_job(store, [](Tx&) {});
  CHECK(r.status == WriteStatus::failed);
  CHECK(store.storage_errors().at("connection_lost") == 1);
  CHECK_THROWS_AS(store.probe_read(), Error);
}

}  // namespace payorch::store::pg

namespace payorch::store::pg {
namespace {

// A store with one write connection whose first job waits for `open`: the jobs submitted
// meanwhile queue up and then run together, in one batch of the group commit.
struct Gate {
  std::promise<void> open;
  std::shared_future<void> opened = open.get_future().share();
  std::promise<void> holding;
};

void hold_writer(PgStore& store, Gate& gate) {
  store.submit([&gate, opened = gate.opened](Tx&) {
    gate.holding.set_value();
    opened.wait();
  }, [](WriteStatus, const std::string&) {});
  gate.holding.get_future().wait();
}

// A fresh migrated database and a store on it with one write connection, held by a gate.
struct HeldStore {
  explicit HeldStore(const test::PostgresDatabase& db)
      : store((prepare_database(db.url(), t0),
               PgStoreOptions{.url = db.url(), .pool_size = 2, .threads = 1})) {
    hold_writer(store, gate);
  }
  PgStore store;
  Gate gate;  // destroyed first: a test that fails before opening it does not hang the store
};

struct Answered {
  std::promise<JobResult> answer;
  std::future<JobResult> result = answer.get_future();
  Store::Done done() {
    return [this](WriteStatus s, const std::string& e) { answer.set_value(JobResult{s, e}); };
  }
};

// The transaction that wrote the payment of `operation_id`, "" when absent: its created event's
// feed position holds the id of the top-level transaction (the row's xmin would be the job's
// savepoint's own subtransaction id).
std::string writer_of(PgStore& store, const std::string& operation_id) {
  return store.read_value([&](Tx& tx) {
    const Result r = static_cast<PgTx&>(tx).conn().exec(
        "SELECT (o.feed_pos >> 20)::text FROM payments p JOIN outbox o ON o.payment_id = p.id"
        " WHERE p.operation_id = $1", {operation_id});
    return r.rows() ? r.text(0, 0) : std::string();
  });
}

std::int64_t events_of(PgStore& store, const std::string& operation_id) {
  return store.read_value([&](Tx& tx) {
    return static_cast<PgTx&>(tx).conn().exec(
        "SELECT count(*) FROM outbox o JOIN payments p ON p.id = o.payment_id"
        " WHERE p.operation_id = $1", {operation_id}).integer(0, 0);
  });
}

}  // namespace

TEST_CASE("PgStore: jobs queued together share one transaction; a refused job alone is rolled back") {
  auto db = test::postgres_database_or_skip();
  if (!db) return;
  HeldStore held(*db);
  PgStore& store = held.store;
  Gate& gate = held.gate;
  SeededRandom rng(7);

  // Queued behind the gate: two intakes that stay, one whose work throws after writing (a
  // refusal), one that takes its intake back, and a constraint's refusal from the server.
  std::array<Answered, 5> a;
  int kept_actions = 0, dropped_actions = 0;
  store.submit([&](Tx& tx) {
    tx.record_intake(test::intake_request("batch-kept-1"), t0, rng);
    tx.after_commit([&] { ++kept_actions; });
  }, a[0].done());
  store.submit([&](Tx& tx) {
    tx.record_intake(test::intake_request("batch-thrown"), t0, rng);
    tx.after_commit([&] { ++dropped_actions; });
    throw std::runtime_error("refused after writing");
  }, a[1].done());
  store.submit_judged([&](Tx& tx) {
    tx.record_intake(test::intake_request("batch-taken-back"), t0, rng);
    tx.after_commit([&] { ++dropped_actions; });
    return Store::Verdict::take_back;
  }, a[2].done());
  store.submit([&](Tx& tx) {
    tx.record_intake(test::intake_request("batch-refused-by-server"), t0, rng);
    static_cast<PgTx&>(tx).conn().exec("SELECT 1/0");
  }, a[3].done());
  store.submit([&](Tx& tx) {
    tx.record_intake(test::intake_request("batch-kept-2"), t0, rng);
    tx.after_commit([&] { ++kept_actions; });
  }, a[4].done());
  CHECK(store.queued() == 5);
  gate.open.set_value();

  CHECK(a[0].result.get().status == WriteStatus::committed);
  CHECK(a[1].result.get().status == WriteStatus::rejected);
  CHECK(a[2].result.get().status == WriteStatus::declined);
  CHECK(a[3].result.get().status == WriteStatus::rejected);
  CHECK(a[4].result.get().status == WriteStatus::committed);
  CHECK(kept_actions == 2);
  CHECK(dropped_actions == 0);
  // One transaction wrote both kept payments, whole; the refused ones wrote nothing.
  const std::string first = writer_of(store, "batch-kept-1");
  CHECK(!first.empty());
  CHECK(writer_of(store, "batch-kept-2") == first);
  CHECK(events_of(store, "batch-kept-1") == 1);
  CHECK(events_of(store, "batch-kept-2") == 1);
  for (const char* gone : {"batch-thrown", "batch-taken-back", "batch-refused-by-server"}) {
    CAPTURE(gone);
    CHECK(writer_of(store, gone).empty());
    CHECK(events_of(store, gone) == 0);
  }
  CHECK(store.health().writable);
}

TEST_CASE("PgStore: a job whose deferred statement fails is rolled back alone, its UPDATE with it") {
  // A transition's event and history row are deferred: they reach the server with the job's
  // next statement, or with the flush that ends the job. A failure there is that job's, and its
  // savepoint takes back everything it wrote, the payment's UPDATE included.
  auto db = test::postgres_database_or_skip();
  if (!db) return;
  HeldStore held(*db);
  PgStore& store = held.store;
  SeededRandom rng(10);
  constexpr std::size_t n = 4;
  std::array<Answered, n> created;
  std::array<std::string, n> ids;
  for (std::size_t i = 0; i < n; ++i)
    store.submit([&, i](Tx& tx) {
      ids[i] = tx.record_intake(test::intake_request("deferred-" + std::to_string(i)), t0, rng).payment.id;
    }, created[i].done());
  held.gate.open.set_value();
  for (auto& c : created) REQUIRE(c.result.get().status == WriteStatus::committed);
  // The server refuses the history row of the second payment's arrival in SUCCEEDED.
  Connection admin(db->url());
  admin.exec("ALTER TABLE payment_history ADD CONSTRAINT refuse_one CHECK (payment_id <> '" + ids[1] +
             "' OR to_state <> 'SUCCEEDED') NOT VALID");

  Gate gate;
  hold_writer(store, gate);
  const Transition succeeded = test::legal_transition(PaymentState::processing, Trigger::callback_succeeded);
  std::array<Answered, n> a;
  std::array<std::optional<CasResult>, n> applied;
  int actions = 0;
  for (std::size_t i = 0; i < n; ++i)
    store.submit([&, i](Tx& tx) {
      // (Not inside a CHECK, which would catch the job's failure and let the job go on.)
      applied[i] = tx.apply_transition(ids[i], std::nullopt, succeeded, TransitionUpdate{}, t0 + 10, rng);
      tx.after_commit([&] { ++actions; });
      // The fourth job's last statement is deferred and fails: only the flush that ends the
      // job sends it.
      if (i == 3) static_cast<PgTx&>(tx).conn().defer("SELECT 1/0");
    }, a[i].done());
  gate.open.set_value();
  CHECK(a[0].result.get().status == WriteStatus::committed);
  const JobResult refused = a[1].result.get();
  CHECK(refused.status == WriteStatus::rejected);
  CHECK(refused.error.find("refuse_one") != std::string::npos);
  CHECK(a[2].result.get().status == WriteStatus::committed);
  const JobResult flushed = a[3].result.get();
  CHECK(flushed.status == WriteStatus::rejected);
  CHECK(flushed.error.find("division by zero") != std::string::npos);
  CHECK(actions == 2);
  // The first job prepared the INSERTs on the batch's connection, so the second's were deferred
  // and its refusal came with the look for deferred refunds, inside its transition; the
  // fourth's transition returned, and its failure came at the job's end.
  CHECK(applied[0] == CasResult::applied);
  CHECK(!applied[1].has_value());
  CHECK(applied[2] == CasResult::applied);
  CHECK(applied[3] == CasResult::applied);

  const auto figures = [&](const std::string& id) {
    return store.read_value([&](Tx& tx) {
      const Result r = static_cast<PgTx&>(tx).conn().exec(
          "SELECT p.state, p.fence, (SELECT count(*) FROM outbox WHERE payment_id = p.id),"
          " (SELECT count(*) FROM payment_history WHERE payment_id = p.id),"
          " (SELECT max(feed_pos >> 20)::text FROM outbox WHERE payment_id = p.id)"
          " FROM payments p WHERE p.id = $1", {id});
      return std::make_tuple(r.text(0, 0), r.integer(0, 1), r.integer(0, 2), r.integer(0, 3), r.text(0, 4));
    });
  };
  const auto [state0, fence0, events0, history0, writer0] = figures(ids[0]);
  const auto [state2, fence2, events2, history2, writer2] = figures(ids[2]);
  CHECK(state0 == "SUCCEEDED");
  CHECK(state2 == "SUCCEEDED");
  CHECK(events0 == 2);
  CHECK(history0 == 2);
  CHECK(events2 == 2);
  CHECK(history2 == 2);
  // The kept jobs shared one transaction: the one that refused was in the middle of it.
  CHECK(writer0 == writer2);
  // Nothing of the refused jobs stayed: not their UPDATEs, not their events.
  for (const std::size_t i : {std::size_t{1}, std::size_t{3}}) {
    CAPTURE(i);
    const auto [state, fence, events, history, writer] = figures(ids[i]);
    CHECK(state == "PROCESSING");
    CHECK(fence == fence0 - 1);
    CHECK(events == 1);
    CHECK(history == 1);
  }
}

TEST_CASE("PgTx: each lease of a claim carries its payment's row as the claim left it") {
  // The claim round reads each claimed payment from its lease instead of reading it again: the
  // row must be the one a read would give right after the claim.
  auto db = test::postgres_database_or_skip();
  if (!db) return;
  prepare_database(db->url(), t0);
  Connection conn(db->url());
  SeededRandom rng(11);
  conn.exec("BEGIN");
  {
    std::vector<std::function<void()>> actions;
    PgTx tx(conn, &actions);
    for (int i = 0; i < 3; ++i) tx.record_intake(test::intake_request("claimed-" + std::to_string(i)), t0, rng);
  }
  conn.commit();
  conn.exec("BEGIN");
  std::vector<std::function<void()>> actions;
  PgTx tx(conn, &actions);
  const auto leases = tx.claim_due("node-a", t0 + 10, Millis(30'000), {{"sim", 3}}, 3);
  REQUIRE(leases.size() == 3);
  for (const auto& lease : leases) {
    CAPTURE(lease.payment_id);
    REQUIRE(lease.row);
    const auto read = tx.find_payment_by_id(lease.payment_id);
    REQUIRE(read);
    CHECK(lease.row->id == lease.payment_id);
    CHECK(lease.row->state == lease.state);
    CHECK(lease.row->fence == lease.fence);
    CHECK(lease.row->lease_owner == std::optional<std::string>("node-a"));
    CHECK(lease.row->lease_expires_at == std::optional<UnixMillis>(lease.expires_at));
    CHECK(lease.row->next_attempt_at == lease.expires_at);
    CHECK(lease.row->fence == read->fence);
    CHECK(lease.row->lease_owner == read->lease_owner);
    CHECK(lease.row->next_attempt_at == read->next_attempt_at);
    CHECK(lease.row->client_key == read->client_key);
    CHECK(lease.row->amount_minor == read->amount_minor);
    CHECK(lease.row->attempt_count == read->attempt_count);
    CHECK(lease.row->origin.request_id == read->origin.request_id);
    CHECK(!lease.row->reconciliation);
  }
  conn.exec("ROLLBACK");
}

TEST_CASE("PgStore: a job of a batch that loses a conflict runs again in a later transaction, "
          "and so does every job after it") {
  // The batch stops at the lost conflict: the jobs before it commit, releasing their rows at
  // once; had it gone on, every later job needing a row of the cycle would wait out the server's
  // deadlock_timeout, and lose, one after another, while the other transaction waited on this
  // one's rows.
  auto db = test::postgres_database_or_skip();
  if (!db) return;
  HeldStore held(*db);
  PgStore& store = held.store;
  Gate& gate = held.gate;
  SeededRandom rng(8);
  std::array<Answered, 4> a;
  int runs = 0, actions = 0, after_runs = 0;
  store.submit([&](Tx& tx) { tx.record_intake(test::intake_request("conflict-before"), t0, rng); },
               a[0].done());
  store.submit([&](Tx& tx) {
    tx.record_intake(test::intake_request("conflict-loser"), t0, rng);
    tx.after_commit([&] { ++actions; });
    if (++runs == 1) throw Error(ErrorKind::deadlock, "40P01", "", "deadlock detected");
  }, a[1].done());
  store.submit([&](Tx& tx) {
    ++after_runs;
    tx.record_intake(test::intake_request("conflict-after"), t0, rng);
  }, a[2].done());
  store.submit([&](Tx& tx) { tx.record_intake(test::intake_request("conflict-last"), t0, rng); },
               a[3].done());
  gate.open.set_value();
  for (auto& answered : a) CHECK(answered.result.get().status == WriteStatus::committed);
  CHECK(runs == 2);
  CHECK(actions == 1);
  CHECK(after_runs == 1);  // not run in the batch that lost, so not run twice
  const std::string batch = writer_of(store, "conflict-before");
  const std::string again = writer_of(store, "conflict-loser");
  CHECK(!again.empty());
  CHECK(again != batch);
  // The jobs after the loser, in their order, with it in the next transaction.
  CHECK(writer_of(store, "conflict-after") == again);
  CHECK(writer_of(store, "conflict-last") == again);
  for (const char* key : {"conflict-before", "conflict-loser", "conflict-after", "conflict-last"}) {
    CAPTURE(key);
    CHECK(events_of(store, key) == 1);
  }
}

TEST_CASE("PgStore: a batch whose COMMIT is lost answers every job failed, none committed") {
  auto db = test::postgres_database_or_skip();
  if (!db) return;
  HeldStore held(*db);
  PgStore& store = held.store;
  Gate& gate = held.gate;
  SeededRandom rng(9);
  std::array<Answered, 3> a;
  int actions = 0;
  for (int i = 0; i < 3; ++i) {
    store.submit([&, i](Tx& tx) {
      tx.record_intake(test::intake_request("lost-" + std::to_string(i)), t0, rng);
      tx.after_commit([&] { ++actions; });
      // The last job's connection dies under the batch: nothing of it commits.
      if (i == 2) static_cast<PgTx&>(tx).conn().exec("SELECT pg_terminate_backend(pg_backend_pid())");
    }, a[static_cast<std::size_t>(i)].done());
  }
  gate.open.set_value();
  for (auto& answered : a) CHECK(answered.result.get().status == WriteStatus::failed);
  CHECK(actions == 0);
  for (int i = 0; i < 3; ++i) CHECK(writer_of(store, "lost-" + std::to_string(i)).empty());
}

}  // namespace payorch::store::pg
