#pragma once
// `payorchd backup` and `payorchd restore` for the SQLite driver (docs/operations.md, "Backup and
// restore"). PostgreSQL has its own tools (pg_dump, pg_basebackup: docs/postgres.md); both
// commands refuse that driver with exit code 2.
#include <string>

#include "config/config.h"

namespace payorch::daemon {

// Copies the database into `to` while a daemon may be serving it: the database is opened
// read-only beside the daemon (WAL mode lets a reader hold a snapshot without blocking the
// writer) and copied in one read transaction with SQLite's backup API, so the copy is the
// database as of one commit. The copy goes to "<to>.tmp", is switched out of WAL mode (one
// self-contained file), checked with PRAGMA integrity_check, fsync'ed and renamed to `to`.
// Refuses an existing `to`. Prints a summary on stdout (one JSON document with `json`).
// Returns the exit code: 0 done, 1 failed (the reason on stderr), 2 not for this driver.
int backup_database(const config::Config& cfg, const std::string& to, bool json);

// Puts the backup `from` in place of the configured database. Refuses while a daemon holds the
// database (its payorch.db.lock), a backup that fails integrity_check, and one whose schema is
// newer than this binary. The current database and its -wal/-shm are renamed to
// "<db>.before-restore-<UTC timestamp>[-wal|-shm]" (kept, never deleted); the backup is copied
// to a temporary file beside the database, fsync'ed and renamed into place. The commit mark
// (store/commit_mark.h) is left as it is: an older copy is behind it, and the next `serve`
// refuses it until the operator accepts the lost commits (the summary says so).
// Exit code as backup_database.
int restore_database(const config::Config& cfg, const std::string& from, bool json);

}  // namespace payorch::daemon
