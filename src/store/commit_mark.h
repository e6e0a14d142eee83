#pragma once
// Detecting committed transactions that a database no longer holds.
//
// Every transaction the Writer commits that changed rows adds one to the database's commit
// sequence (store/commit_sequence.h). After commits, at most once per interval, the Writer
// copies the sequence into the commit mark: "<database path>.commit-mark", a small file beside
// the database, written to a temporary file, fsync'ed and renamed over the old one. The mark
// therefore never runs ahead of what is durable in the database (it is written after COMMIT
// returned, and COMMIT returns after the WAL's fsync), and it trails the database by at most
// one interval.
//
// At start-up, after SQLite has replayed the WAL, the database's sequence must be at least the
// mark's. A normal crash (kill -9, power loss) keeps the WAL and never trips this. A database
// behind its mark has lost transactions it had committed and acknowledged: its -wal file was
// deleted (the frames not yet checkpointed are the only copy of those commits), or an older
// copy of the file was put in its place. payorchd then refuses to serve it (docs/operations.md,
// "Lost commits").
#include <cstdint>
#include <optional>
#include <string>

#include "store/commit_sequence.h"
#include "store/sqlite.h"

namespace payorch::store {

std::string commit_mark_path(const std::string& database_path);

// The sequence in the mark file; nullopt when there is none. Throws std::runtime_error when the
// file exists but cannot be read or does not hold a sequence.
std::optional<std::uint64_t> read_commit_mark(const std::string& mark_path);

// Replaces the mark with `seq`: a temporary file beside it (named after this process), written,
// fsync'ed, then renamed over the mark, so that a crash at any point leaves the old mark or the
// new one, whole. Throws std::runtime_error on failure.
void write_commit_mark(const std::string& mark_path, std::uint64_t seq);

// Start-up: the database's sequence beside its mark.
struct CommitMarkCheck {
  std::uint64_t database_seq = 0;
  std::optional<std::uint64_t> mark_seq;  // nullopt: no mark file (a new database, or one
                                          // from before the mark existed)
  bool database_behind() const { return mark_seq && database_seq < *mark_seq; }
};
// Reads the mark, then the database (only reading it; SQLite replays a WAL a crash left).
// Throws as read_commit_mark does, or SqliteError.
CommitMarkCheck check_commit_mark(const std::string& database_path);

}  // namespace payorch::store
