#include "daemon/serving_store.h"

#include <algorithm>
#include <optional>

#include "daemon/startup.h"
#include "store/commit_mark.h"
#include "store/database.h"
#include "store/postgres/connection.h"
#include "store/postgres/migrations.h"
#include "store/postgres/pg_store.h"
#include "store/postgres/server_clock.h"
#include "store/read_pool.h"
#include "store/sqlite_store.h"
#include "store/store_metrics.h"
#include "store/transitions.h"
#include "store/writer.h"
#include "util/log.h"

// The configuration's bound on database.max_batch is the store's.
static_assert(payorch::config::max_postgres_batch == payorch::store::pg::max_jobs_per_batch);

namespace payorch::daemon {
namespace {

void log_ready(const std::string& where, const store::OpenReport& report) {
  log::info("database.ready", "database open and migrated",
            {{"path", where}, {"schema_version", report.schema_version},
             {"migrations_applied", report.migrations_applied}});
}

class SqliteServing final : public ServingStore {
public:
  // Before the database is opened: a second instance must not migrate or touch it.
  SqliteServing(const std::string& path, const Clock& clock)
      : lock_(lock_database(path)), clock_(clock) {}

  void start(const config::Config& cfg, const Clock& clock, Metrics& metrics) {
    // The database exists now (prepared before this): its file is locked under every name.
    if (lock_) lock_->hold_database_file();
    writer_.emplace(cfg.database.path,
                    store::WriterOptions{.busy_retries = cfg.database.busy_retries,
                                         .busy_timeout = cfg.database.busy_timeout,
                                         .max_batch = cfg.database.max_batch,
                                         .commit_mark_path = store::commit_mark_path(cfg.database.path),
                                         .clock = &clock,
                                         .transitions = store::transition_counter(metrics),
                                         .metrics = store::StoreMetrics(metrics, "sqlite")});
    metrics.add_collector([path = cfg.database.path] { return store::render_wal_size(path); });
    reads_.emplace(cfg.database.path, 4, cfg.database.busy_timeout);
    writer_->start();
    store_.emplace(*writer_, *reads_);
  }

  store::Store& store() override { return *store_; }
  const Clock& clock() const override { return clock_; }
  void stop() override {
    if (writer_) writer_->stop();
  }
private:
  std::optional<store::InstanceLock> lock_;  // held until the daemon exits
  const Clock& clock_;
  std::optional<store::Writer> writer_;
  std::optional<store::ReadPool> reads_;
  std::optional<store::SqliteStore> store_;
};

class PostgresServing final : public ServingStore {
public:
  // The server's clock is read first (the engine has not started): every time this node stores
  // or compares from then on is the server's.
  PostgresServing(const config::Config& cfg, const Clock& local, Metrics& metrics)
      : clock_(std::make_unique<store::pg::ServerClock>(
            store::pg::ServerClockOptions{.url = cfg.database.url, .local = &local})),
        store_(std::make_unique<store::pg::PgStore>(
            store::pg::PgStoreOptions{.url = cfg.database.url,
                                      .pool_size = cfg.database.pool_size,
                                      // write_connections run write batches, one transaction
                                      // each at a time; the others serve reads on the HTTP
                                      // threads.
                                      .threads = config::write_connections_of(cfg.database),
                                      .max_batch = cfg.database.max_batch,
                                      .clock = clock_.get(),
                                      .transitions = store::transition_counter(metrics),
                                      .metrics = store::StoreMetrics(metrics, "postgres")})) {
    clock_->start();
    metrics.add_collector([clock = clock_.get()] { return clock->render_metrics(); });
  }

  store::Store& store() override { return *store_; }
  const Clock& clock() const override { return *clock_; }
  // The clock keeps counting after stop() (the metrics may still read it); only its sampler
  // stops, with its connection.
  void stop() override {
    store_.reset();
    clock_->stop();
  }
private:
  std::unique_ptr<store::pg::ServerClock> clock_;  // before store_, which reads it
  std::unique_ptr<store::pg::PgStore> store_;
};

}  // namespace

std::string database_where(const config::Database& db) {
  return db.driver == "postgres" ? store::pg::redacted_url(db.url) : db.path;
}

std::unique_ptr<ServingStore> ServingStore::open(const config::Config& cfg, const Clock& clock,
                                                 Metrics& metrics, bool accept_lost_commits) {
  if (cfg.database.driver == "postgres") {
    // Several daemons may start at once: the runner's advisory lock applies each migration once.
    log_ready(database_where(cfg.database),
              store::pg::prepare_database(cfg.database.url, clock.now_ms()));
    return std::make_unique<PostgresServing>(cfg, clock, metrics);
  }
  auto sqlite = std::make_unique<SqliteServing>(cfg.database.path, clock);
  log_ready(database_where(cfg.database), store::prepare_database(cfg.database.path, clock.now_ms()));
  if (!commits_intact_or_accepted(cfg.database.path, accept_lost_commits)) return nullptr;
  sqlite->start(cfg, clock, metrics);
  return sqlite;
}

}  // namespace payorch::daemon
