// payorch-vendor-sim: wiring only. The demo payment vendor and test double of the `sim`
// protocol (docs/contract.md §5); its behaviour lives in src/vendor_sim/.
//
// Threads: two run the HTTP server (sockets only); one, the logic thread, owns the ledger, the
// faults, the clock offset and every timer, so the sim's state needs no locks and a slow fsync
// never stalls a socket.
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "vendor_sim/control.h"
#include "vendor_sim/dispatcher.h"
#include "vendor_sim/ledger.h"
#include "vendor_sim/listener.h"
#include "vendor_sim/options.h"
#include "vendor_sim/routes.h"
#include "vendor_sim/sim_state.h"
#include "vendor_sim/vendor.h"
#include "util/log.h"
#include "util/os_random.h"
#include "util/system_clock.h"

namespace {

using namespace payorch;
namespace net = boost::asio;

constexpr unsigned http_threads = 2;
// After SIGTERM, connections still open after this are abandoned.
constexpr std::chrono::seconds drain_limit{5};

// Written atomically (temp + rename) so a reader never sees a partial number.
void write_port_file(const std::string& path, std::uint16_t port) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << port << "\n";
    if (!out) throw std::runtime_error("cannot write " + tmp);
  }
  std::filesystem::rename(tmp, path);
}

vendor_sim::DispatcherSettings dispatcher_settings(const vendor_sim::Options& o) {
  vendor_sim::DispatcherSettings s;
  if (!o.callback_url.empty()) s.callback_url = vendor_sim::parse_http_url(o.callback_url);
  s.secret = o.callback_secret;
  s.initial_backoff = o.callback_initial_backoff;
  s.max_backoff = o.callback_max_backoff;
  s.horizon = o.callback_horizon;
  s.timeout = o.callback_timeout;
  return s;
}

int serve(const vendor_sim::Options& o) {
  SystemClock wall;
  OsRandom rng;
  const std::filesystem::path db_dir = std::filesystem::path(o.db_path).parent_path();
  if (!db_dir.empty()) std::filesystem::create_directories(db_dir);

  // Declared first, destroyed last: handlers left in the logic context hold HTTP responders.
  net::io_context http_ioc;
  net::io_context logic_ioc{1};
  vendor_sim::Ledger ledger(o.db_path, rng);
  vendor_sim::SimState state(wall, o.config, !o.callback_url.empty());
  vendor_sim::Dispatcher dispatcher(logic_ioc.get_executor(), ledger, state, wall, dispatcher_settings(o));
  vendor_sim::Vendor vendor(logic_ioc.get_executor(), ledger, state, o.key_retention, o.pending_delay,
                     [&dispatcher] { dispatcher.kick(); });
  for (const vendor_sim::Fault& f : o.faults) vendor.faults().push(f);
  vendor_sim::Control control(vendor, ledger, state, dispatcher);
  vendor_sim::Routes routes(logic_ioc.get_executor(), vendor, control, o.api_key);
  vendor_sim::Listener listener(http_ioc, [&routes](vendor_sim::Request&& req,
                                                    vendor_sim::Responder done) {
    routes.handle(std::move(req), std::move(done));
  });
  listener.listen(o.listen_host, o.listen_port);
  if (o.port_file) write_port_file(*o.port_file, listener.port());
  log::info("sim.listening", "control API /_sim/ is unauthenticated: test and demo use only",
            {{"listen", o.listen_host + ":" + std::to_string(listener.port())},
             {"ledger", o.db_path},
             {"callbacks", o.callback_url.empty() ? std::string("off") : o.callback_url}});
  dispatcher.start();

  // SIGTERM/SIGINT: stop accepting, cancel the sim's delays (held answers close, delayed
  // commits never happen, as in a crash), let open requests finish, exit 0.
  net::signal_set signals(http_ioc, SIGTERM, SIGINT);
  net::steady_timer drain_timer(http_ioc);
  const auto logic_guard = net::make_work_guard(logic_ioc);
  MonotonicTime drain_deadline;
  std::function<void()> wait_drained = [&] {
    if (listener.open_connections() == 0 || wall.monotonic() > drain_deadline) {
      http_ioc.stop();
      logic_ioc.stop();
      return;
    }
    drain_timer.expires_after(std::chrono::milliseconds(20));
    drain_timer.async_wait([&](boost::system::error_code) { wait_drained(); });
  };
  signals.async_wait([&](boost::system::error_code ec, int signo) {
    if (ec) return;
    log::info("sim.stopping", "draining", {{"signal", signo}});
    listener.stop_accepting();
    net::post(logic_ioc, [&] {
      vendor.shutdown();
      dispatcher.stop();
    });
    drain_deadline = wall.monotonic() + drain_limit;
    wait_drained();
  });

  std::thread logic_thread([&] { logic_ioc.run(); });
  std::vector<std::thread> threads;
  for (unsigned i = 1; i < http_threads; ++i) threads.emplace_back([&] { http_ioc.run(); });
  http_ioc.run();
  for (auto& t : threads) t.join();
  logic_thread.join();
  log::info("sim.stopped", "");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  log::set_program("payorch-vendor-sim");
  vendor_sim::Options options;
  try {
    options = vendor_sim::parse_options(argc, argv);
  } catch (const vendor_sim::UsageError& e) {
    std::fprintf(stderr, "payorch-vendor-sim: %s\n\n%.*s", e.what(),
                 static_cast<int>(vendor_sim::usage().size()), vendor_sim::usage().data());
    return 2;
  }
  if (options.help) {
    std::fwrite(vendor_sim::usage().data(), 1, vendor_sim::usage().size(), stdout);
    return 0;
  }
  try {
    return serve(options);
  } catch (const std::exception& e) {
    log::error("sim.fatal", e.what());
    return 1;
  }
}
