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
#include "daemon/check_exposure.h"
#include "daemon/drain.h"
#include "daemon/startup.h"
#include "daemon/watchdog.h"
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
#include "daemon/serving_store.h"
#include "store/database.h"
#include "store/migrations.h"
#include "store/postgres/migrations.h"
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
    "  status | recon ... | payment show ID | refund show ID\n"
    "                                           operator commands against the running daemon\n"
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

int serve(const config::Config& cfg, const Args& args) {
  failpoint::arm_from_environment();
  SystemClock clock;
  OsRandom rng;
  const std::string node_id = daemon::node_id(cfg.engine);
  log::set_node(node_id);
  log::set_level(cfg.log.level);

  // Before the store, which counts transitions in it until it stops.
  Metrics metrics;
  const std::unique_ptr<daemon::ServingStore> serving =
      daemon::ServingStore::open(cfg, clock, metrics, args.accept_lost_commits);
  if (!serving) return 1;
  daemon::warn_about_slow_drain(cfg);
  // What the engine, the APIs and delivery see of the database.
  store::Store& store = serving->store();

  boost::asio::io_context ioc;
  ChangeNotifier changes;

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
  engine::Engine engine(engine::Engine::Deps{cfg, store, clock, rng, ioc, adapter_by_name, changes, &metrics, node_id});
  log::info("engine.owner", "this run's lease owner id", {{"lease_owner", engine.owner()}});
  // Tenants' webhooks and retention purges.
  delivery::Deliverer deliverer(delivery::Deliverer::Deps{cfg, store, clock, rng, ioc, metrics});
  delivery::Retention retention(cfg, store, clock, ioc, metrics);

  http::AdminApi admin(cfg, store, clock, rng);
  admin.set_on_change([&](const std::string& payment_id) {
    changes.notify(payment_id);
    boost::asio::post(ioc, [&engine] { engine.poll(); });
    deliverer.poke();
  });
  std::map<std::string, const providers::Adapter*> verifiers(adapter_by_name.begin(), adapter_by_name.end());
  http::CallbacksApi callbacks(http::CallbacksApi::Deps{cfg, store, clock, rng, verifiers, metrics,
                                                        [&](const std::string& payment_id) {
                                                          changes.notify(payment_id);
                                                          deliverer.poke();
                                                        }});
  http::Api api(http::ApiDeps{cfg, store, clock, rng, ioc.get_executor(), changes,
                              [&engine](const std::string& provider) { return engine.intake_paused(provider); },
                              [&] { boost::asio::post(ioc, [&engine] { engine.poll(); }); deliverer.poke(); },
                              [&] {
                                std::vector<http::ProviderHealth> out;
                                for (const auto& p : cfg.providers)
                                  out.push_back({p.name, engine.intake_paused(p.name), engine.last_error(p.name),
                                                 engine.breaker_state(p.name)});
                                return out;
                              },
                              &admin, &callbacks, &metrics, node_id, engine.owner()});
  // Request ids, counts, latencies and the access log.
  http::InstrumentedHandler instrumented(api, metrics, clock, rng, cfg.log.access);
  http::Server server(ioc, cfg.server, instrumented);
  server.start();
  engine.start();
  deliverer.start();
  retention.start();
  api.set_ready();
  if (args.port_file) daemon::write_port_file(*args.port_file, server.port());
  log::info("server.listening", "listening",
            {{"host", cfg.server.listen_host}, {"port", unsigned{server.port()}}});
  // Migrations are applied and the listener is up: systemd may now order dependants after us.
  sd_notify(0, "READY=1");
  std::optional<daemon::Watchdog> watchdog;
  if (std::uint64_t usec = 0; sd_watchdog_enabled(0, &usec) > 0) {
    watchdog.emplace(ioc, store, std::chrono::microseconds(std::max<std::uint64_t>(usec / 2, 1000)),
                     [] { sd_notify(0, "WATCHDOG=1"); });
    watchdog->start();
    log::info("watchdog.enabled", "pinging systemd's watchdog at half its period",
              {{"watchdog_usec", usec}});
  }

  // SIGTERM/SIGINT: stop intake (503 shutting-down), stop accepting, let requests, vendor calls
  // and webhook pushes in flight finish (each bounded by its timeout) and record their results,
  // release leases, then close the database. A drain still unfinished after drain_limit is cut
  // off (exit 1): the leases of calls still in flight lapse and recovery treats them as UNKNOWN.
  boost::asio::signal_set signals(ioc, SIGTERM, SIGINT);
  std::atomic<bool> engine_stopped{false};
  std::atomic<bool> deliverer_stopped{false};
  std::atomic<bool> drain_complete{false};
  daemon::DrainWait drain(
      ioc, clock, [&] { return server.open_sessions() == 0 && engine_stopped && deliverer_stopped; },
      [&](bool drained) {
        drain_complete = drained;
        if (!drained)
          log::error("shutdown.drain_incomplete", "drain limit reached; stopping with work in flight",
                     {{"open_sessions", std::uint64_t{server.open_sessions()}},
                      {"engine_stopped", engine_stopped.load()},
                      {"deliverer_stopped", deliverer_stopped.load()}});
        ioc.stop();
      });
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
    drain.start(daemon::drain_limit);
  });

  unsigned n_threads = std::max(2u, std::min(4u, std::thread::hardware_concurrency()));
  std::vector<std::thread> threads;
  for (unsigned i = 1; i < n_threads; ++i) threads.emplace_back([&] { ioc.run(); });
  ioc.run();
  for (auto& t : threads) t.join();
  serving->stop();
  if (!drain_complete) return 1;
  log::info("shutdown.done", "stopped");
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
      const auto migrated = [](const std::string& where, const store::OpenReport& report) {
        std::printf("%s: schema version %d (%d migrations applied)\n", where.c_str(),
                    report.schema_version, report.migrations_applied);
        return 0;
      };
      // Several at once are safe: the runner takes an advisory lock.
      if (cfg.database.driver == "postgres")
        return migrated(daemon::database_where(cfg.database),
                        store::pg::prepare_database(cfg.database.url, clock.now_ms()));
      const std::optional<store::InstanceLock> instance_lock = daemon::lock_database(cfg.database.path);
      return migrated(daemon::database_where(cfg.database), store::prepare_database(cfg.database.path, clock.now_ms()));
    }
    if (args->command == "check-exposure") return daemon::check_exposure(cfg);
    return serve(cfg, *args);
  } catch (const store::DatabaseInUse& e) {
    log::error("database.in_use", e.what(), {{"path", cfg.database.path}});
    return 1;
  } catch (const std::exception& e) {
    log::error("startup.failed", e.what());
    return 1;
  }
}
