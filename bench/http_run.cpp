// One HTTP level: a fresh database and daemon, C client threads with one keep-alive connection
// each posting intents until the level's request count or time cap is reached, then SIGTERM and
// a row count that must equal the 201s received (a 201 promises a durable row).
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <atomic>
#include <condition_variable>
#include <fstream>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench/daemon_process.h"
#include "bench/intake_bench.h"

namespace payorch::bench {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;
using namespace std::chrono_literals;

constexpr const char* tenant_token = "bench-token-123";
// A level that has not finished this long after its time cap is stuck: the daemon is killed,
// which fails every blocked read, so the benchmark always stops by itself.
constexpr auto stuck_grace = 15s;
// Longer than the daemon's own 30 s drain deadline.
constexpr auto terminate_timeout = 35s;

std::string yaml_quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// The provider is never called by intake: base_url is the discard port, and the risk caps are
// far above anything a run can reach so intake is never paused.
std::string daemon_config(const std::string& db_path) {
  return "server: {listen: \"127.0.0.1:0\"}\n"
         "database: {driver: sqlite, path: " + yaml_quoted(db_path) + "}\n"
         "admin: {token: \"bench-admin-token-123\"}\n"
         "tenants:\n"
         "  - {id: bench, token: \"" + std::string(tenant_token) + "\"}\n"
         "providers:\n"
         "  - name: sim\n"
         "    adapter: sim\n"
         "    base_url: \"http://127.0.0.1:9\"\n"
         "    api_key: \"bench-sim-key-123\"\n"
         "    timeouts: {connect: 1s, request: 5s}\n"
         "    contract: {key_retention: 24h, recovery: lookup, not_found_final_after: 30s}\n"
         "    retry: {max_attempts: 5, initial_backoff: 1s, max_backoff: 30s, give_up_after: 1h}\n"
         "    risk: {max_unknown_count: 1000000000, max_unknown_amount_minor: 1000000000000000}\n"
         "    callback: {secret: \"bench-callback-secret\", tolerance: 5m, retry_horizon: 24h}\n"
         "routing: {default_provider: sim}\n"
         "engine: {workers: 2, lease: 30s, poll_interval: 500ms}\n";
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

// State the client threads share. Tickets hand out the level's request budget in order, so
// "the first 2%" means the first requests issued across all connections.
struct Shared {
  std::uint16_t port = 0;
  int concurrency = 0;
  std::int64_t total = 0;
  std::int64_t warmup = 0;
  SteadyClock::time_point deadline;
  std::atomic<std::int64_t> next_ticket{0};
  std::atomic<bool> capped{false};
};

// What one client thread saw; merged after the threads are joined.
struct Tally {
  Samples samples;
  std::int64_t attempted = 0;
  std::int64_t created = 0;
  std::map<unsigned, std::int64_t> other_statuses;
  std::string first_unexpected;  // the first non-201: status and body
  std::string transport_error;   // why this connection stopped early
};

void run_client(Shared& shared, int thread_index, Tally& out) {
  asio::io_context ioc;
  tcp::socket socket(ioc);
  error_code ec;
  socket.connect(tcp::endpoint(asio::ip::address_v4::loopback(), shared.port), ec);
  if (ec) {
    out.transport_error = "connect: " + ec.message();
    return;
  }
  socket.set_option(tcp::no_delay(true), ec);

  http::request<http::string_body> req{http::verb::post, "/v1/payments", 11};
  req.set(http::field::host, "127.0.0.1:" + std::to_string(shared.port));
  req.set(http::field::authorization, std::string("Bearer ") + tenant_token);
  req.set(http::field::content_type, "application/json");
  req.keep_alive(true);
  const std::string operation_prefix =
      "bench-" + std::to_string(shared.concurrency) + "-" + std::to_string(thread_index) + "-";
  beast::flat_buffer buffer;

  for (std::int64_t n = 0;; ++n) {
    const auto start = SteadyClock::now();
    if (start >= shared.deadline) {
      shared.capped = true;
      break;
    }
    const std::int64_t ticket = shared.next_ticket.fetch_add(1);
    if (ticket >= shared.total) break;
    req.body() = "{\"operation_id\":\"" + operation_prefix + std::to_string(n) +
                 "\",\"amount_minor\":1234,\"currency\":\"EUR\",\"payee\":\"merchant-1\","
                 "\"source\":\"tok_ok\"}";
    req.prepare_payload();
    ++out.attempted;
    http::write(socket, req, ec);
    if (ec) {
      out.transport_error = "write: " + ec.message();
      break;
    }
    http::response<http::string_body> res;
    http::read(socket, buffer, res, ec);
    const auto end = SteadyClock::now();
    if (ec) {
      out.transport_error = "read: " + ec.message();
      break;
    }
    if (res.result_int() == 201) {
      ++out.created;
      if (ticket >= shared.warmup) out.samples.add(start, end);
    } else {
      ++out.other_statuses[res.result_int()];
      if (out.first_unexpected.empty())
        out.first_unexpected = "HTTP " + std::to_string(res.result_int()) + " " + res.body();
    }
    if (!res.keep_alive()) {
      out.transport_error = "the daemon closed the keep-alive connection after HTTP " +
                            std::to_string(res.result_int());
      break;
    }
  }
  socket.shutdown(tcp::socket::shutdown_both, ec);
  socket.close(ec);
}

// Runs the clients against a listening daemon and folds their tallies into `r`.
void drive_clients(Shared& shared, const DaemonProcess& daemon, Result& r) {
  std::vector<Tally> tallies(static_cast<std::size_t>(shared.concurrency));
  std::mutex mu;
  std::condition_variable cv;
  bool clients_done = false;
  bool watchdog_fired = false;
  std::thread watchdog([&] {
    std::unique_lock lock(mu);
    if (!cv.wait_until(lock, shared.deadline + stuck_grace, [&] { return clients_done; })) {
      watchdog_fired = true;
      daemon.kill_now();
    }
  });
  {
    std::vector<std::thread> clients;
    clients.reserve(tallies.size());
    for (int i = 0; i < shared.concurrency; ++i)
      clients.emplace_back(run_client, std::ref(shared), i, std::ref(tallies[i]));
    for (auto& t : clients) t.join();
  }
  {
    std::lock_guard lock(mu);
    clients_done = true;
  }
  cv.notify_all();
  watchdog.join();
  if (watchdog_fired)
    r.failures.push_back("clients still running " + std::to_string(stuck_grace.count()) +
                         " s after the time cap: payorchd was killed");

  Samples samples;
  std::map<unsigned, std::int64_t> statuses;
  std::string first_unexpected;
  int broken = 0;
  std::string first_transport_error;
  for (const Tally& t : tallies) {
    samples.merge(t.samples);
    r.attempted += t.attempted;
    r.created += t.created;
    for (const auto& [status, n] : t.other_statuses) {
      statuses[status] += n;
      r.non_201 += n;
    }
    if (first_unexpected.empty()) first_unexpected = t.first_unexpected;
    if (!t.transport_error.empty() && broken++ == 0) first_transport_error = t.transport_error;
  }
  r.capped = shared.capped.load();
  summarize(r, std::move(samples));
  if (r.non_201 > 0) {
    std::string by_status;
    for (const auto& [status, n] : statuses)
      by_status += (by_status.empty() ? "" : ", ") + std::to_string(status) + " x" +
                   std::to_string(n);
    r.failures.push_back(std::to_string(r.non_201) + " non-201 answers (" + by_status +
                         "); first: " + first_unexpected.substr(0, 400));
  }
  if (broken > 0)
    r.failures.push_back(std::to_string(broken) + " of " + std::to_string(shared.concurrency) +
                         " connections stopped early; first: " + first_transport_error);
}

}  // namespace

Result run_http_level(const Options& opts, int concurrency) {
  Result r;
  r.name = "http c=" + std::to_string(concurrency);
  r.concurrency = concurrency;
  const std::string dir = make_run_dir(opts.work_dir, "c" + std::to_string(concurrency));
  const std::string db_path = dir + "/payorch.db";
  try {
    write_file(dir + "/payorchd.yaml", daemon_config(db_path));
    DaemonProcess daemon(opts.payorchd, dir + "/payorchd.yaml", dir + "/port",
                         dir + "/payorchd.log");
    Shared shared;
    shared.port = daemon.wait_for_port(10s);
    shared.concurrency = concurrency;
    shared.total = opts.requests;
    shared.warmup = warmup_count(opts.requests);
    shared.deadline = SteadyClock::now() + opts.time_cap;
    drive_clients(shared, daemon, r);

    const std::string ended = daemon.terminate(terminate_timeout);
    if (ended != "exited with code 0")
      r.failures.push_back("payorchd " + ended + " after SIGTERM; log tail:\n" +
                           daemon.log_tail());
    const std::int64_t rows = count_payment_rows(db_path);
    // Fewer rows than 201s breaks the durability promise; more means intakes committed whose
    // answer never reached the client (a killed daemon, a broken connection).
    if (rows != r.created)
      r.failures.push_back("payments table holds " + std::to_string(rows) + " rows but " +
                           std::to_string(r.created) + " intakes were answered 201" +
                           (rows < r.created ? " (a 201 was not durable)" : ""));
  } catch (const std::exception& e) {
    r.failures.push_back(e.what());
  }
  finish_run_dir(dir, opts, r);
  return r;
}

}  // namespace payorch::bench
