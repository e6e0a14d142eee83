#pragma once
// What the SQLite and the PostgreSQL migration runners share (store/migrations.h,
// store/postgres/migrations.h): a numbered migration compiled into the binary by
// tools/embed_schema.cmake, what opening a database did to its schema, and the refusal of a
// database whose schema is newer than the binary.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

namespace payorch::store {

struct Migration {
  int version;
  const char* name;
  const char* sql;
};

// What opening a database for the daemon (or `payorchd migrate`) did to its schema.
struct OpenReport {
  int schema_version = 0;
  int migrations_applied = 0;
};

class SchemaTooNew : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// Throws SchemaTooNew when `current`, the highest version the database has applied, is above
// every version of `migrations`: a newer payorchd migrated it, and this one would misread it.
inline void refuse_newer_schema(int current, const std::vector<Migration>& migrations) {
  int latest = 0;
  for (const Migration& m : migrations) latest = std::max(latest, m.version);
  if (current > latest)
    throw SchemaTooNew("database schema version " + std::to_string(current) +
                       " is newer than this payorchd knows (" + std::to_string(latest) +
                       "); refusing to start — run a newer payorchd");
}

}  // namespace payorch::store
