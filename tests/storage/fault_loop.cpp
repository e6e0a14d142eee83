#include "storage/fault_loop.h"

#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <future>
#include <mutex>
#include <stdexcept>

#include <unistd.h>

#include "core/state_machine.h"
#include "providers/registry.h"
#include "store/exposure.h"
#include "support/daemon.h"
#include "support/payorch_api.h"
#include "support/process.h"
#include "support/slowdown.h"
#include "util/log.h"

namespace payorch::test {

config::Config storage_test_config(const std::string& db_path) {
  const std::string dir = std::filesystem::path(db_path).parent_path().string();
  config::Config cfg = config::load_from_string(DaemonConfig{}.render(dir), dir + "/payorch.yaml");
  cfg.database.path = db_path;
  return cfg;
}

// ---- InProcessDaemon ----

InProcessDaemon::InProcessDaemon(const config::Config& cfg) : cfg_(cfg) {
  if (cfg.database.driver == "postgres") {
    serving_ = daemon::ServingStore::open(cfg, clock_, metrics_, false);
    store_ = &serving_->store();
  } else {
    writer_ = std::make_unique<store::Writer>(
        cfg.database.path,
        store::WriterOptions{cfg.database.busy_retries, cfg.database.busy_timeout, cfg.database.max_batch});
    reads_ = std::make_unique<store::ReadPool>(cfg.database.path, 4, cfg.database.busy_timeout);
    writer_->start();
    sqlite_ = std::make_unique<store::SqliteStore>(*writer_, *reads_);
    store_ = sqlite_.get();
  }

  // No vendor is called here (no engine); the adapters only verify callbacks. The system trust
  // store is not loaded, which saves ~100 ms per iteration.
  net::ClientOptions client_options;
  client_options.system_trust_store = false;
  vendor_client_ = std::make_unique<net::HttpClient>(ioc_.get_executor(), client_options);
  std::map<std::string, const providers::Adapter*> verifiers;
  for (const auto& p : cfg.providers) {
    adapters_.push_back(providers::make_adapter(p, ioc_.get_executor(), *vendor_client_));
    verifiers[p.name] = adapters_.back().get();
  }
  admin_ = std::make_unique<http::AdminApi>(cfg, *store_, clock_, rng_);
  callbacks_ = std::make_unique<http::CallbacksApi>(http::CallbacksApi::Deps{
      cfg, *store_, clock_, rng_, verifiers, metrics_,
      [this](const std::string& payment_id) { changes_.notify(payment_id); }});
  api_ = std::make_unique<http::Api>(http::ApiDeps{
      cfg, *store_, clock_, rng_, ioc_.get_executor(), changes_,
      [](const std::string&) { return false; },  // no engine: never at a risk cap
      [] {},
      [] { return std::vector<http::ProviderHealth>{}; },
      admin_.get(), callbacks_.get(), &metrics_});
  instrumented_ = std::make_unique<http::InstrumentedHandler>(*api_, metrics_, clock_, rng_);
  server_ = std::make_unique<http::Server>(ioc_, cfg.server, *instrumented_);
  server_->start();
  api_->set_ready();
  for (int i = 0; i < 2; ++i) threads_.emplace_back([this] { ioc_.run(); });
}

InProcessDaemon::~InProcessDaemon() { stop(); }

store::Writer& InProcessDaemon::writer() {
  if (!writer_) throw std::logic_error("InProcessDaemon::writer: not on SQLite");
  return *writer_;
}

std::pair<store::WriteStatus, std::string> InProcessDaemon::wait_for(
    const std::function<void(store::Writer::Done)>& submit) {
  auto answer = std::make_shared<std::promise<std::pair<store::WriteStatus, std::string>>>();
  auto got = answer->get_future();
  submit([answer](store::WriteStatus status, const std::string& error) {
    answer->set_value({status, error});
  });
  if (got.wait_for(scaled(std::chrono::seconds(10))) != std::future_status::ready)
    return {store::WriteStatus::stopped, "timeout: the store did not answer within 10 s"};
  return got.get();
}

std::pair<store::WriteStatus, std::string> InProcessDaemon::run_job(store::Writer::Work work) {
  return wait_for([&](store::Writer::Done done) { writer().submit(std::move(work), std::move(done)); });
}

std::pair<store::WriteStatus, std::string> InProcessDaemon::run_store_job(store::Store::Work work) {
  return wait_for([&](store::Writer::Done done) { store_->submit(std::move(work), std::move(done)); });
}

store::Store::Work engine_succeeded_job(InProcessDaemon& daemon, const Payment& p,
                                        std::int64_t fence,
                                        std::shared_ptr<store::CasResult> result) {
  return [&daemon, p, fence, result](store::Tx& tx) {
    const UnixMillis now = daemon.clock().now_ms();
    const auto t = transition(p.state, Trigger::submit_succeeded);
    if (!t) throw std::logic_error("PROCESSING --submit_succeeded--> is not a transition");
    store::TransitionUpdate u;
    u.next_attempt_at = now;
    u.vendor_reference = "ch_engine";
    u.last_submit_ended_at = now;
    *result = tx.apply_transition(p.id, fence, *t, u, now, daemon.rng());
  };
}

void InProcessDaemon::warm_up() {
  const auto answer = writer_ ? run_job([](store::Db&) {}) : run_store_job([](store::Tx&) {});
  if (answer.first != store::WriteStatus::committed)
    throw std::runtime_error("warm-up job not committed: " + answer.second);
  if (!writer_) store_->probe_read();
}

void InProcessDaemon::stop() {
  if (stopped_) return;
  stopped_ = true;
  server_->stop_accepting();
  // The test client closed its connections; give the sessions a moment to notice.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (server_->open_sessions() > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ioc_.stop();
  for (auto& t : threads_) t.join();
  threads_.clear();
  if (writer_) writer_->stop();
  if (serving_) serving_->stop();
  server_.reset();
  instrumented_.reset();
  api_.reset();
  callbacks_.reset();
  admin_.reset();
  adapters_.clear();
  vendor_client_.reset();
  sqlite_.reset();
  reads_.reset();
  writer_.reset();  // the last connection: checkpoints the WAL into the file
  serving_.reset();
}

// ---- PlainDb ----

PlainDb::PlainDb(const std::string& path) {
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE, "unix") != SQLITE_OK) {
    const std::string message = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    throw std::runtime_error("cannot open " + path + ": " + message);
  }
  sqlite3_busy_timeout(db_, 5000);
}

PlainDb::~PlainDb() { sqlite3_close(db_); }

std::string PlainDb::text(const std::string& sql, const std::vector<std::string>& params) {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK)
    throw std::runtime_error(std::string("prepare: ") + sqlite3_errmsg(db_) + " in " + sql);
  for (std::size_t i = 0; i < params.size(); ++i)
    sqlite3_bind_text(stmt, static_cast<int>(i + 1), params[i].c_str(), -1, SQLITE_TRANSIENT);
  std::string out;
  int rc;
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    if (!out.empty()) out += '\n';
    for (int c = 0; c < sqlite3_column_count(stmt); ++c) {
      if (c > 0) out += '|';
      const unsigned char* t = sqlite3_column_text(stmt, c);
      out += t ? reinterpret_cast<const char*>(t) : "NULL";
    }
  }
  const std::string error = sqlite3_errmsg(db_);
  sqlite3_finalize(stmt);
  if (rc != SQLITE_DONE) throw std::runtime_error("step: " + error + " in " + sql);
  return out;
}

std::int64_t PlainDb::count(const std::string& sql, const std::vector<std::string>& params) {
  return std::stoll(text(sql, params));
}

std::string PlainDb::exposure_differences() { return text(store::exposure_difference_query); }

std::map<std::string, std::int64_t> PlainDb::table_counts() {
  std::map<std::string, std::int64_t> out;
  for (const char* table : {"payments", "outbox", "callback_inbox", "reconciliation_cases",
                            "idempotency_conflicts"})
    out[table] = count(std::string("SELECT count(*) FROM ") + table);
  return out;
}

void copy_crash_image(const std::string& db_path, const std::string& image_path) {
  namespace fs = std::filesystem;
  fs::remove(image_path);
  fs::remove(image_path + "-wal");
  fs::remove(image_path + "-shm");
  fs::copy_file(db_path, image_path);
  if (fs::exists(db_path + "-wal")) fs::copy_file(db_path + "-wal", image_path + "-wal");
}

// ---- LogCapture ----

namespace {
std::mutex log_mu;
std::deque<std::string> log_lines;
}  // namespace

LogCapture::LogCapture() {
  log::set_sink([](std::string_view line) {
    std::lock_guard lock(log_mu);
    log_lines.emplace_back(line);
    if (log_lines.size() > 200) log_lines.pop_front();
  });
}

LogCapture::~LogCapture() { log::set_sink({}); }

void LogCapture::clear() {
  std::lock_guard lock(log_mu);
  log_lines.clear();
}

std::string LogCapture::tail(std::size_t lines) const {
  std::lock_guard lock(log_mu);
  std::string out;
  const std::size_t from = log_lines.size() > lines ? log_lines.size() - lines : 0;
  for (std::size_t i = from; i < log_lines.size(); ++i) {
    out += log_lines[i];
    if (out.back() != '\n') out += '\n';
  }
  return out;
}

// ---- The loop ----

std::string_view to_string(FaultMode mode) {
  switch (mode) {
    case FaultMode::transient: return "transient";
    case FaultMode::dead_disk: return "dead disk";
    case FaultMode::disk_full: return "disk full";
  }
  return "?";
}

Answer intake_answer(const HttpResponse& r) {
  if (r.status == 201 || (r.status == 200 && r.header("Idempotent-Replayed") == "true"))
    return Answer::committed;
  if (is_problem(r, 503, "storage-unavailable") || is_problem(r, 503, "storage-busy"))
    return Answer::refused;
  return Answer::other;
}

std::string LoopReport::describe() const {
  std::string out = name + " [" + std::string(to_string(mode)) + "]: " + std::to_string(iterations) +
         " iterations, " + std::to_string(faults) + " faults injected, " + std::to_string(refused) +
         " refused (503 / job failed), " + std::to_string(committed_despite_fault) +
         " committed despite a fault, " + std::to_string(integrity_checks) +
         " integrity checks ok, " + std::to_string(crash_images) + " crash images checked (" +
         std::to_string(crash_images_with_refused_work) + " holding refused work whole); faults by operation:";
  for (const auto& [op, n] : faults_by_operation) out += " " + op + "=" + std::to_string(n);
  return out;
}

std::string storage_temp_dir(const std::string& prefix) {
  // On tmpfs when there is one: the loops test what SQLite and payorch do with failing calls,
  // not the speed of a real fsync, and there are hundreds of iterations.
  const char* base = std::getenv("PAYORCH_STORAGE_TEST_DIR");
  if (base == nullptr) base = ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  return make_temp_dir(prefix, base);
}

namespace {

// A fresh directory holding a copy of the prepared database.
Iteration fresh_iteration(const std::string& template_db, LoopReport& report) {
  Iteration it;
  it.dir = storage_temp_dir("payorch-storage");
  it.db_path = it.dir + "/payorch.db";
  std::filesystem::copy_file(template_db, it.db_path);
  it.report = &report;
  return it;
}

}  // namespace

LoopReport run_fault_loop(const std::string& name, FaultMode mode, const std::string& template_db,
                          const IterationBody& body, int max_iterations) {
  FaultyVfs& vfs = FaultyVfs::install();
  LoopReport report;
  report.name = name;
  report.mode = mode;

  // Disk full: an unfaulted run records the operation's writes; the budgets then stop the
  // disk at the first byte of each write and in its middle (a torn write), and finally let
  // everything fit.
  std::vector<std::uint64_t> budgets;
  if (mode == FaultMode::disk_full) {
    LoopReport calibration = report;
    Iteration it = fresh_iteration(template_db, calibration);
    std::vector<std::uint64_t> sizes;
    it.arm = [&] { vfs.count_only(); };
    it.fault_hit = [] { return false; };
    it.disarm = [&] {
      sizes = vfs.write_sizes();
      vfs.disarm();
    };
    const Answer answer = body(it);
    std::filesystem::remove_all(it.dir);
    REQUIRE_MESSAGE(answer == Answer::committed, name << ": the unfaulted run did not commit");
    REQUIRE_MESSAGE(!sizes.empty(), name << ": the operation wrote nothing");
    std::uint64_t prefix = 0;
    for (std::uint64_t size : sizes) {
      budgets.push_back(prefix);
      if (size > 1) budgets.push_back(prefix + size / 2);
      prefix += size;
    }
    budgets.push_back(prefix);
  }

  for (std::uint64_t n = 1;; ++n) {
    if (static_cast<int>(n) > max_iterations ||
        (mode == FaultMode::disk_full && n > budgets.size())) {
      FAIL(name << " [" << to_string(mode) << "]: still hitting faults after " << n - 1
                << " iterations");
      break;
    }
    Iteration it = fresh_iteration(template_db, report);
    it.arm = [&vfs, mode, n, &budgets] {
      switch (mode) {
        case FaultMode::transient: vfs.arm_once(n); break;
        case FaultMode::dead_disk: vfs.arm_from(n); break;
        case FaultMode::disk_full: vfs.arm_disk_full(budgets[n - 1]); break;
      }
    };
    it.disarm = [&vfs] { vfs.disarm(); };
    it.fault_hit = [&vfs] { return vfs.fault_count() > 0; };
    it.persistent = mode != FaultMode::transient;
    Answer answer = Answer::other;
    {
      INFO(name << " [" << to_string(mode) << "] iteration N=" << n);
      answer = body(it);
    }
    vfs.disarm();
    const std::uint64_t faults = vfs.fault_count();
    for (const InjectedFault& f : vfs.faults()) ++report.faults_by_operation[std::string(to_string(f.op))];
    ++report.iterations;
    report.faults += faults;
    if (answer == Answer::refused) ++report.refused;
    if (answer == Answer::committed && faults > 0) ++report.committed_despite_fault;
    if (std::getenv("PAYORCH_KEEP_TEST_DIRS") == nullptr) std::filesystem::remove_all(it.dir);
    if (faults == 0) {
      CHECK_MESSAGE(answer == Answer::committed,
                    name << ": the iteration that reached no fault did not commit");
      break;
    }
  }
  MESSAGE(report.describe());
  std::printf("storage_faults: %s\n", report.describe().c_str());
  std::fflush(stdout);
  return report;
}

}  // namespace payorch::test
