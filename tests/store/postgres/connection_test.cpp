// store/postgres/connection.h against a real server: each error kind provoked for real (a
// duplicate key, two SERIALIZABLE writers, a deadlock, a backend ended under the connection),
// values sent only as parameters, and no password in any message.
#include <doctest/doctest.h>

#include <future>
#include <optional>
#include <string>

#include "store/postgres/connection.h"
#include "store/postgres/transaction.h"
#include "support/ports.h"
#include "support/postgres_cluster.h"
#include "support/process.h"
#include "two_sessions.h"

namespace payorch::store::pg {
namespace {

using namespace std::chrono_literals;

// What `action` threw, or nullopt when it did not throw a pg::Error.
template <class Action>
std::optional<Error> error_of(Action&& action) {
  try {
    action();
  } catch (const Error& e) {
    return e;
  }
  return std::nullopt;
}

// Whether the server process `pid` is waiting for a lock (seen from another session).
bool waits_for_lock(test::PostgresCluster& cluster, int pid) {
  return cluster
             .admin("SELECT count(*) FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock'",
                    {pid})
             .integer(0, 0) == 1;
}

}  // namespace

TEST_CASE("pg: classify maps SQLSTATEs and a lost connection to what the caller must do") {
  CHECK(classify("40001", true) == ErrorKind::serialization_failure);
  CHECK(classify("40P01", true) == ErrorKind::deadlock);
  CHECK(classify("23505", true) == ErrorKind::unique_violation);
  CHECK(classify("23514", true) == ErrorKind::other);  // a CHECK constraint
  CHECK(classify("42P01", true) == ErrorKind::other);  // undefined table
  CHECK(classify("", true) == ErrorKind::connection_lost);       // no answer from the server
  CHECK(classify("08006", true) == ErrorKind::connection_lost);  // connection failure
  CHECK(classify("57P01", true) == ErrorKind::connection_lost);  // admin shutdown
  // A lost connection wins: the server's last word before it closed does not matter.
  CHECK(classify("40001", false) == ErrorKind::connection_lost);
  CHECK(classify("23505", false) == ErrorKind::connection_lost);
}

TEST_CASE("pg: every error kind and transaction status has its name") {
  for (const ErrorKind k : {ErrorKind::serialization_failure, ErrorKind::deadlock,
                            ErrorKind::unique_violation, ErrorKind::connection_lost,
                            ErrorKind::commit_unknown, ErrorKind::other})
    CHECK(to_string(k) != "?");
  for (const TxStatus s : {TxStatus::committed, TxStatus::conflict, TxStatus::rejected,
                           TxStatus::connection_lost, TxStatus::commit_unknown})
    CHECK(to_string(s) != "?");
}

TEST_CASE("pg: redacted_url hides the password wherever the URI carries it") {
  CHECK(redacted_url("postgresql://payorch:s3cret-pw@db.internal:5432/payorch") ==
        "postgresql://payorch:****@db.internal:5432/payorch");
  CHECK(redacted_url("postgres://u:p%40ss@h/d?sslmode=require") ==
        "postgres://u:****@h/d?sslmode=require");
  CHECK(redacted_url("postgresql://u@h/d?password=s3cret-pw&sslmode=require") ==
        "postgresql://u@h/d?password=****&sslmode=require");
  CHECK(redacted_url("host=h dbname=d password='s3cret pw' user=u") ==
        "host=h dbname=d password='****' user=u");
  CHECK(redacted_url("postgresql://u@h:5432/password_store") ==
        "postgresql://u@h:5432/password_store");
  // Only where the password stands, however short it is.
  CHECK(redacted_url("postgresql://u:p@h/p") == "postgresql://u:****@h/p");
  CHECK(redacted_url("postgresql://u:@h/d") == "postgresql://u:****@h/d");
  CHECK(redacted_url("postgresql://h/d") == "postgresql://h/d");
}

TEST_CASE("pg: values travel as parameters, NULL and text alike") {
  auto db = test::postgres_database_or_skip();
  if (!db) return;
  Connection c(db->url());
  const std::string hostile = "x'); DROP TABLE t; --\n\"\\";
  const Result r = c.exec("SELECT $1::text, $2::bigint, $3::text, $4::boolean",
                          {hostile, std::int64_t{9007199254740991}, std::nullopt, true});
  REQUIRE(r.rows() == 1);
  CHECK(r.text(0, 0) == hostile);
  CHECK(r.integer(0, 1) == 9007199254740991);
  CHECK(r.is_null(0, 2));
  CHECK_FALSE(r.opt_text(0, 2).has_value());
  CHECK(r.text(0, 3) == "t");
  CHECK_THROWS_AS(r.integer(0, 0), std::logic_error);  // not an integer: a broken belief
  c.exec("CREATE TABLE t (id BIGINT PRIMARY KEY, note TEXT)");
  CHECK(c.exec("INSERT INTO t VALUES ($1, $2), ($3, NULL)", {1, hostile, 2}).affected() == 2);
  CHECK(c.exec("SELECT note FROM t WHERE id = $1", {1}).text(0, 0) == hostile);
}

TEST_CASE("pg: the URI's own settings win over the connection's defaults") {
  auto db = test::postgres_database_or_skip();
  if (!db) return;
  Connection plain(db->url());
  CHECK(plain.exec("SELECT current_setting('application_name')").text(0, 0) == "payorchd");
  Connection named(db->url() + "?application_name=payorch-node-2");
  CHECK(named.exec("SELECT current_setting('application_name')").text(0, 0) == "payorch-node-2");
}

TEST_CASE("pg: a duplicate key is unique_violation and names its constraint") {
  auto db = test::postgres_database_or_skip();
  if (!db) return;
  Connection c(db->url());
  c.exec("CREATE TABLE t (tenant TEXT, op TEXT, CONSTRAINT t_business_key UNIQUE (tenant, op))");
  c.exec("INSERT INTO t VALUES ($1, $2)", {"acme", "order-1"});
  const std::optional<Error> e =
      error_of([&] { c.exec("INSERT INTO t VALUES ($1, $2)", {"acme", "order-1"}); });
  REQUIRE(e);
  CHECK(e->kind() == ErrorKind::unique_violation);
  CHECK(e->sqlstate() == "23505");
  CHECK(e->constraint() == "t_business_key");
  CHECK_FALSE(e->retryable());
  // The server's DETAIL would quote the values: the message keeps to the primary text.
  CHECK(std::string(e->what()).find("order-1") == std::string::npos);
  CHECK(c.ok());
}

TEST_CASE("pg: two SERIALIZABLE writers of one row: the later one gets serialization_failure") {
  auto db = test::postgres_database_or_skip();
  if (!db) return;
  TwoSessions s(db->url());
  Connection& a = s.a;
  Connection& b = s.b;
  a.exec("BEGIN ISOLATION LEVEL SERIALIZABLE");
  b.exec("BEGIN ISOLATION LEVEL SERIALIZABLE");
  CHECK(a.exec("SELECT v FROM t WHERE id = 1").integer(0, 0) == 0);  // a's snapshot
  b.exec("UPDATE t SET v = v + 1 WHERE id = 1");
  b.commit();
  const std::optional<Error> e = error_of([&] { a.exec("UPDATE t SET v = v + 10 WHERE id = 1"); });
  REQUIRE(e);
  CHECK(e->kind() == ErrorKind::serialization_failure);
  CHECK(e->sqlstate() == "40001");
  CHECK(e->retryable());
  a.exec("ROLLBACK");
  CHECK(s.v() == 1);
}

TEST_CASE("pg: two transactions locking two rows in opposite order: the victim gets deadlock") {
  auto db = test::postgres_database_or_skip();
  if (!db) return;
  TwoSessions s(db->url(), 2);
  Connection& a = s.a;
  Connection& b = s.b;
  // The server looks for a deadlock deadlock_timeout after a session starts to wait: b, which
  // waits last, looks first and finds the cycle; a would have looked only after 30 s.
  a.exec("BEGIN");
  a.exec("SET LOCAL deadlock_timeout = '30s'");
  a.exec("UPDATE t SET v = 1 WHERE id = 1");
  b.exec("BEGIN");
  b.exec("SET LOCAL deadlock_timeout = '50ms'");
  b.exec("UPDATE t SET v = 2 WHERE id = 2");
  std::future<std::optional<Error>> a_waits = std::async(std::launch::async, [&] {
    return error_of([&] { a.exec("UPDATE t SET v = 1 WHERE id = 2"); });
  });
  REQUIRE(test::eventually([&] { return waits_for_lock(db->cluster(), a.backend_pid()); }, 10s));
  const std::optional<Error> e = error_of([&] { b.exec("UPDATE t SET v = 2 WHERE id = 1"); });
  REQUIRE(e);
  CHECK(e->kind() == ErrorKind::deadlock);
  CHECK(e->sqlstate() == "40P01");
  CHECK(e->retryable());
  // The victim's locks are gone at once: a goes on.
  CHECK_FALSE(a_waits.get().has_value());
  b.exec("ROLLBACK");
  a.commit();
  CHECK(s.v(2) == 1);
}

TEST_CASE("pg: a connection whose server process is ended is connection_lost") {
  auto db = test::postgres_database_or_skip();
  if (!db) return;
  Connection c(db->url());
  CHECK(c.exec("SELECT 1").integer(0, 0) == 1);
  // pg_terminate_backend(pid, timeout) returns once the process has gone.
  CHECK(db->cluster()
            .admin("SELECT pg_terminate_backend($1, 10000)", {c.backend_pid()})
            .text(0, 0) == "t");
  const std::optional<Error> e = error_of([&] { c.exec("SELECT 1"); });
  REQUIRE(e);
  CHECK(e->kind() == ErrorKind::connection_lost);
  CHECK_FALSE(e->retryable());
  CHECK_FALSE(c.ok());
  // And it stays lost: nothing pretends to reconnect underneath.
  CHECK(error_of([&] { c.exec("SELECT 1"); })->kind() == ErrorKind::connection_lost);
}

// The statements the server holds prepared for the session of `c` (PQprepare's, not SQL
// PREPARE's), asked on `c` itself: pg_prepared_statements shows only its own session's.
static std::int64_t server_prepared(Connection& c) {
  return c.exec("SELECT count(*) FROM pg_prepared_statements WHERE NOT from_sql").integer(0, 0);
}

TEST_CASE("pg: a statement text is prepared once per connection, and run prepared after") {
  auto db = test::postgres_database_or_skip();
  if (!db) return;
  Connection c(db->url());
  CHECK(c.prepared() == 0);
  CHECK(c.exec("SELECT $1::bigint + 1", {41}).integer(0, 0) == 42);
  CHECK(c.exec("SELECT $1::bigint + 1", {1}).integer(0, 0) == 2);
  CHECK(c.prepares() == 1);
  CHECK(c.prepared() == 1);
  CHECK(c.unprepared_runs() == 0);
  // On the server: that one and the count's own text.
  CHECK(server_prepared(c) == 2);
  CHECK(c.prepares() == 2);
  // DDL and a transaction's own statements go the same way.
  c.exec("CREATE TABLE t (id BIGINT PRIMARY KEY)");
  c.exec("BEGIN");
  c.exec("INSERT INTO t VALUES ($1)", {1});
  c.commit();
  c.exec("BEGIN");
  c.exec("INSERT INTO t VALUES ($1)", {2});
  c.commit();
  CHECK(c.exec("SELECT count(*) FROM t").integer(0, 0) == 2);
  CHECK(c.prepares() == 7);  // + CREATE, BEGIN, INSERT, COMMIT, the count
  // A refused text is not kept: the next run prepares it again, and is refused again.
  CHECK(error_of([&] { c.exec("SELECT * FROM no_such_table"); })->kind() == ErrorKind::other);
  CHECK(error_of([&] { c.exec("SELECT * FROM no_such_table"); })->kind() == ErrorKind::other);
  CHECK(c.prepared() == 7);
  CHECK(c.ok());
}

TEST_CASE("pg: a connection whose session ends drops its prepared statements; a new one prepares anew") {
  auto db = test::postgres_database_or_skip();
  if (!db) return;
  const std::string sql = "SELECT $1::text || '!'";
  Connection c(db->url());
  CHECK(c.exec(sql, {"a"}).text(0, 0) == "a!");
  CHECK(c.prepared() == 1);
  REQUIRE(db->cluster()
              .admin("SELECT pg_terminate_backend($1, 10000)", {c.backend_pid()})
              .text(0, 0) == "t");
  const std::optional<Error> e = error_of([&] { c.exec(sql, {"b"}); });
  REQUIRE(e);
  CHECK(e->kind() == ErrorKind::connection_lost);
  CHECK(c.prepared() == 0);  // nothing of the lost session is believed in
  c = Connection(db->url());
  CHECK(c.prepared() == 0);
  CHECK(c.prepares() == 0);
  CHECK(c.exec(sql, {"c"}).text(0, 0) == "c!");
  CHECK(c.prepares() == 1);
  CHECK(server_prepared(c) == 2);
}

TEST_CASE("pg: texts past the cache's bound run unprepared, and still answer") {
  auto db = test::postgres_database_or_skip();
  if (!db) return;
  Connection c(db->url(), 3);
  for (int i = 0; i < 10; ++i)
    CHECK(c.exec("SELECT $1::integer + " + std::to_string(i), {1}).integer(0, 0) == i + 1);
  CHECK(c.prepared() == 3);
  CHECK(c.prepares() == 3);
  CHECK(c.unprepared_runs() == 7);
  // The texts prepared first stay prepared.
  CHECK(c.exec("SELECT $1::integer + 0", {5}).integer(0, 0) == 5);
  CHECK(c.prepares() == 3);
  CHECK(c.unprepared_runs() == 7);
  CHECK(server_prepared(c) == 3);  // the count itself ran unprepared
  CHECK(c.unprepared_runs() == 8);
}

TEST_CASE("pg: a prepared SELECT * whose table changed columns fails once, then is prepared anew") {
  auto db = test::postgres_database_or_skip();
  if (!db) return;
  Connection c(db->url());
  Connection other(db->url());
  c.exec("CREATE TABLE t (a INT)");
  c.exec("INSERT INTO t VALUES (1)");
  CHECK(c.exec("SELECT * FROM t").columns() == 1);
  other.exec("ALTER TABLE t ADD COLUMN b INT");
  const std::optional<Error> e = error_of([&] { c.exec("SELECT * FROM t"); });
  REQUIRE(e);
  CHECK(e->sqlstate() == "0A000");
  CHECK(c.exec("SELECT * FROM t").columns() == 2);
  CHECK(c.ok());
}

TEST_CASE("pg: a connection that cannot be made is connection_lost, without the password") {
  auto db = test::postgres_database_or_skip();
  if (!db) return;
  const std::string good = db->url();
  const std::string password = good.substr(good.find("payorch:") + 8, good.find('@') - good.find("payorch:") - 8);
  REQUIRE(password.size() >= 8);
  SUBCASE("a wrong password") {
    const std::string bad = "postgresql://payorch:wrong-" + password + "@" + good.substr(good.find('@') + 1);
    const std::optional<Error> e = error_of([&] { Connection c(bad); });
    REQUIRE(e);
    CHECK(e->kind() == ErrorKind::connection_lost);
    CHECK(std::string(e->what()).find("password authentication failed") != std::string::npos);
    CHECK(std::string(e->what()).find(password) == std::string::npos);
    CHECK(std::string(e->what()).find("payorch:****@127.0.0.1") != std::string::npos);
  }
  SUBCASE("nobody listening") {
    const test::RefusingPort refusing;
    const std::string url = "postgresql://payorch:" + password + "@127.0.0.1:" +
                            std::to_string(refusing.port()) + "/payorch?connect_timeout=5";
    const std::optional<Error> e = error_of([&] { Connection c(url); });
    REQUIRE(e);
    CHECK(e->kind() == ErrorKind::connection_lost);
    CHECK(std::string(e->what()).find("Connection refused") != std::string::npos);
    CHECK(std::string(e->what()).find(password) == std::string::npos);
  }
  SUBCASE("a malformed URI that libpq quotes back") {
    const std::string url = "postgresql://payorch:" + password + "%zz@[::1/payorch";
    const std::optional<Error> e = error_of([&] { Connection c(url); });
    REQUIRE(e);
    CHECK(e->kind() == ErrorKind::connection_lost);
    CHECK(std::string(e->what()).find(password) == std::string::npos);
  }
}

TEST_CASE("pg: COMMIT of a transaction that had already failed is an error, not a success") {
  auto db = test::postgres_database_or_skip();
  if (!db) return;
  Connection c(db->url());
  c.exec("CREATE TABLE t (id INT PRIMARY KEY)");
  c.exec("BEGIN");
  c.exec("INSERT INTO t VALUES (1)");
  CHECK(error_of([&] { c.exec("INSERT INTO t VALUES (1)"); })->kind() ==
        ErrorKind::unique_violation);
  CHECK(c.in_transaction());
  const std::optional<Error> e = error_of([&] { c.commit(); });
  REQUIRE(e);
  CHECK(e->kind() == ErrorKind::other);
  CHECK_FALSE(c.in_transaction());
  CHECK(c.exec("SELECT count(*) FROM t").integer(0, 0) == 0);
}

}  // namespace payorch::store::pg
