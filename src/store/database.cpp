#include "store/database.h"

#include "store/migrations.h"
#include "store/sqlite.h"

namespace payorch::store {

OpenReport prepare_database(const std::string& path, UnixMillis now) {
  Db db(path, Db::Mode::read_write_create);
  configure_connection(db, 5000);
  OpenReport r;
  r.migrations_applied = migrate(db, embedded_migrations(), now);
  r.schema_version = schema_version(db);
  auto st = db.prepare("PRAGMA journal_mode");
  st.step();
  if (st.col_text(0) != "wal")
    throw SqliteError(SQLITE_ERROR, path + ": could not switch to WAL mode (got " + st.col_text(0) + ")");
  return r;
}

}  // namespace payorch::store
