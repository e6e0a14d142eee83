#pragma once
// The commit sequence (schema/006_commit_sequence.sql): one more in every transaction the Writer
// commits that changed something, so the database itself says how many such transactions it
// holds. A transaction that changed nothing writes nothing, and is not counted.
#include <cstdint>

#include "store/sqlite.h"

namespace payorch::store {

// The database's commit sequence, as committed.
std::uint64_t read_commit_sequence(Db& db);
// Adds one to the commit sequence inside the caller's open transaction and returns the new
// value (the Writer, before each COMMIT).
std::uint64_t advance_commit_sequence(Db& db);
// Rewrites the commit sequence's row unchanged: a Writer job whose transaction must reach the
// disk even though it has nothing else to write (a readiness probe). The Writer then counts it.
void touch_commit_sequence(Db& db);

}  // namespace payorch::store
