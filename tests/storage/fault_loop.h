#pragma once
// The storage-fault loops' shared parts: payorchd's serving objects built in-process (as
// src/app/main.cpp wires them, without the engine, the deliverer and retention, so that the
// only I/O while a fault is armed is the operation under test) over a SQLite database opened
// through FaultyVfs or over PostgreSQL, a plain connection for looking at a SQLite file
// afterwards, and the SQLite loop itself: fail operation N for N = 1, 2, ... until an
// iteration reaches no fault. The PostgreSQL loop is storage/pg_fault_loop.h.
#include <sqlite3.h>

#include <boost/asio/io_context.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "config/config.h"
#include "core/payment.h"
#include "daemon/serving_store.h"
#include "http/admin_api.h"
#include "http/api.h"
#include "http/callbacks_api.h"
#include "http/instrumented.h"
#include "http/server.h"
#include "net/http_client.h"
#include "providers/adapter.h"
#include "store/read_pool.h"
#include "store/sqlite_store.h"
#include "store/writer.h"
#include "support/faulty_vfs.h"
#include "support/http_client.h"
#include "util/change_notifier.h"
#include "util/metrics.h"
#include "util/os_random.h"
#include "util/system_clock.h"

namespace payorch::test {

inline constexpr const char* tenant_token = "acme-token-123";

// The configuration of DaemonConfig (tests/support/daemon.h) with the database at `db_path`.
config::Config storage_test_config(const std::string& db_path);

// The serving half of `payorchd serve`: the store, the three APIs behind the instrumented
// handler, and the HTTP server on a loopback port with two io_context threads. The store by
// cfg.database.driver:
//  - sqlite: a Writer and a ReadPool over cfg.database.path (no lock, no commit mark: the
//    VFS sees the operation's own I/O only);
//  - postgres: daemon::ServingStore::open, as serve opens it (PgStore, its threads from
//    cfg.database.pool_size).
class InProcessDaemon {
public:
  explicit InProcessDaemon(const config::Config& cfg);
  ~InProcessDaemon();
  InProcessDaemon(const InProcessDaemon&) = delete;
  InProcessDaemon& operator=(const InProcessDaemon&) = delete;

  std::uint16_t port() const { return server_->port(); }
  store::Store& store() { return *store_; }
  // SQLite only (std::logic_error on PostgreSQL).
  store::Writer& writer();
  Random& rng() { return rng_; }
  const Clock& clock() const { return clock_; }

  // Runs `work` as one Writer job and waits for its status (at most 10 s; then "timeout").
  // SQLite only.
  std::pair<store::WriteStatus, std::string> run_job(store::Writer::Work work);
  // Runs `work` as one store job, on either driver, and waits likewise.
  std::pair<store::WriteStatus, std::string> run_store_job(store::Store::Work work);
  // A no-op job (and on PostgreSQL a read): opens the WAL and the shared memory, or the pooled
  // connections, so that arming starts warm as in a running daemon.
  void warm_up();
  // Stops accepting, stops the io_context threads and the store, closes every connection.
  void stop();

private:
  std::pair<store::WriteStatus, std::string> wait_for(
      const std::function<void(store::Writer::Done)>& submit);

  const config::Config& cfg_;
  SystemClock clock_;
  OsRandom rng_;
  Metrics metrics_;
  std::unique_ptr<store::Writer> writer_;           // sqlite
  std::unique_ptr<store::ReadPool> reads_;          // sqlite
  std::unique_ptr<store::SqliteStore> sqlite_;      // sqlite
  std::unique_ptr<daemon::ServingStore> serving_;   // postgres
  store::Store* store_ = nullptr;
  boost::asio::io_context ioc_;
  ChangeNotifier changes_;
  std::unique_ptr<net::HttpClient> vendor_client_;
  std::vector<std::unique_ptr<providers::Adapter>> adapters_;
  std::unique_ptr<http::AdminApi> admin_;
  std::unique_ptr<http::CallbacksApi> callbacks_;
  std::unique_ptr<http::Api> api_;
  std::unique_ptr<http::InstrumentedHandler> instrumented_;
  std::unique_ptr<http::Server> server_;
  std::vector<std::thread> threads_;
  bool stopped_ = false;
};

// The job Engine::record_outcome submits for a submit of `p`, claimed at `fence`, answered
// "succeeded": a fenced apply_transition, its CasResult written to `result`. Both drivers'
// engine-outcome loops run it through InProcessDaemon::run_store_job.
store::Store::Work engine_succeeded_job(InProcessDaemon& daemon, const Payment& p,
                                        std::int64_t fence,
                                        std::shared_ptr<store::CasResult> result);

// A connection through the real "unix" VFS, never faulted, for looking at the file.
class PlainDb {
public:
  explicit PlainDb(const std::string& path);
  ~PlainDb();
  PlainDb(const PlainDb&) = delete;
  PlainDb& operator=(const PlainDb&) = delete;

  // Every column of every row, as text joined by '|' (rows by '\n'); NULL as "NULL".
  std::string text(const std::string& sql, const std::vector<std::string>& params = {});
  std::int64_t count(const std::string& sql, const std::vector<std::string>& params = {});
  // PRAGMA integrity_check ("ok" when sound) and foreign_key_check ("" when no violation).
  std::string integrity_check() { return text("PRAGMA integrity_check"); }
  std::string foreign_key_check() { return text("PRAGMA foreign_key_check"); }
  // Where the kept risk exposure differs from a recount of the payments ("" when nowhere).
  std::string exposure_differences();
  // Row counts of every table payorch writes, by table, to compare before and after.
  std::map<std::string, std::int64_t> table_counts();

private:
  sqlite3* db_ = nullptr;
};

// A copy of the database file and its WAL as they are now, without the shared memory: what a
// power loss at this moment would leave (the page cache included). Opening it replays the WAL.
void copy_crash_image(const std::string& db_path, const std::string& image_path);

// Log lines of the code under test, kept in memory (the loops make many expected errors) and
// shown when an iteration fails.
class LogCapture {
public:
  LogCapture();
  ~LogCapture();
  void clear();
  std::string tail(std::size_t lines = 30) const;
};

enum class FaultMode {
  transient,  // operation N fails once
  dead_disk,  // operation N and every later one fail until the fault clears
  disk_full,  // writes fail with SQLITE_FULL once a byte budget is spent (torn where it falls)
};
std::string_view to_string(FaultMode mode);

// What one iteration's operation answered while armed.
enum class Answer { committed, refused, other };
// An intake's answer: committed for 201 or a 200 replay, refused for a 503 storage-unavailable
// or storage-busy, other for anything else.
Answer intake_answer(const HttpResponse& r);

struct LoopReport {
  std::string name;
  FaultMode mode = FaultMode::transient;
  int iterations = 0;             // including the last one, which reached no fault
  std::uint64_t faults = 0;       // failures the VFS returned, over all iterations
  int refused = 0;                // answered 503 / failed or rejected job
  int committed_despite_fault = 0;  // a fault was hit and absorbed; the work committed
  int integrity_checks = 0;       // integrity_check + foreign_key_check passed
  int crash_images = 0;           // crash images checked
  int crash_images_with_refused_work = 0;  // a refused operation a crash would have kept whole
  std::map<std::string, std::uint64_t> faults_by_operation;  // "write" -> faults injected
  std::string describe() const;
};

// One iteration, given a fresh copy of the prepared database. It builds what it needs, calls
// arm() immediately before the operation under test and disarm() right after it, checks, and
// reports what the operation answered. Crash-image and integrity counts are added to `report`.
struct Iteration {
  std::string db_path;
  std::string dir;
  std::function<void()> arm;
  std::function<void()> disarm;
  // True once the armed fault was hit (since arm()).
  std::function<bool()> fault_hit;
  // The fault outlives the first failure (dead disk, full disk): an iteration that hit it
  // tries the operation once more before disarm(), which must be refused as well.
  bool persistent = false;
  LoopReport* report = nullptr;
};
using IterationBody = std::function<Answer(Iteration&)>;

// Copies `template_db` into a fresh directory for each iteration and runs `body` with fault
// N = 1, 2, ... (transient, dead_disk) or with budgets that fail each write in turn, at its
// first byte and torn in its middle (disk_full), until an iteration reaches no fault. Fails
// the test if that takes more than `max_iterations`.
LoopReport run_fault_loop(const std::string& name, FaultMode mode, const std::string& template_db,
                          const IterationBody& body, int max_iterations = 2000);

// A new temporary directory (removed by the caller): under $PAYORCH_STORAGE_TEST_DIR, else
// /dev/shm when writable, else /tmp.
std::string storage_temp_dir(const std::string& prefix);

}  // namespace payorch::test
