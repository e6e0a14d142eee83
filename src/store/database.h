#pragma once
// Opening the database for the daemon: create the file if needed, set WAL + synchronous=FULL,
// apply migrations (refusing a schema newer than this binary).
#include <string>

#include "core/clock.h"

namespace payorch::store {

struct OpenReport {
  int schema_version = 0;
  int migrations_applied = 0;
};

// Creates parent-less files only: the directory must exist. Throws with a clear message.
OpenReport prepare_database(const std::string& path, UnixMillis now);

}  // namespace payorch::store
