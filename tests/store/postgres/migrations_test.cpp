// store/postgres/migrations.h and schema/postgres/*.sql against a real server: applied once on
// a fresh database, a no-op the second time, a newer database refused, a failing migration
// leaving nothing of itself, runners serialised by the advisory lock; and the schema the same as
// SQLite's, table for table, in PostgreSQL's idiom.
#include <doctest/doctest.h>

#include <future>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "store/migrations.h"
#include "store/postgres/migrations.h"
#include "support/postgres_cluster.h"
#include "support/process.h"
#include "support/store_fixture.h"

namespace payorch::store::pg {
namespace {

using namespace std::chrono_literals;
constexpr UnixMillis now = 1'700'000'000'000;

using Rows = std::vector<std::vector<std::string>>;

Rows rows_of(Connection& c, const std::string& sql) {
  const Result r = c.exec(sql);
  Rows out;
  for (int i = 0; i < r.rows(); ++i) {
    out.emplace_back();
    for (int j = 0; j < r.columns(); ++j) out.back().push_back(r.text(i, j));
  }
  return out;
}

}  // namespace
}  // namespace payorch::store::pg

// Rows in a failed check's message: "[[a, b], [c, d]]".
template <>
struct doctest::StringMaker<payorch::store::pg::Rows> {
  static doctest::String convert(const payorch::store::pg::Rows& rows) {
    std::string out = "[";
    for (const auto& row : rows) {
      out += out.size() > 1 ? ", [" : "[";
      for (std::size_t i = 0; i < row.size(); ++i) out += (i ? ", " : "") + row[i];
      out += "]";
    }
    return (out + "]").c_str();
  }
};

namespace payorch::store::pg {
namespace {

Rows recorded(Connection& c) {
  // By the integer column: ORDER BY version would sort the text output column of that name.
  return rows_of(c, "SELECT version::text, name, applied_at::text FROM schema_migrations"
                    " ORDER BY schema_migrations.version");
}

std::set<std::string> pg_names(Connection& c, const std::string& sql) {
  std::set<std::string> out;
  for (const auto& row : rows_of(c, sql)) out.insert(row.at(0) + (row.size() > 1 ? "." + row[1] : ""));
  return out;
}

std::set<std::string> sqlite_names(Db& db, const std::string& sql) {
  std::set<std::string> out;
  Stmt st = db.prepare(sql);
  while (st.step()) out.insert(st.col_text(0));
  return out;
}

// The names of `a` that `b` lacks, space-separated.
std::string minus(const std::set<std::string>& a, const std::set<std::string>& b) {
  std::string out;
  for (const std::string& name : a)
    if (b.count(name) == 0) out += (out.empty() ? "" : " ") + name;
  return out;
}

// The names of `a` that `b` lacks.
std::set<std::string> minus_set(const std::set<std::string>& a, const std::set<std::string>& b) {
  std::set<std::string> out;
  for (const std::string& name : a)
    if (b.count(name) == 0) out.insert(name);
  return out;
}

// A PROCESSING payment of `amount` EUR through sim, as intake writes it.
void insert_payment(Connection& c, const std::string& id, std::int64_t amount) {
  c.exec("INSERT INTO payments (id, tenant_id, operation_type, operation_id, provider, client_key,"
         " request_digest, amount_minor, currency, payee, source, state, next_attempt_at,"
         " created_at, updated_at) VALUES ($1, 'acme', 'payment', $1, 'sim', 'ck_' || $1,"
         " 'sha256:x', $2, 'EUR', 'merchant-1', 'tok_ok', 'PROCESSING', $3, $3, $3)",
         {id, amount, now});
}

}  // namespace

TEST_CASE("pg migrations: a fresh database gets every migration, each recorded once") {
  auto db = test::postgres_database_or_skip();
  if (!db) return;
  Connection c(db->url());
  const std::vector<Migration>& all = embedded_migrations();
  REQUIRE_FALSE(all.empty());
  CHECK(schema_version(c) == 0);
  CHECK(migrate(c, all, now) == static_cast<int>(all.size()));
  CHECK(schema_version(c) == all.back().version);
  Rows expected;
  for (const Migration& m : all)
    expected.push_back({std::to_string(m.version), m.name, std::to_string(now)});
  CHECK(recorded(c) == expected);
  CHECK(c.exec("SELECT count(*) FROM payments").integer(0, 0) == 0);

  // Applied again (a restart, a second `payorchd migrate`): nothing to do, nothing rewritten.
  CHECK(migrate(c, all, now + 60'000) == 0);
  CHECK(recorded(c) == expected);
}

TEST_CASE("pg migrations: a database newer than the binary is refused, untouched") {
  auto db = test::postgres_database_or_skip();
  if (!db) return;
  Connection c(db->url());
  const std::vector<Migration>& all = embedded_migrations();
  migrate(c, all, now);
  const int future = all.back().version + 1;
  c.exec("INSERT INTO schema_migrations VALUES ($1, 'from_the_future', $2)", {future, now});
  const Rows before = recorded(c);
  try {
    migrate(c, all, now);
    FAIL("a newer schema was not refused");
  } catch (const SchemaTooNew& e) {
    CHECK(std::string(e.what()).find("database schema version " + std::to_string(future) +
                                     " is newer than this payorchd knows") != std::string::npos);
  }
  CHECK(recorded(c) == before);
}

TEST_CASE("pg migrations: a failing migration leaves nothing of itself, and the later ones wait") {
  auto db = test::postgres_database_or_skip();
  if (!db) return;
  Connection c(db->url());
  const std::vector<Migration> list = {
      {1, "first", "CREATE TABLE first (id INT)"},
      {2, "broken", "CREATE TABLE half (id INT); SELECT 1 / 0"},
      {3, "third", "CREATE TABLE third (id INT)"},
  };
  CHECK_THROWS_WITH_AS(migrate(c, list, now), doctest::Contains("migration 2_broken"),
                       std::runtime_error);
  CHECK(schema_version(c) == 1);
  CHECK(c.exec("SELECT to_regclass('half') IS NULL AND to_regclass('third') IS NULL").text(0, 0) ==
        "t");
  CHECK_FALSE(c.in_transaction());
  // The lock went with the failure: the next runner is not kept waiting.
  Connection other(db->url());
  CHECK(other.exec("SELECT pg_try_advisory_lock($1)", {migration_lock_key}).text(0, 0) == "t");
}

TEST_CASE("pg migrations: a runner waits while another holds the advisory lock") {
  auto db = test::postgres_database_or_skip();
  if (!db) return;
  Connection holder(db->url());
  holder.exec("SELECT pg_advisory_lock($1)", {migration_lock_key});
  // The key is where migrations.h says an operator will find it.
  CHECK(rows_of(holder,
                "SELECT classid::text, objid::text, objsubid::text FROM pg_locks"
                " WHERE locktype = 'advisory' AND pid = pg_backend_pid()") ==
        Rows{{"1885436271", "1919117421", "1"}});

  std::future<int> runner = std::async(std::launch::async, [&] {
    Connection c(db->url());
    return migrate(c, embedded_migrations(), now);
  });
  REQUIRE(test::eventually(
      [&] {
        return db->cluster()
                   .admin("SELECT count(*) FROM pg_stat_activity WHERE datname = $1"
                          " AND wait_event_type = 'Lock' AND wait_event = 'advisory'",
                          {db->name()})
                   .integer(0, 0) == 1;
      },
      10s));
  CHECK(runner.wait_for(200ms) == std::future_status::timeout);
  CHECK(schema_version(holder) == 0);
  holder.exec("SELECT pg_advisory_unlock($1)", {migration_lock_key});
  CHECK(runner.get() == static_cast<int>(embedded_migrations().size()));
}

TEST_CASE("pg schema: the tables, columns, indexes and triggers of SQLite's schema") {
  auto db = test::postgres_database_or_skip();
  if (!db) return;
  Connection c(db->url());
  migrate(c, embedded_migrations(), now);
  test::TempDatabase sqlite("pg-schema", now);

  // commit_sequence is SQLite's alone (schema/postgres/001_initial.sql says why).
  const std::string not_sqlite_only = " AND m.name NOT IN ('commit_sequence')";
  std::set<std::string> sqlite_columns;
  {
    Stmt st = sqlite.db->prepare(
        "SELECT m.name, p.name FROM sqlite_master m, pragma_table_xinfo(m.name) p"
        " WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%'" + not_sqlite_only);
    while (st.step()) sqlite_columns.insert(st.col_text(0) + "." + st.col_text(1));
  }
  const std::set<std::string> pg_columns = pg_names(
      c, "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'public'");
  // PostgreSQL's own columns, for several nodes on one database: the kept figures' shard and
  // the feed position (schema/postgres/002), the room left under the risk caps and whether a
  // payment was taken from it (007). Each must exist there and not on SQLite.
  const std::set<std::string> postgres_only = {
      "exposure.shard", "payment_counts.shard", "outbox.feed_pos", "payments.risk_taken",
      "risk_caps.provider", "risk_caps.currency", "risk_caps.cap", "risk_caps.debt",
      "risk_room.provider", "risk_room.currency", "risk_room.shard", "risk_room.room"};
  CHECK_MESSAGE(minus(postgres_only, pg_columns).empty(),
                "PostgreSQL's own columns missing: " << minus(postgres_only, pg_columns));
  CHECK_MESSAGE(minus_set(postgres_only, sqlite_columns) == postgres_only,
                "PostgreSQL's own columns on SQLite too");
  const std::set<std::string> pg_shared_columns = minus_set(pg_columns, postgres_only);
  CHECK_MESSAGE(minus(sqlite_columns, pg_shared_columns).empty(),
                "columns missing on PostgreSQL: " << minus(sqlite_columns, pg_shared_columns));
  CHECK_MESSAGE(minus(pg_shared_columns, sqlite_columns).empty(),
                "columns only on PostgreSQL: " << minus(pg_shared_columns, sqlite_columns));

  // The same primary keys, the shard added to the figures' ones.
  std::set<std::string> sqlite_keys;
  {
    Stmt st = sqlite.db->prepare(
        "SELECT m.name, p.name FROM sqlite_master m, pragma_table_info(m.name) p"
        " WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' AND p.pk > 0" + not_sqlite_only);
    while (st.step()) sqlite_keys.insert(st.col_text(0) + "." + st.col_text(1));
  }
  sqlite_keys.insert({"exposure.shard", "payment_counts.shard", "risk_caps.provider",
                      "risk_caps.currency", "risk_room.provider", "risk_room.currency",
                      "risk_room.shard"});
  const std::set<std::string> pg_keys = pg_names(
      c, "SELECT i.indrelid::regclass::text, a.attname FROM pg_index i"
         " JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)"
         " JOIN pg_class t ON t.oid = i.indrelid JOIN pg_namespace n ON n.oid = t.relnamespace"
         " WHERE i.indisprimary AND n.nspname = 'public'");
  CHECK_MESSAGE(pg_keys == sqlite_keys, "primary key columns only on PostgreSQL: "
                                            << minus(pg_keys, sqlite_keys) << "; only on SQLite: "
                                            << minus(sqlite_keys, pg_keys));

  // Every named index and trigger of SQLite's has its namesake (PostgreSQL has more: the
  // indexes behind its named constraints, and a TRUNCATE guard).
  const std::set<std::string> pg_indexes =
      pg_names(c, "SELECT indexname FROM pg_indexes WHERE schemaname = 'public'");
  for (const std::string& name : sqlite_names(
           *sqlite.db, "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")) {
    CAPTURE(name);
    CHECK(pg_indexes.count(name) == 1);
  }
  const std::set<std::string> pg_triggers =
      pg_names(c, "SELECT tgname FROM pg_trigger WHERE NOT tgisinternal");
  for (const std::string& name :
       sqlite_names(*sqlite.db, "SELECT name FROM sqlite_master WHERE type = 'trigger'")) {
    CAPTURE(name);
    CHECK(pg_triggers.count(name) == 1);
  }
}

TEST_CASE("pg schema: figures kept by triggers in the backend's shard, immutable intents, no deletes") {
  auto db = test::postgres_database_or_skip();
  if (!db) return;
  Connection c(db->url());
  migrate(c, embedded_migrations(), now);
  // The figures are the sums over the shards (schema/postgres/002).
  const auto counts = [&] {
    return rows_of(c, "SELECT state, SUM(count)::text FROM payment_counts GROUP BY state"
                      " HAVING SUM(count) <> 0 ORDER BY state");
  };
  const auto exposure = [&] {
    return rows_of(c, "SELECT provider, currency, SUM(count)::text, SUM(amount_minor)::text"
                      " FROM exposure GROUP BY provider, currency");
  };
  const auto shards = [&](const std::string& table) {
    // Ordered by the shard's number (an output column named `shard` would order as text).
    return rows_of(c, "SELECT shard::text AS shard_text, count::text FROM " + table +
                          " WHERE count <> 0 ORDER BY shard");
  };
  const std::string own_shard = c.exec("SELECT (pg_backend_pid() % 16)::text").text(0, 0);
  insert_payment(c, "pay_a", 1250);
  insert_payment(c, "pay_b", 990);
  CHECK(counts() == Rows{{"PROCESSING", "2"}});
  CHECK(shards("payment_counts") == Rows{{own_shard, "2"}});
  CHECK(exposure().empty());
  // A submit that started and did not end counts against the caps; UNKNOWN does too.
  c.exec("UPDATE payments SET last_submit_started_at = $1 WHERE id = 'pay_a'", {now});
  c.exec("UPDATE payments SET state = 'UNKNOWN', last_submit_started_at = $1,"
         " last_submit_ended_at = $1 WHERE id = 'pay_b'", {now});
  CHECK(exposure() == Rows{{"sim", "EUR", "2", "2240"}});
  CHECK(shards("exposure") == Rows{{own_shard, "2"}});
  CHECK(counts() == Rows{{"PROCESSING", "1"}, {"UNKNOWN", "1"}});

  // Another backend (of another shard) ends pay_a's submit: its shard goes below zero, and the
  // sums are right.
  std::vector<std::unique_ptr<Connection>> others;
  std::string other_shard = own_shard;
  while (other_shard == own_shard && others.size() < 32) {
    others.push_back(std::make_unique<Connection>(db->url()));
    other_shard = others.back()->exec("SELECT (pg_backend_pid() % 16)::text").text(0, 0);
  }
  REQUIRE(other_shard != own_shard);
  others.back()->exec(
      "UPDATE payments SET state = 'SUCCEEDED', last_submit_ended_at = $1 WHERE id = 'pay_a'",
      {now + 1});
  CHECK(exposure() == Rows{{"sim", "EUR", "1", "990"}});
  Rows expected_shards{{own_shard, "2"}, {other_shard, "-1"}};
  if (std::stoi(other_shard) < std::stoi(own_shard)) std::swap(expected_shards[0], expected_shards[1]);
  CHECK(shards("exposure") == expected_shards);
  CHECK(counts() == Rows{{"SUCCEEDED", "1"}, {"UNKNOWN", "1"}});

  for (const char* refused : {"UPDATE payments SET amount_minor = 1 WHERE id = 'pay_a'",
                              "UPDATE payments SET client_key = 'ck_other' WHERE id = 'pay_a'",
                              "DELETE FROM payments WHERE id = 'pay_a'", "TRUNCATE payments CASCADE"}) {
    CAPTURE(refused);
    try {
      c.exec(refused);
      FAIL("not refused");
    } catch (const Error& e) {
      CHECK(e.sqlstate() == "23000");
    }
  }
  CHECK(c.exec("SELECT count(*) FROM payments").integer(0, 0) == 2);
  CHECK_THROWS_AS(insert_payment(c, "pay_c", 0), Error);  // amounts start at 1
}

}  // namespace payorch::store::pg
