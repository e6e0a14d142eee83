#pragma once
// PostgreSQL's numbered schema migrations (schema/postgres/NNN_name.sql, compiled in), applied
// by `payorchd migrate`. Several daemons may start at once on one database, so the runner
// holds a session advisory lock (migration_lock_key) while it reads the schema version and
// applies what is missing: each migration is applied exactly once, and the others wait for it,
// then find nothing left to do. Each migration runs in its own transaction together with its
// row in schema_migrations; a database newer than this binary is refused (SchemaTooNew), as on
// SQLite (store/migrations.h).
#include <cstdint>
#include <string>
#include <vector>

#include "core/clock.h"
#include "store/postgres/connection.h"
#include "store/schema_version.h"

namespace payorch::store::pg {

const std::vector<Migration>& embedded_migrations();

// The advisory lock of the migration runner: the ASCII bytes of "payorchm" read as a big-endian
// 64-bit integer. While a runner holds it, pg_locks shows a row with locktype 'advisory',
// classid 1885436271 (0x7061796f), objid 1919117421 (0x7263686d) and objsubid 1. Anything else
// that takes advisory locks on the same database must not use this key.
inline constexpr std::int64_t migration_lock_key = 0x7061796f7263686d;

// The highest applied version; 0 for a database without schema_migrations.
int schema_version(Connection& conn);

// Applies the pending migrations of `migrations` (in version order) under the advisory lock,
// waiting for it if another runner holds it; returns how many it applied. Throws SchemaTooNew
// when the database has a version the list does not know, pg::Error or std::runtime_error
// when a migration fails (that migration and the later ones are not applied).
int migrate(Connection& conn, const std::vector<Migration>& migrations, UnixMillis now);

// Connects to `url` and applies the embedded migrations: `payorchd migrate` on PostgreSQL.
OpenReport prepare_database(const std::string& url, UnixMillis now);

}  // namespace payorch::store::pg
