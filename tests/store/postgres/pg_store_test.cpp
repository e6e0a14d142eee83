// PgStore's answers that only PostgreSQL can give (store/postgres/pg_store.h): a conflict
// through every retry is `busy`, never a duplicate; a lost connection is `failed` and the next
// job gets a new one; a COMMIT whose outcome is unknown is `failed` and says so. The answers
// both drivers share are in tests/store/shared.
#include <doctest/doctest.h>

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
