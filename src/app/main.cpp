// payorchd: wiring only. Every decision lives in the libraries under src/.
#include <systemd/sd-daemon.h>

#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "config/config.h"
#include "delivery/deliverer.h"
#include "engine/engine.h"
#include "net/http_client.h"
#include "providers/registry.h"
#include "util/change_notifier.h"
#include "http/admin_api.h"
#include "http/callbacks_api.h"
#include "ops/cli.h"
#include "http/api.h"
#include "http/instrumented.h"
#include "http/server.h"
#include "store/commit_mark.h"
#include "store/database.h"
#include "store/migrations.h"
#include "store/payments.h"
#include "store/engine_store.h"
#include "store/read_pool.h"
#include "store/writer.h"
#include "util/failpoint.h"
#include "util/log.h"
#include "util/metrics.h"
#include "util/os_random.h"
#include "util/system_clock.h"

namespace {

using namespace payorch;

constexpr const char* usage =
    "usage: payorchd <command> [--config FILE]\n"
    "  serve --config FILE [--port-file FILE]   run the daemon\n"
    "        [--accept-lost-commits]            start even though the database is behind its\n"
    "                                           commit mark (docs/operations.md, \"Lost commits\")\n"
    "  check-config --config FILE               validate the configuration and exit\n"
    "  migrate --config FILE                    apply schema migrations and exit\n"
    "  check-exposure --config FILE             recount the risk exposure from the payments and\n"
    "                                           compare it with the kept figures (exit 1 on a\n"
    "                                           difference); safe beside a running daemon\n"
    "  version                                  print the version\n"
    "  status | recon ... | payment show ID     operator commands against the running daemon\n"
    "                                           (payorchd recon --help)\n";

struct Args {
  std::string command;
  std::string config_path = "/etc/payorch/payorchd.yaml";
  std::optional<std::string> port_file;
  bool accept_lost_commits = false;
  std::vector<std::string> rest;  // an operator command's own arguments
};

std::optional<Args> parse_args(int argc, char** argv) {
  if (argc < 2) return std::nullopt;
  Args a;
  a.command = argv[1];
  for (int i = 2; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::optional<std::string> {
      if (i + 1 >= argc) return std::nullopt;
      return std::string(argv[++i]);
    };
    if (arg == "--config") {
      auto v = value();
      if (!v) return std::nullopt;
      a.config_path = *v;
    } else if (arg == "--port-file") {
      auto v = value();
      if (!v) return std::nullopt;
      a.port_file = *v;
    } else if (arg == "--accept-lost-commits" && a.command == "serve") {
      a.accept_lost_commits = true;
    } else if (ops::is_operator_command(a.command)) {
      a.rest.push_back(arg);
    } else {
      log::error("cli.usage", "unknown argument", {{"argument", arg}});
      return std::nullopt;
    }
  }
  return a;
}

// Written atomically so a reader never sees a partial number.
void write_port_file(const std::string& path, std::uint16_t port) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << port << "\n";
    if (!out) throw std::runtime_error("cannot write " + tmp);
  }
  std::filesystem::rename(tmp, path);
}

// How long a SIGTERM drain may take before payorchd gives up on what is still in flight. Below
// the unit's TimeoutStopSec (45s), so that systemd never has to SIGKILL a drain.
constexpr std::chrono::seconds drain_limit{40};

// The single-instance lock of the database, unless PAYORCH_TEST_SHARED_DATABASE=1. That
// variable is for tests only (like PAYORCH_FAILPOINTS): the stale-worker test runs two payorchd
// on one file on purpose, to show that fencing alone keeps the data right.
std::optional<store::InstanceLock> lock_database(const std::string& path) {
  const char* shared = std::getenv("PAYORCH_TEST_SHARED_DATABASE");
  if (shared != nullptr && std::string_view(shared) == "1") {
    log::warn("database.lock_skipped",
              "PAYORCH_TEST_SHARED_DATABASE=1 (test only): not taking the single-instance lock",
              {{"path", path}});
    return std::nullopt;
  }
  return std::optional<store::InstanceLock>(std::in_place, path);
}

// Whether the database may be served: not when it is behind its commit mark (store/commit_mark.h)
// — it has lost transactions it committed and acknowledged, a deleted -wal file or an older copy
// of the file — unless the operator, having looked, says so with --accept-lost-commits; then the
// mark is brought down to the database, so that the next start is an ordinary one.
bool commits_intact_or_accepted(const std::string& path, bool accept_lost_commits) {
  const std::string mark = store::commit_mark_path(path);
  const store::CommitMarkCheck check = store::check_commit_mark(path);
  if (!check.database_behind()) return true;
  const std::string figures =
      "database " + path + " holds commits up to number " + std::to_string(check.database_seq) +
      ", but its commit mark " + mark + " says commit number " + std::to_string(*check.mark_seq) +
      " had committed: at least " + std::to_string(*check.mark_seq - check.database_seq) +
      " committed transaction(s), acknowledged payments among them, are not in it (a deleted -wal "
      "file, or an older copy of the database?)";
  const std::initializer_list<log::Field> fields{
      {"path", path},
      {"database_commit_seq", check.database_seq},
      {"mark_commit_seq", *check.mark_seq},
      {"mark", mark}};
  if (!accept_lost_commits) {
    log::error("database.commits_missing",
               figures + "; refusing to start. See \"Lost commits\" in docs/operations.md; once "
                         "you have investigated, start once with --accept-lost-commits",
               fields);
    return false;
  }
  log::warn("database.commits_missing_accepted",
            figures + "; starting anyway (--accept-lost-commits): the commit mark now follows the database",
            fields);
  store::write_commit_mark(mark, check.database_seq);
  return true;
}

// A drain waits for vendor calls and webhook pushes in flight; one that may outlast
// drain_limit would be cut off (its lease then lapses and recovery treats the call as UNKNOWN).
void warn_about_slow_drain(const config::Config& cfg) {
  for (const auto& p : cfg.providers)
    if (p.timeouts.connect + p.contract.request_timeout > drain_limit)
      log::warn("drain.limit_short",
                "a vendor call may outlast the SIGTERM drain; keep timeouts.connect + "
                "timeouts.request under 40s",
                {{"provider", p.name}});
  for (const auto& t : cfg.tenants)
    if (t.webhook && t.webhook->timeout > drain_limit)
      log::warn("drain.limit_short",
                "a webhook push may outlast the SIGTERM drain; keep webhook.timeout under 40s",
                {{"tenant", t.id}});
}

// systemd's watchdog (WatchdogSec=, seen as WATCHDOG_USEC): every `interval` a no-op job goes
// through the store's writer, and once the writer thread has run it, WATCHDOG=1 is sent from
// the io_context. So a ping proves both that the event loop runs handlers and that the single
// writer still takes work; if either is stuck the pings stop and systemd restarts payorchd.
// A probe still outstanding when the next one is due is not doubled.
class Watchdog {
public:
  Watchdog(boost::asio::io_context& ioc, store::Writer& writer, std::chrono::microseconds interval)
      : strand_(boost::asio::make_strand(ioc)), timer_(strand_), writer_(writer),
        interval_(interval) {}

  void start() {
    boost::asio::post(strand_, [this] { probe(); });
  }
  // No ping is sent once this returns (the drain has begun: STOPPING=1 comes after it).
  void stop() {
    {
      std::lock_guard lock(mu_);
      stopped_ = true;
    }
    boost::asio::post(strand_, [this] { timer_.cancel(); });
  }

private:
  bool stopped() {
    std::lock_guard lock(mu_);
    return stopped_;
  }

  void probe() {
    if (stopped()) return;
    if (!probing_) {
      probing_ = true;
      writer_.submit([](store::Db&) {},
                     [this](store::WriteStatus status, const std::string&) {
                       boost::asio::post(strand_, [this, status] {
                         probing_ = false;
                         // Any answer but `stopped` shows the writer thread at work (a busy or
                         // failed disk is reported by the requests themselves, not by a restart).
                         std::lock_guard lock(mu_);
                         if (!stopped_ && status != store::WriteStatus::stopped)
                           sd_notify(0, "WATCHDOG=1");
                       });
                     });
    }
    timer_.expires_after(interval_);
    timer_.async_wait([this](boost::system::error_code ec) {
      if (!ec) probe();
    });
  }

  boost::asio::strand<boost::asio::io_context::executor_type> strand_;
  boost::asio::steady_timer timer_;
  store::Writer& writer_;
  std::chrono::microseconds interval_;
  bool probing_ = false;  // on strand_ only
  std::mutex mu_;         // orders pings before stop()
  bool stopped_ = false;
};

int serve(const config::Config& cfg, const Args& args) {
  failpoint::arm_from_environment();
  SystemClock clock;
  OsRandom rng;

  // Before the database is opened: a second instance must not migrate or touch it.
  const std::optional<store::InstanceLock> instance_lock = lock_database(cfg.database.path);
  auto report = store::prepare_database(cfg.database.path, clock.now_ms());
  log::info("database.ready", "database open and migrated",
            {{"path", cfg.database.path}, {"schema_version", report.schema_version},
             {"migrations_applied", report.migrations_applied}});
  if (!commits_intact_or_accepted(cfg.database.path, args.accept_lost_commits)) return 1;
  warn_about_slow_drain(cfg);

  store::Writer writer(cfg.database.path,
                       store::WriterOptions{.busy_retries = cfg.database.busy_retries,
                                            .busy_timeout = cfg.database.busy_timeout,
                                            .max_batch = cfg.database.max_batch,
                                            .commit_mark_path = store::commit_mark_path(cfg.database.path),
                                            .clock = &clock});
  store::ReadPool reads(cfg.database.path, 4, cfg.database.busy_timeout);
  writer.start();

  boost::asio::io_context ioc;
  ChangeNotifier changes;
  Metrics metrics;
  store::count_transitions_in(metrics);

  // Vendors: one HTTP client (connection pools, TLS context) shared by every adapter.
  // Keep as many idle connections per vendor as calls may be in flight, so that a steady load
  // reuses them instead of connecting for every call.
  net::ClientOptions vendor_options;
  vendor_options.pool.max_idle_per_origin = static_cast<std::size_t>(cfg.engine.workers);
  net::HttpClient vendor_client(ioc.get_executor(), vendor_options);
  std::vector<std::unique_ptr<providers::Adapter>> adapters;
  std::map<std::string, providers::Adapter*> adapter_by_name;
  for (const auto& p : cfg.providers) {
    adapters.push_back(providers::make_adapter(p, ioc.get_executor(), vendor_client));
    adapter_by_name[p.name] = adapters.back().get();
  }
  engine::Engine engine(engine::Engine::Deps{cfg, writer, clock, rng, ioc, adapter_by_name, changes, &metrics});
  // Tenants' webhooks and retention purges.
  delivery::Deliverer deliverer(delivery::Deliverer::Deps{cfg, writer, reads, clock, rng, ioc, metrics});
  delivery::Retention retention(cfg, writer, clock, ioc, metrics);

  http::AdminApi admin(cfg, writer, reads, clock, rng);
  admin.set_on_change([&](const std::string& payment_id) {
    changes.notify(payment_id);
    boost::asio::post(ioc, [&engine] { engine.poll(); });
    deliverer.poke();
  });
  std::map<std::string, const providers::Adapter*> verifiers(adapter_by_name.begin(), adapter_by_name.end());
  http::CallbacksApi callbacks(http::CallbacksApi::Deps{cfg, writer, clock, rng, verifiers, metrics,
                                                        [&](const std::string& payment_id) {
                                                          changes.notify(payment_id);
                                                          deliverer.poke();
                                                        }});
  http::Api api(http::ApiDeps{cfg, writer, reads, clock, rng, ioc.get_executor(), changes,
                              [&engine](const std::string& provider) { return engine.intake_paused(provider); },
                              [&] { boost::asio::post(ioc, [&engine] { engine.poll(); }); deliverer.poke(); },
                              [&] {
                                std::vector<http::ProviderHealth> out;
                                for (const auto& p : cfg.providers)
                                  out.push_back({p.name, engine.intake_paused(p.name), engine.last_error(p.name),
                                                 engine.breaker_state(p.name)});
                                return out;
                              },
                              &admin, &callbacks, &metrics});
  http::InstrumentedHandler instrumented(api, metrics);  // request counts and latencies
  http::Server server(ioc, cfg.server, instrumented);
  server.start();
  engine.start();
  deliverer.start();
  retention.start();
  api.set_ready();
  if (args.port_file) write_port_file(*args.port_file, server.port());
  log::info("server.listening", "listening",
            {{"host", cfg.server.listen_host}, {"port", unsigned{server.port()}}});
  // Migrations are applied and the listener is up: systemd may now order dependants after us.
  sd_notify(0, "READY=1");
  std::optional<Watchdog> watchdog;
  if (std::uint64_t usec = 0; sd_watchdog_enabled(0, &usec) > 0) {
    watchdog.emplace(ioc, writer, std::chrono::microseconds(std::max<std::uint64_t>(usec / 2, 1000)));
    watchdog->start();
    log::info("watchdog.enabled", "pinging systemd's watchdog at half its period",
              {{"watchdog_usec", usec}});
  }

  // SIGTERM/SIGINT: stop intake (503 shutting-down), stop accepting, let requests, vendor calls
  // and webhook pushes in flight finish (each bounded by its timeout) and record their results,
  // release leases, then close the database. A drain still unfinished after drain_limit is cut
  // off (exit 1): the leases of calls still in flight lapse and recovery treats them as UNKNOWN.
  boost::asio::signal_set signals(ioc, SIGTERM, SIGINT);
  boost::asio::steady_timer drain_timer(ioc);
  auto drain_deadline = std::chrono::steady_clock::now();
  std::atomic<bool> engine_stopped{false};
  std::atomic<bool> deliverer_stopped{false};
  std::atomic<bool> drain_complete{false};
  std::function<void()> wait_drained = [&] {
    const bool drained = server.open_sessions() == 0 && engine_stopped && deliverer_stopped;
    if (drained || std::chrono::steady_clock::now() > drain_deadline) {
      drain_complete = drained;
      if (!drained)
        log::error("shutdown.drain_incomplete", "drain limit reached; stopping with work in flight",
                   {{"open_sessions", std::uint64_t{server.open_sessions()}},
                    {"engine_stopped", engine_stopped.load()},
                    {"deliverer_stopped", deliverer_stopped.load()}});
      ioc.stop();
      return;
    }
    drain_timer.expires_after(std::chrono::milliseconds(20));
    drain_timer.async_wait([&](boost::system::error_code) { wait_drained(); });
  };
  signals.async_wait([&](boost::system::error_code ec, int signo) {
    if (ec) return;
    log::info("shutdown.draining", "draining", {{"signal", signo}});
    if (watchdog) watchdog->stop();
    sd_notify(0, "STOPPING=1");
    api.set_draining();
    server.stop_accepting();
    engine.stop([&] { engine_stopped = true; });
    deliverer.stop([&] { deliverer_stopped = true; });
    retention.stop();
    drain_deadline = std::chrono::steady_clock::now() + drain_limit;
    wait_drained();
  });

  unsigned n_threads = std::max(2u, std::min(4u, std::thread::hardware_concurrency()));
  std::vector<std::thread> threads;
  for (unsigned i = 1; i < n_threads; ++i) threads.emplace_back([&] { ioc.run(); });
  ioc.run();
  for (auto& t : threads) t.join();
  writer.stop();
  if (!drain_complete) return 1;
  log::info("shutdown.done", "stopped");
  return 0;
}

// Reads the kept exposure and a recount from the payments in one read transaction (a WAL
// snapshot: consistent even while the daemon writes) and prints every difference.
int check_exposure(const config::Config& cfg) {
  store::Db db(cfg.database.path, store::Db::Mode::read_only);
  db.exec("BEGIN");  // deferred: the first read fixes the snapshot both figures come from
  const auto kept = store::exposure(db);
  const auto differences = store::exposure_differences(db);
  db.exec("COMMIT");
  for (const auto& line : differences) std::printf("difference: %s\n", line.c_str());
  if (!differences.empty()) {
    std::fprintf(stderr, "%s: the kept exposure differs from the payments in %zu place(s)\n",
                 cfg.database.path.c_str(), differences.size());
    return 1;
  }
  for (const auto& r : kept)
    std::printf("%s %s: %lld payment(s), %lld minor units\n", r.provider.c_str(), r.currency.c_str(),
                static_cast<long long>(r.count), static_cast<long long>(r.amount_minor));
  std::printf("%s: exposure ok (%zu provider/currency row(s) exposed)\n", cfg.database.path.c_str(), kept.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  auto args = parse_args(argc, argv);
  if (!args) {
    std::fputs(usage, stderr);
    return 2;
  }
  if (args->command == "version" || args->command == "--version") {
    std::printf("payorchd %s\n", PAYORCH_VERSION);
    return 0;
  }
  const bool operator_command = ops::is_operator_command(args->command);
  if (args->command != "serve" && args->command != "check-config" && args->command != "migrate" &&
      args->command != "check-exposure" && !operator_command) {
    std::fputs(usage, stderr);
    return 2;
  }
  config::Config cfg;
  try {
    cfg = config::load(args->config_path);
  } catch (const config::ConfigError& e) {
    // The commands answer a person at a terminal: the report as is, one problem per line. The
    // daemon logs each problem as an event.
    if (args->command != "serve") {
      std::fprintf(stderr, "payorchd: invalid configuration:\n%s\n", e.what());
      return 2;
    }
    std::string_view report = e.what();
    while (!report.empty()) {
      const std::size_t nl = report.find('\n');
      log::error("config.invalid", report.substr(0, nl), {{"config", args->config_path}});
      report = nl == std::string_view::npos ? std::string_view{} : report.substr(nl + 1);
    }
    return 2;
  }
  if (operator_command) return ops::run_operator_command(cfg, args->command, args->rest);
  if (args->command == "check-config") {
    std::printf("%s: ok\n", args->config_path.c_str());
    return 0;
  }
  try {
    if (args->command == "migrate") {
      SystemClock clock;
      const std::optional<store::InstanceLock> instance_lock = lock_database(cfg.database.path);
      auto report = store::prepare_database(cfg.database.path, clock.now_ms());
      std::printf("%s: schema version %d (%d migrations applied)\n", cfg.database.path.c_str(),
                  report.schema_version, report.migrations_applied);
      return 0;
    }
    if (args->command == "check-exposure") return check_exposure(cfg);
    return serve(cfg, *args);
  } catch (const store::DatabaseInUse& e) {
    log::error("database.in_use", e.what(), {{"path", cfg.database.path}});
    return 1;
  } catch (const std::exception& e) {
    log::error("startup.failed", e.what());
    return 1;
  }
}
