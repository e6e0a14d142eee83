// payorchd: wiring only. Every decision lives in the libraries under src/.
#include <systemd/sd-daemon.h>

#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
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
#include "http/server.h"
#include "store/database.h"
#include "store/migrations.h"
#include "store/read_pool.h"
#include "store/writer.h"
#include "util/failpoint.h"
#include "util/metrics.h"
#include "util/os_random.h"
#include "util/system_clock.h"

namespace {

using namespace payorch;

constexpr const char* usage =
    "usage: payorchd <command> [--config FILE]\n"
    "  serve --config FILE [--port-file FILE]   run the daemon\n"
    "  check-config --config FILE               validate the configuration and exit\n"
    "  migrate --config FILE                    apply schema migrations and exit\n"
    "  version                                  print the version\n"
    "  status | recon ... | payment show ID     operator commands against the running daemon\n"
    "                                           (payorchd recon --help)\n";

struct Args {
  std::string command;
  std::string config_path = "/etc/payorch/payorchd.yaml";
  std::optional<std::string> port_file;
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
    } else if (ops::is_operator_command(a.command)) {
      a.rest.push_back(arg);
    } else {
      std::fprintf(stderr, "payorchd: unknown argument '%s'\n", arg.c_str());
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

int serve(const config::Config& cfg, const Args& args) {
  failpoint::arm_from_environment();
  SystemClock clock;
  OsRandom rng;

  auto report = store::prepare_database(cfg.database.path, clock.now_ms());
  std::fprintf(stderr, "payorchd: database %s at schema version %d (%d migrations applied)\n",
               cfg.database.path.c_str(), report.schema_version, report.migrations_applied);

  store::Writer writer(cfg.database.path,
                       store::WriterOptions{cfg.database.busy_retries, cfg.database.busy_timeout,
                                            cfg.database.max_batch});
  store::ReadPool reads(cfg.database.path, 4, cfg.database.busy_timeout);
  writer.start();

  boost::asio::io_context ioc;
  ChangeNotifier changes;
  Metrics metrics;

  // Vendors: one HTTP client (connection pools, TLS context) shared by every adapter.
  net::HttpClient vendor_client(ioc.get_executor());
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
                                  out.push_back({p.name, engine.intake_paused(p.name), engine.last_error(p.name)});
                                return out;
                              },
                              &admin, &callbacks, &metrics});
  http::Server server(ioc, cfg.server, api);
  server.start();
  engine.start();
  deliverer.start();
  retention.start();
  api.set_ready();
  if (args.port_file) write_port_file(*args.port_file, server.port());
  std::fprintf(stderr, "payorchd: listening on %s:%u\n", cfg.server.listen_host.c_str(), server.port());
  sd_notify(0, "READY=1");

  // SIGTERM/SIGINT: stop intake (503 shutting-down), stop accepting, let requests, vendor calls
  // and webhook pushes in flight finish (each bounded by its timeout) and record their results,
  // release leases, then close the database.
  boost::asio::signal_set signals(ioc, SIGTERM, SIGINT);
  boost::asio::steady_timer drain_timer(ioc);
  auto drain_deadline = std::chrono::steady_clock::now();
  std::atomic<bool> engine_stopped{false};
  std::atomic<bool> deliverer_stopped{false};
  std::function<void()> wait_drained = [&] {
    const bool drained = server.open_sessions() == 0 && engine_stopped && deliverer_stopped;
    if (drained || std::chrono::steady_clock::now() > drain_deadline) {
      ioc.stop();
      return;
    }
    drain_timer.expires_after(std::chrono::milliseconds(20));
    drain_timer.async_wait([&](boost::system::error_code) { wait_drained(); });
  };
  signals.async_wait([&](boost::system::error_code ec, int signo) {
    if (ec) return;
    std::fprintf(stderr, "payorchd: signal %d: draining\n", signo);
    sd_notify(0, "STOPPING=1");
    api.set_draining();
    server.stop_accepting();
    engine.stop([&] { engine_stopped = true; });
    deliverer.stop([&] { deliverer_stopped = true; });
    retention.stop();
    drain_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(40);
    wait_drained();
  });

  unsigned n_threads = std::max(2u, std::min(4u, std::thread::hardware_concurrency()));
  std::vector<std::thread> threads;
  for (unsigned i = 1; i < n_threads; ++i) threads.emplace_back([&] { ioc.run(); });
  ioc.run();
  for (auto& t : threads) t.join();
  writer.stop();
  std::fprintf(stderr, "payorchd: stopped\n");
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
      !operator_command) {
    std::fputs(usage, stderr);
    return 2;
  }
  config::Config cfg;
  try {
    cfg = config::load(args->config_path);
  } catch (const config::ConfigError& e) {
    std::fprintf(stderr, "payorchd: invalid configuration:\n%s\n", e.what());
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
      auto report = store::prepare_database(cfg.database.path, clock.now_ms());
      std::printf("%s: schema version %d (%d migrations applied)\n", cfg.database.path.c_str(),
                  report.schema_version, report.migrations_applied);
      return 0;
    }
    return serve(cfg, *args);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "payorchd: %s\n", e.what());
    return 1;
  }
}
