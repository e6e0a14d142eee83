// payorchd: wiring only. Every decision lives in the libraries under src/.
#include <systemd/sd-daemon.h>

#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "config/config.h"
#include "config/secrets.h"
#include "daemon/backup.h"
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
    "usage: payorchd <command> [options]       payorchd <command> --help for its options\n"
    "Daemon (they read the daemon's configuration, --config FILE, default\n"
    "/etc/payorch/payorchd.yaml):\n"
    "  serve            run the daemon\n"
    "  check-config     validate the configuration and exit\n"
    "  migrate          apply schema migrations and exit\n"
    "  check-exposure   recount the risk exposure and compare it with the kept figures\n"
    "  backup           copy the SQLite database while the daemon runs\n"
    "  restore          put a backup in place of the SQLite database (daemon stopped)\n"
    "  version          print the version\n"
    "Operator commands, against the running daemon's admin API (--url and --token-file, or\n"
    "--client-config FILE, or --config FILE):\n"
    "  status                        the daemon's status\n"
    "  recon list|show|resolve|import reconciliation cases\n"
    "  payment show ID               a payment, by pay_ id or operation_id\n"
    "  refund show ID                a refund, by re_ id or operation_id\n"
    "Exit codes: 0 done, 1 failed, 2 usage or configuration error. docs/operations.md.\n";

// Each daemon command's usage, for `payorchd CMD --help`.
std::optional<std::string> command_usage(const std::string& command) {
  static const std::map<std::string, std::string, std::less<>> usages{
      {"serve",
       "usage: payorchd serve [--config FILE] [--port-file FILE] [--accept-lost-commits]\n"
       "  run the daemon (systemd: Type=notify; SIGTERM drains)\n"
       "  --port-file FILE       write the port listened on to FILE once listening\n"
       "  --accept-lost-commits  start even though the database is behind its commit mark\n"
       "                         (docs/operations.md, \"Lost commits\")\n"},
      {"check-config",
       "usage: payorchd check-config [--config FILE] [--json]\n"
       "  validate the configuration (secrets files included) and exit: 0 valid, 2 invalid\n"
       "  with every problem on stderr, one line each (FILE:LINE:COL: key: message)\n"},
      {"migrate",
       "usage: payorchd migrate [--config FILE]\n"
       "  apply the schema migrations this payorchd has and exit\n"},
      {"check-exposure",
       "usage: payorchd check-exposure [--config FILE]\n"
       "  recount the risk exposure from the payments and compare it with the kept figures\n"
       "  (exit 1 on a difference); safe beside a running daemon\n"},
      {"backup",
       "usage: payorchd backup --to FILE [--config FILE] [--json]\n"
       "  a consistent copy of the SQLite database, taken beside the running daemon; refuses an\n"
       "  existing FILE; checks the copy with integrity_check. PostgreSQL: pg_dump (exit 2)\n"},
      {"restore",
       "usage: payorchd restore --from BACKUP [--config FILE] [--json]\n"
       "  put BACKUP in place of the SQLite database; refused while a daemon runs on it. The\n"
       "  current database is kept as <db>.before-restore-<UTC time>. An older copy is behind\n"
       "  the commit mark: read docs/operations.md, \"Backup and restore\", before serving it\n"},
      {"version", "usage: payorchd version [--json]\n  print the version\n"},
  };
  if (auto it = usages.find(command); it != usages.end()) return it->second;
  if (ops::is_operator_command(command)) return ops::operator_usage(command);
  return std::nullopt;
}

struct Args {
  std::string command;
  std::string config_path = "/etc/payorch/payorchd.yaml";
  std::optional<std::string> port_file;
  std::optional<std::string> backup_to;
  std::optional<std::string> restore_from;
  bool accept_lost_commits = false;
  bool json = false;
};

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The options of a daemon command (operator commands parse their own: ops/cli.h).
Args parse_args(const std::string& command, const std::vector<std::string>& argv) {
  Args a;
  a.command = command;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argv.size()) throw UsageError(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--config" && command != "version") a.config_path = value();
    else if (arg == "--port-file" && command == "serve") a.port_file = value();
    else if (arg == "--accept-lost-commits" && command == "serve") a.accept_lost_commits = true;
    else if (arg == "--to" && command == "backup") a.backup_to = value();
    else if (arg == "--from" && command == "restore") a.restore_from = value();
    else if (arg == "--json" && (command == "backup" || command == "restore" || command == "check-config" ||
                                 command == "version"))
      a.json = true;
    else throw UsageError("unknown argument '" + arg + "'");
  }
  if (command == "backup" && !a.backup_to) throw UsageError("--to FILE is required");
  if (command == "restore" && !a.restore_from) throw UsageError("--from BACKUP is required");
  return a;
}

// SIGHUP: loads the configuration file again and publishes its secrets (config/secrets.h) and
// the listener's certificate; nothing else changes without a restart. A file that does not
// load changes nothing. Messages name files and lines, never a secret.
void reload_secrets(const config::Config& running, const std::string& path, http::Server& server) {
  config::Config next;
  try {
    next = config::load(path);
  } catch (const config::ConfigError& e) {
    std::string_view report = e.what();
    while (!report.empty()) {
      const std::size_t nl = report.find('\n');
      log::error("config.reload_failed", report.substr(0, nl),
                 {{"config", path}, {"kept", "the running configuration and secrets"}});
      report = nl == std::string_view::npos ? std::string_view{} : report.substr(nl + 1);
    }
    return;
  }
  const config::Secrets fresh = config::reloaded_secrets(*running.live->get(), running, next);
  if (running.server.tls && fresh.tls) {
    try {
      server.replace_tls(*fresh.tls);
    } catch (const std::exception& e) {
      log::error("config.reload_failed", e.what(),
                 {{"config", path}, {"kept", "the running configuration and secrets"}});
      return;
    }
  }
  running.live->publish(fresh);
  const std::vector<std::string> restart = config::restart_only_changes(running, next);
  if (!restart.empty()) {
    std::string sections;
    for (const std::string& section : restart) sections += (sections.empty() ? "" : ",") + section;
    log::warn("config.reload_needs_restart",
              "settings other than secrets changed; they take effect at the next restart",
              {{"config", path}, {"sections", sections}});
  }
  log::info("config.reloaded", "secrets reloaded",
            {{"config", path},
             {"operators", std::uint64_t{fresh.operators.size()}},
             {"tenant_tokens", std::uint64_t{fresh.tenant_tokens.size()}},
             {"webhook_secrets", std::uint64_t{fresh.webhook_secrets.size()}},
             {"provider_secrets", std::uint64_t{fresh.api_keys.size()}},
             {"tls", running.server.tls && fresh.tls}});
}

int serve(const config::Config& cfg, const Args& args) {
  failpoint::arm_from_environment();
  SystemClock system_clock;
  OsRandom rng;
  const std::string node_id = daemon::node_id(cfg.engine);
  log::set_node(node_id);
  log::set_level(cfg.log.level);

  // Before the store, which counts transitions in it until it stops.
  Metrics metrics;
  const std::unique_ptr<daemon::ServingStore> serving =
      daemon::ServingStore::open(cfg, system_clock, metrics, args.accept_lost_commits);
  if (!serving) return 1;
  daemon::warn_about_slow_drain(cfg);
  // What the engine, the APIs and delivery see of the database, and the clock they all read:
  // on PostgreSQL the database server's, so that what one node stores another compares on the
  // same clock (docs/postgres.md, "Time across nodes").
  store::Store& store = serving->store();
  const Clock& clock = serving->clock();

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
  // SIGHUP (systemctl reload): secrets only, see reload_secrets. Re-armed after each. Taken
  // before the port file and READY=1, so that a reload is never a SIGHUP's default (exit).
  boost::asio::signal_set hangups(ioc, SIGHUP);
  std::function<void()> await_hangup = [&] {
    hangups.async_wait([&](boost::system::error_code ec, int) {
      if (ec) return;
      log::info("config.reloading", "SIGHUP: reloading secrets", {{"config", args.config_path}});
      reload_secrets(cfg, args.config_path, server);
      await_hangup();
    });
  };
  await_hangup();
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
    watchdog.emplace(ioc, store, clock, std::chrono::microseconds(std::max<std::uint64_t>(usec / 2, 1000)),
                     [] { sd_notify(0, "WATCHDOG=1"); });
    // `watchdog` outlives every scrape: the server's threads are joined before it goes.
    metrics.add_collector([&watchdog] { return watchdog->render_metrics(); });
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
  const std::vector<std::string> all(argv + 1, argv + argc);
  if (all.empty()) {
    std::fputs(usage, stderr);
    return 2;
  }
  const std::string& command = all[0];
  if (command == "--help" || command == "-h" || command == "help") {
    // `payorchd help CMD` is `payorchd CMD --help`.
    const std::optional<std::string> own = all.size() > 1 ? command_usage(all[1]) : std::nullopt;
    std::fputs(own ? own->c_str() : usage, stdout);
    return 0;
  }
  if (command == "--version") {
    std::printf("payorchd %s\n", PAYORCH_VERSION);
    return 0;
  }
  const std::optional<std::string> own_usage = command_usage(command);
  if (!own_usage) {
    std::fprintf(stderr, "payorchd: unknown command '%s'\n%s", command.c_str(), usage);
    return 2;
  }
  const std::vector<std::string> rest(all.begin() + 1, all.end());
  if (std::find_if(rest.begin(), rest.end(), [](const std::string& a) { return a == "--help" || a == "-h"; }) !=
      rest.end()) {
    std::fputs(own_usage->c_str(), stdout);
    return 0;
  }
  if (ops::is_operator_command(command)) return ops::run_operator_command(command, rest);
  std::optional<Args> args;
  try {
    args = parse_args(command, rest);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "payorchd %s: %s\n%s", command.c_str(), e.what(), own_usage->c_str());
    return 2;
  }
  if (args->command == "version") {
    if (args->json) std::printf("{\"version\":\"%s\"}\n", PAYORCH_VERSION);
    else std::printf("payorchd %s\n", PAYORCH_VERSION);
    return 0;
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
  if (args->command == "check-config") {
    if (args->json)
      std::printf("%s\n", boost::json::serialize(boost::json::object{{"config", args->config_path}, {"ok", true}}).c_str());
    else
      std::printf("%s: ok\n", args->config_path.c_str());
    return 0;
  }
  if (args->command == "backup") return daemon::backup_database(cfg, *args->backup_to, args->json);
  if (args->command == "restore") return daemon::restore_database(cfg, *args->restore_from, args->json);
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
    config::make_live(cfg);  // secrets a SIGHUP may replace
    return serve(cfg, *args);
  } catch (const store::DatabaseInUse& e) {
    log::error("database.in_use", e.what(), {{"path", cfg.database.path}});
    return 1;
  } catch (const std::exception& e) {
    log::error("startup.failed", e.what());
    return 1;
  }
}
