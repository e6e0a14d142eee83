// run_transaction (store/postgres/transaction.h) against a real server: a conflict is run again
// a bounded number of times and then answered as a conflict, never as anything else; other
// failures are not retried; a COMMIT that the connection took with it is commit_unknown.
#include <doctest/doctest.h>

#include <future>
#include <stdexcept>
#include <string>

#include "store/postgres/transaction.h"
#include "support/postgres_cluster.h"
#include "support/process.h"
#include "two_sessions.h"

namespace payorch::store::pg {
namespace {

using namespace std::chrono_literals;

// TwoSessions with `a` running the transaction under test and `b` the concurrent writer that
// makes it lose.
struct Rig : TwoSessions {
  using TwoSessions::TwoSessions;
  // Reads the row (taking the snapshot), lets b update it, then updates it too: under
  // SERIALIZABLE the second update is a real serialization failure (40001).
  void lose_a_conflict(Connection& tx) {
    tx.exec("SELECT v FROM t WHERE id = 1");
    b.exec("UPDATE t SET v = v + 100 WHERE id = 1");
    tx.exec("UPDATE t SET v = v + 1 WHERE id = 1");
  }
};

}  // namespace

TEST_CASE("run_transaction: a serialization failure is run again, and then commits") {
  auto db = test::postgres_database_or_skip();
  if (!db) return;
  Rig rig(db->url());
  int runs = 0;
  const TxResult r = run_transaction(rig.a, Isolation::serializable, RetryPolicy{.max_attempts = 3},
                                     [&](Connection& tx) {
                                       if (++runs == 1) return rig.lose_a_conflict(tx);
                                       tx.exec("UPDATE t SET v = v + 1 WHERE id = 1");
                                     });
  CHECK(r.status == TxStatus::committed);
  CHECK(r.attempts == 2);
  CHECK(runs == 2);
  CHECK(r.error.empty());
  CHECK(rig.v() == 101);  // the other writer's update and ours, once
}

TEST_CASE("run_transaction: conflicts on every run: gives up after max_attempts, as a conflict") {
  auto db = test::postgres_database_or_skip();
  if (!db) return;
  for (const int max_attempts : {1, 4}) {
    CAPTURE(max_attempts);
    Rig rig(db->url());
    int runs = 0;
    const TxResult r =
        run_transaction(rig.a, Isolation::serializable, RetryPolicy{.max_attempts = max_attempts},
                        [&](Connection& tx) {
                          ++runs;
                          rig.lose_a_conflict(tx);
                        });
    CHECK(r.status == TxStatus::conflict);
    CHECK(r.attempts == max_attempts);
    CHECK(runs == max_attempts);
    REQUIRE(r.error_kind.has_value());
    CHECK(*r.error_kind == ErrorKind::serialization_failure);
    CHECK(r.sqlstate == "40001");
    CHECK(rig.v() == 100 * max_attempts);  // only the other writer's updates
    CHECK(rig.a.ok());                     // the connection is fine for the next transaction
    CHECK_FALSE(rig.a.in_transaction());
  }
}

TEST_CASE("run_transaction: a serialization failure raised by COMMIT is a conflict too") {
  auto db = test::postgres_database_or_skip();
  if (!db) return;
  // Write skew: each transaction reads what the other writes. Neither update touches a row the
  // other updated, so the server can only refuse the second COMMIT (40001), which says the
  // transaction did not commit: it is run again, not reported as an unknown outcome.
  Rig rig(db->url());
  rig.a.exec("CREATE TABLE doctors (name TEXT PRIMARY KEY, on_call BOOLEAN NOT NULL)");
  rig.a.exec("INSERT INTO doctors VALUES ('alice', true), ('bob', true)");
  int runs = 0;
  bool first_run_wrote = false;
  const TxResult r = run_transaction(
      rig.a, Isolation::serializable, RetryPolicy{.max_attempts = 2}, [&](Connection& tx) {
        ++runs;
        const auto on_call = tx.exec("SELECT count(*) FROM doctors WHERE on_call").integer(0, 0);
        if (runs == 1) {
          rig.b.exec("BEGIN ISOLATION LEVEL SERIALIZABLE");
          rig.b.exec("SELECT count(*) FROM doctors WHERE on_call");
        }
        if (on_call >= 2) tx.exec("UPDATE doctors SET on_call = false WHERE name = 'alice'");
        if (runs == 1) {
          first_run_wrote = true;
          rig.b.exec("UPDATE doctors SET on_call = false WHERE name = 'bob'");
          rig.b.commit();
        }
      });
  CHECK(first_run_wrote);  // so the first run failed in its COMMIT
  CHECK(r.status == TxStatus::committed);
  CHECK(r.attempts == 2);
  // The second run saw bob off call and kept alice on.
  CHECK(rig.b.exec("SELECT name FROM doctors WHERE on_call").text(0, 0) == "alice");
}

TEST_CASE("run_transaction: a deadlock is run again; a unique violation or an exception is not") {
  auto db = test::postgres_database_or_skip();
  if (!db) return;
  Rig rig(db->url());
  SUBCASE("deadlock") {
    int runs = 0;
    const TxResult r = run_transaction(rig.a, Isolation::read_committed, RetryPolicy{},
                                       [&](Connection& tx) {
                                         tx.exec("UPDATE t SET v = v + 1 WHERE id = 1");
                                         if (++runs == 1)
                                           throw Error(ErrorKind::deadlock, "40P01", "",
                                                       "deadlock detected");
                                       });
    CHECK(r.status == TxStatus::committed);
    CHECK(r.attempts == 2);
    CHECK(rig.v() == 1);  // the first run was rolled back
  }
  SUBCASE("unique violation") {
    const TxResult r = run_transaction(rig.a, Isolation::serializable, RetryPolicy{},
                                       [&](Connection& tx) {
                                         tx.exec("UPDATE t SET v = 5 WHERE id = 1");
                                         tx.exec("INSERT INTO t VALUES (1, 0)");
                                       });
    CHECK(r.status == TxStatus::rejected);
    CHECK(r.attempts == 1);
    REQUIRE(r.error_kind.has_value());
    CHECK(*r.error_kind == ErrorKind::unique_violation);
    CHECK(r.sqlstate == "23505");
    CHECK(rig.v() == 0);
  }
  SUBCASE("an exception of the work") {
    const TxResult r = run_transaction(rig.a, Isolation::serializable, RetryPolicy{},
                                       [&](Connection& tx) {
                                         tx.exec("UPDATE t SET v = 7 WHERE id = 1");
                                         throw std::runtime_error("the provider is gone");
                                       });
    CHECK(r.status == TxStatus::rejected);
    CHECK(r.attempts == 1);
    CHECK_FALSE(r.error_kind.has_value());
    CHECK(r.error == "the provider is gone");
    CHECK(rig.v() == 0);
  }
  CHECK(rig.a.ok());
  CHECK_FALSE(rig.a.in_transaction());
}

TEST_CASE("run_transaction: a connection lost before COMMIT is connection_lost, not retried") {
  auto db = test::postgres_database_or_skip();
  if (!db) return;
  Rig rig(db->url());
  int runs = 0;
  const TxResult r = run_transaction(
      rig.a, Isolation::serializable, RetryPolicy{}, [&](Connection& tx) {
        ++runs;
        tx.exec("UPDATE t SET v = 9 WHERE id = 1");
        db->cluster().admin("SELECT pg_terminate_backend($1, 10000)", {tx.backend_pid()});
        tx.exec("UPDATE t SET v = 10 WHERE id = 1");
      });
  CHECK(r.status == TxStatus::connection_lost);
  CHECK(r.attempts == 1);
  CHECK(runs == 1);
  CHECK_FALSE(rig.a.ok());
  CHECK(rig.v() == 0);  // the server rolled it back
}

TEST_CASE("run_transaction: a connection lost during COMMIT is commit_unknown, not retried") {
  auto db = test::postgres_database_or_skip();
  if (!db) return;
  Rig rig(db->url());
  // A deferred constraint trigger runs inside COMMIT: this one sleeps there, so that the
  // connection can be ended while COMMIT is in flight.
  rig.a.exec_script(R"sql(
    CREATE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN PERFORM pg_sleep(60); RETURN NULL; END $$;
    CREATE CONSTRAINT TRIGGER t_slow_commit AFTER UPDATE ON t DEFERRABLE INITIALLY DEFERRED
      FOR EACH ROW EXECUTE FUNCTION slow_commit();
  )sql");
  const int pid = rig.a.backend_pid();
  std::future<void> killer = std::async(std::launch::async, [&] {
    REQUIRE(test::eventually(
        [&] {
          return db->cluster()
                     .admin("SELECT count(*) FROM pg_stat_activity WHERE pid = $1 AND query = "
                            "'COMMIT' AND wait_event = 'PgSleep'",
                            {pid})
                     .integer(0, 0) == 1;
        },
        20s));
    db->cluster().admin("SELECT pg_terminate_backend($1, 10000)", {pid});
  });
  int runs = 0;
  const TxResult r = run_transaction(rig.a, Isolation::serializable, RetryPolicy{},
                                     [&](Connection& tx) {
                                       ++runs;
                                       tx.exec("UPDATE t SET v = 3 WHERE id = 1");
                                     });
  killer.get();
  CHECK(r.status == TxStatus::commit_unknown);
  CHECK(r.attempts == 1);
  CHECK(runs == 1);
  REQUIRE(r.error_kind.has_value());
  CHECK(*r.error_kind == ErrorKind::commit_unknown);
  CHECK(r.error.find("may or may not have committed") != std::string::npos);
  CHECK_FALSE(rig.a.ok());
}

}  // namespace payorch::store::pg
