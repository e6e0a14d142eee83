#pragma once
// The store `payorchd serve` runs on, by database.driver:
//  - sqlite: the single-instance lock, the migrations, the lost-commit check, the group-commit
//    writer and its read pool (one daemon per file);
//  - postgres: the migrations under their advisory lock (several daemons may start at once),
//    then PgStore's connection pool (several daemons share one database, docs/postgres.md).
// Either way the engine, the APIs and delivery see only store::Store, and read time from clock():
// on PostgreSQL the database server's (store/postgres/server_clock.h), so that the times one node
// stores and another compares come from one clock.
#include <memory>
#include <string>

#include "config/config.h"
#include "core/clock.h"
#include "store/store.h"
#include "util/metrics.h"

namespace payorch::daemon {

class ServingStore {
public:
  // Opens and migrates the configured database, logging `database.ready`. Throws on a failure
  // to open or migrate (store::DatabaseInUse when another daemon holds a SQLite file); returns
  // nullptr when the database may not be served (a SQLite file behind its commit mark without
  // --accept-lost-commits: commits_intact_or_accepted has logged why). `metrics` counts the
  // transitions the store commits; it and `clock` (the node's own, SystemClock) outlive the
  // store. On PostgreSQL, a server whose clock cannot be read fails the start too.
  static std::unique_ptr<ServingStore> open(const config::Config& cfg, const Clock& clock,
                                            Metrics& metrics, bool accept_lost_commits);
  virtual ~ServingStore() = default;

  virtual store::Store& store() = 0;
  // The clock the whole node reads wall time from: on SQLite the `clock` given to open() (one
  // daemon per file: its clock is the only one); on PostgreSQL the database server's, sampled
  // (store::pg::ServerClock). Monotonic readings are the local monotonic clock either way.
  virtual const Clock& clock() const = 0;
  // Finishes the jobs already queued and closes the database; after the last user stopped.
  virtual void stop() = 0;
};

// Where the configured database is, for logs and messages: the SQLite path, or the PostgreSQL
// URI without its password.
std::string database_where(const config::Database& db);

}  // namespace payorch::daemon
