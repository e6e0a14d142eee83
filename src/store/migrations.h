#pragma once
// Numbered schema migrations (schema/NNN_name.sql, compiled in). Each is applied in its own
// transaction and recorded in schema_migrations; a database whose version is newer than this
// binary knows is refused rather than guessed at.
#include <vector>

#include "core/clock.h"
#include "store/schema_version.h"
#include "store/sqlite.h"

namespace payorch::store {

const std::vector<Migration>& embedded_migrations();

// The highest applied version (0 for a fresh database).
int schema_version(Db& db);

// Applies pending migrations; returns how many were applied. Throws SchemaTooNew when the
// database has a version the list does not know.
int migrate(Db& db, const std::vector<Migration>& migrations, UnixMillis now);

}  // namespace payorch::store
