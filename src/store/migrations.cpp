#include "store/migrations.h"

namespace payorch::store {
namespace {

void ensure_table(Db& db) {
  db.exec(
      "CREATE TABLE IF NOT EXISTS schema_migrations ("
      " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)");
}

}  // namespace

int schema_version(Db& db) {
  ensure_table(db);
  auto st = db.prepare("SELECT COALESCE(MAX(version), 0) FROM schema_migrations");
  st.step();
  return static_cast<int>(st.col_int(0));
}

int migrate(Db& db, const std::vector<Migration>& migrations, UnixMillis now) {
  const int current = schema_version(db);
  refuse_newer_schema(current, migrations);
  int applied = 0;
  for (const auto& m : migrations) {
    if (m.version <= current) continue;
    Transaction tx(db);
    // Re-check inside the write lock: another process may have migrated meanwhile.
    auto st = db.prepare("SELECT 1 FROM schema_migrations WHERE version = ?");
    st.bind(1, m.version);
    if (st.step()) continue;
    db.exec(m.sql);
    db.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)")
        .bind(1, m.version)
        .bind(2, m.name)
        .bind(3, now)
        .run();
    tx.commit();
    ++applied;
  }
  return applied;
}

}  // namespace payorch::store
