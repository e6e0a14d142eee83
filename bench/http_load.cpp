#include "bench/http_load.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "support/net_lab.h"

namespace payorch::bench {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;
using namespace std::chrono_literals;

// Clients that have not finished this long after their deadline are stuck: the daemon is
// killed, which fails every blocked read, so a benchmark always stops by itself.
constexpr auto stuck_grace = 15s;
// Longer than the daemon's own 30 s drain deadline.
constexpr auto terminate_timeout = 35s;

struct Shared {
  const LoadPlan& plan;
  std::atomic<std::int64_t> next_ticket{0};
  std::atomic<bool> capped{false};
};

// What one client thread saw; merged after the threads are joined.
struct Tally {
  Samples samples;
  std::int64_t attempted = 0;
  std::int64_t ok = 0;
  std::map<unsigned, std::int64_t> other_statuses;
  std::string first_unexpected;  // the first unexpected answer: status and body
  std::string transport_error;   // why this connection stopped early
};

http::request<http::string_body> base_request(const std::string& host, std::uint16_t port) {
  http::request<http::string_body> req{http::verb::get, "/", 11};
  req.set(http::field::host, host + ":" + std::to_string(port));
  req.set(http::field::authorization, std::string("Bearer ") + bench_tenant_token);
  return req;
}

bool connect_to(tcp::socket& socket, const std::string& host, std::uint16_t port, error_code& ec) {
  const asio::ip::address_v4 address = asio::ip::make_address_v4(host, ec);
  if (ec) return false;
  socket.connect(tcp::endpoint(address, port), ec);
  if (ec) return false;
  socket.set_option(tcp::no_delay(true), ec);
  return true;
}

void run_client(Shared& shared, std::size_t node, Tally& out) {
  const LoadPlan& plan = shared.plan;
  const std::string host = node < plan.hosts.size() ? plan.hosts[node] : "127.0.0.1";
  const std::uint16_t port = plan.ports[node];
  if (!plan.netns.empty()) {
    try {
      test::enter_netns(plan.netns);  // this thread's sockets live there
    } catch (const std::exception& e) {
      out.transport_error = e.what();
      return;
    }
  }
  asio::io_context ioc;
  tcp::socket socket(ioc);
  error_code ec;
  if (!connect_to(socket, host, port, ec)) {
    out.transport_error = "connect to " + host + ":" + std::to_string(port) + ": " + ec.message();
    return;
  }
  http::request<http::string_body> req = base_request(host, port);
  req.keep_alive(true);
  beast::flat_buffer buffer;

  for (;;) {
    const auto start = SteadyClock::now();
    if (start >= plan.deadline) {
      shared.capped = true;
      break;
    }
    const std::int64_t ticket = shared.next_ticket.fetch_add(1);
    if (ticket >= plan.total) break;
    HttpCall call = plan.call(ticket);
    req.method(call.post ? http::verb::post : http::verb::get);
    req.target(call.target);
    if (call.post) req.set(http::field::content_type, "application/json");
    else req.erase(http::field::content_type);
    req.body() = std::move(call.body);
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
    if (res.result_int() == plan.expected_status) {
      ++out.ok;
      if (ticket >= plan.warmup) out.samples.add(start, end);
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

}  // namespace

HttpCall intake_call(const std::string& operation_id) {
  return {true, "/v1/payments",
          "{\"operation_id\":\"" + operation_id +
              "\",\"amount_minor\":1234,\"currency\":\"EUR\",\"payee\":\"merchant-1\","
              "\"source\":\"tok_ok\"}"};
}

HttpCall read_call(const std::string& operation_id) {
  return {false, "/v1/payments/" + operation_id, {}};
}

void drive_load(const LoadPlan& plan, const std::vector<const DaemonProcess*>& daemons, Result& r) {
  if (plan.ports.empty()) throw std::invalid_argument("drive_load: no port to talk to");
  Shared shared{plan};
  std::vector<Tally> tallies(static_cast<std::size_t>(plan.concurrency));
  std::mutex mu;
  std::condition_variable cv;
  bool clients_done = false;
  bool watchdog_fired = false;
  std::thread watchdog([&] {
    std::unique_lock lock(mu);
    if (!cv.wait_until(lock, plan.deadline + stuck_grace, [&] { return clients_done; })) {
      watchdog_fired = true;
      for (const DaemonProcess* daemon : daemons) daemon->kill_now();
    }
  });
  {
    std::vector<std::thread> clients;
    clients.reserve(tallies.size());
    for (std::size_t i = 0; i < tallies.size(); ++i)
      clients.emplace_back(run_client, std::ref(shared), i % plan.ports.size(), std::ref(tallies[i]));
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
                         " s after the time cap: the daemons were killed");

  Samples samples;
  std::map<unsigned, std::int64_t> statuses;
  std::string first_unexpected;
  int broken = 0;
  std::string first_transport_error;
  for (const Tally& t : tallies) {
    samples.merge(t.samples);
    r.attempted += t.attempted;
    r.ok += t.ok;
    for (const auto& [status, n] : t.other_statuses) {
      statuses[status] += n;
      r.unexpected += n;
    }
    if (first_unexpected.empty()) first_unexpected = t.first_unexpected;
    if (!t.transport_error.empty() && broken++ == 0) first_transport_error = t.transport_error;
  }
  r.capped = shared.capped.load();
  summarize(r, std::move(samples));
  if (r.unexpected > 0) {
    std::string by_status;
    for (const auto& [status, n] : statuses)
      by_status += (by_status.empty() ? "" : ", ") + std::to_string(status) + " x" +
                   std::to_string(n);
    r.failures.push_back(std::to_string(r.unexpected) + " answers other than " +
                         std::to_string(plan.expected_status) + " (" + by_status +
                         "); first: " + first_unexpected.substr(0, 400));
  }
  if (broken > 0)
    r.failures.push_back(std::to_string(broken) + " of " + std::to_string(plan.concurrency) +
                         " connections stopped early; first: " + first_transport_error);
}

void stop_and_check_rows(const std::vector<DaemonProcess*>& daemons, const DatabaseRef& db,
                         std::int64_t rows_before, std::int64_t created, Result& r) {
  // All at once: every node drains in parallel, as a fleet stops.
  for (DaemonProcess* daemon : daemons) daemon->signal_terminate();
  for (DaemonProcess* daemon : daemons) {
    const std::string ended = daemon->await_exit(terminate_timeout);
    if (ended != "exited with code 0")
      r.failures.push_back("payorchd " + ended + " after SIGTERM; log tail:\n" + daemon->log_tail());
  }
  const std::int64_t rows = count_payment_rows(db) - rows_before;
  // Fewer rows than 201s breaks the durability promise; more means intakes committed whose
  // answer never reached the client (a killed daemon, a broken connection).
  if (rows != created)
    r.failures.push_back("the run added " + std::to_string(rows) + " payments but " +
                         std::to_string(created) + " intakes were answered 201" +
                         (rows < created ? " (a 201 was not durable)" : ""));
}

std::pair<unsigned, std::string> http_get(std::uint16_t port, const std::string& target) {
  return http_get({}, "127.0.0.1", port, target);
}

std::pair<unsigned, std::string> http_get(const std::string& netns, const std::string& host,
                                          std::uint16_t port, const std::string& target) {
  if (!netns.empty())
    return test::in_netns(netns, [&] { return http_get({}, host, port, target); });
  asio::io_context ioc;
  tcp::socket socket(ioc);
  error_code ec;
  if (!connect_to(socket, host, port, ec))
    throw std::runtime_error("GET " + target + ": connect: " + ec.message());
  http::request<http::string_body> req = base_request(host, port);
  req.target(target);
  req.keep_alive(false);
  http::write(socket, req, ec);
  if (ec) throw std::runtime_error("GET " + target + ": write: " + ec.message());
  beast::flat_buffer buffer;
  http::response<http::string_body> res;
  http::read(socket, buffer, res, ec);
  if (ec) throw std::runtime_error("GET " + target + ": read: " + ec.message());
  socket.close(ec);
  return {res.result_int(), std::move(res.body())};
}

}  // namespace payorch::bench
