#pragma once
// The commit sequence (schema/006_commit_sequence.sql): one more in every transaction the Writer
// commits, so the database itself says how many writer transactions it holds, and every writer
// transaction writes at least one page.
#include <cstdint>

#include "store/sqlite.h"

namespace payorch::store {

// The database's commit sequence, as committed.
std::uint64_t read_commit_sequence(Db& db);
// Adds one to the commit sequence inside the caller's open transaction and returns the new
// value (the Writer, before each COMMIT).
std::uint64_t advance_commit_sequence(Db& db);

}  // namespace payorch::store
