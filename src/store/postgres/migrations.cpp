#include "store/postgres/migrations.h"

#include <stdexcept>

#include "store/postgres/transaction.h"
#include "util/log.h"

namespace payorch::store::pg {
namespace {

// Holds the migration lock for its lifetime. A runner that dies holds it no longer: the
// server releases a session's advisory locks when the session ends.
class MigrationLock {
public:
  explicit MigrationLock(Connection& conn) : conn_(conn) {
    if (conn_.exec("SELECT pg_try_advisory_lock($1)", {migration_lock_key}).text(0, 0) == "t")
      return;
    log::info("database.migration_wait",
              "another payorchd is migrating this database; waiting for it to finish",
              {{"database", conn_.where()}});
    conn_.exec("SELECT pg_advisory_lock($1)", {migration_lock_key});
  }
  ~MigrationLock() {
    if (!conn_.ok()) return;
    try {
      conn_.exec("SELECT pg_advisory_unlock($1)", {migration_lock_key});
    } catch (const Error&) {
      // The session ends with the connection, and the lock with it.
    }
  }
  MigrationLock(const MigrationLock&) = delete;
  MigrationLock& operator=(const MigrationLock&) = delete;

private:
  Connection& conn_;
};

}  // namespace

int schema_version(Connection& conn) {
  if (conn.exec("SELECT to_regclass('schema_migrations') IS NOT NULL").text(0, 0) != "t") return 0;
  return static_cast<int>(
      conn.exec("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").integer(0, 0));
}

int migrate(Connection& conn, const std::vector<Migration>& migrations, UnixMillis now) {
  const MigrationLock lock(conn);
  conn.exec(
      "CREATE TABLE IF NOT EXISTS schema_migrations ("
      " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)");
  const int current = schema_version(conn);
  refuse_newer_schema(current, migrations);
  int applied = 0;
  for (const Migration& m : migrations) {
    if (m.version <= current) continue;
    // Under the lock nothing competes with it: a conflict is not retried.
    const TxResult r = run_transaction(conn, Isolation::read_committed, RetryPolicy{.max_attempts = 1},
                                       [&](Connection& c) {
                                         c.exec_script(m.sql);
                                         c.exec("INSERT INTO schema_migrations (version, name, applied_at)"
                                                " VALUES ($1, $2, $3)",
                                                {m.version, m.name, now});
                                       });
    if (!r.committed())
      throw std::runtime_error("migration " + std::to_string(m.version) + "_" + m.name + " on " +
                               conn.where() + ": " + std::string(to_string(r.status)) + ": " +
                               r.error);
    ++applied;
  }
  return applied;
}

OpenReport prepare_database(const std::string& url, UnixMillis now) {
  Connection conn(url);
  OpenReport r;
  r.migrations_applied = migrate(conn, embedded_migrations(), now);
  r.schema_version = schema_version(conn);
  return r;
}

}  // namespace payorch::store::pg
