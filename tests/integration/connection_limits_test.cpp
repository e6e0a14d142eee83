// Connection limits on the real payorchd: connections that made a request and sit idle cannot
// lock others out (at the cap the longest-idle one gives way), no client address holds more than
// server.max_connections_per_client, and server.reserved_connections stay for operator requests
// when every other connection is busy. Several client addresses come from 127.x.y.z.
#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "support/daemon.h"
#include "support/http_client.h"
#include "support/payorch_api.h"

using namespace payorch::test;
using namespace std::chrono_literals;

namespace {

using Connections = std::vector<std::unique_ptr<RawConnection>>;

constexpr std::chrono::milliseconds served_within = 1s;

std::string get(std::string_view target, std::string_view token = {}) {
  std::string out = "GET " + std::string(target) + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  if (!token.empty()) out += "Authorization: Bearer " + std::string(token) + "\r\n";
  return out + "\r\n";
}

// `n` keep-alive connections from `source`, each with one request answered, then left idle.
void open_idle(Connections& into, std::uint16_t port, std::size_t n, std::string_view source) {
  for (std::size_t i = 0; i < n; ++i) {
    auto c = std::make_unique<RawConnection>(port, source);
    REQUIRE(c->send(get("/healthz")));
    const HttpResponse r = c->read_response(5s);
    REQUIRE_MESSAGE(r.status == 200, "connection " << i << " from " << source << ": " << r.describe());
    into.push_back(std::move(c));
  }
}

// `n` connections from `source` in the middle of a request: the header has not ended yet.
void open_busy(Connections& into, std::uint16_t port, std::size_t n, std::string_view source) {
  for (std::size_t i = 0; i < n; ++i) {
    auto c = std::make_unique<RawConnection>(port, source);
    REQUIRE(c->send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"));
    into.push_back(std::move(c));
  }
}

// How many of the first `n` connections payorchd has closed (evicted). Which of the idle ones
// waited longest is payorchd's view: its writes complete in any order, so a connection
// answered first may begin waiting a little after one answered next.
std::size_t closed_among(Connections& connections, std::size_t n) {
  std::size_t closed = 0;
  for (std::size_t i = 0; i < n && i < connections.size(); ++i)
    closed += connections[i]->closed_within(0ms) ? 1 : 0;
  return closed;
}

// A fresh client's request, answered within served_within.
HttpResponse served_at_once(std::uint16_t port, const std::string& request,
                            std::string_view source = "127.0.0.1") {
  const auto started = std::chrono::steady_clock::now();
  RawConnection c(port, source);
  CHECK(c.send(request));
  HttpResponse r = c.read_response(served_within);
  const auto took = std::chrono::steady_clock::now() - started;
  CHECK_MESSAGE(r.status != 0, r.describe());
  CHECK_MESSAGE(took < served_within,
                "answered after " << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                                  << " ms");
  return r;
}

const std::vector<std::string> operator_requests{get("/healthz"), get("/readyz"), get("/status"),
                                                 get("/metrics"),
                                                 get("/v1/reconciliation", admin_token)};

// payorchd's open files, read until two readings 100 ms apart agree: a file open for an instant
// (the commit mark being rewritten after the readiness probe's commit) is not one it holds.
std::size_t held_fds(const Daemon& daemon) {
  std::size_t last = open_fds(daemon.pid());
  for (int i = 0; i < 50; ++i) {
    std::this_thread::sleep_for(100ms);
    const std::size_t now = open_fds(daemon.pid());
    if (now == last) return now;
    last = now;
  }
  FAIL("payorchd's open files never settled");
  return last;
}

// payorchd's open files with no client connected, once it has answered each operator request
// (the database connections those open stay open).
std::size_t baseline_fds(const Daemon& daemon) {
  std::size_t with_one = 0;
  {
    HttpConnection warm_up(daemon.port());
    for (const char* target : {"/healthz", "/readyz", "/status", "/metrics"})
      REQUIRE(warm_up.request("GET", target).status == 200);
    REQUIRE(warm_up.request("GET", "/v1/reconciliation",
                            {{"Authorization", std::string("Bearer ") + admin_token}})
                .status == 200);
    with_one = held_fds(daemon);
  }
  REQUIRE(eventually([&] { return open_fds(daemon.pid()) == with_one - 1; }, 5s));
  return with_one - 1;
}

// Waits until payorchd holds exactly `n` connections more than at `baseline` (its open files):
// connects return before payorchd has accepted, and a closed client before it has let go.
void settle(const Daemon& daemon, std::size_t baseline, std::size_t n) {
  REQUIRE_MESSAGE(eventually([&] { return open_fds(daemon.pid()) == baseline + n; }, 5s),
                  "payorchd holds " << open_fds(daemon.pid()) - baseline << " connections, not " << n);
}

// A new client's request answered within served_within; the connection stays open (idle).
std::unique_ptr<RawConnection> newcomer(std::uint16_t port, std::string_view source) {
  auto c = std::make_unique<RawConnection>(port, source);
  CHECK(c->send(get("/healthz")));
  const HttpResponse r = c->read_response(served_within);
  CHECK_MESSAGE(r.status == 200, r.describe());
  return c;
}

std::string intake(std::string_view operation_id) {
  return raw_request("POST", "/v1/payments", tenant_headers(acme_token),
                     PaymentRequest{.operation_id = std::string(operation_id)}.to_json());
}

}  // namespace

TEST_CASE("connections: with the defaults, 1,024 idle keep-alive connections lock nobody out"
          * doctest::test_suite("driver-free")) {
  Daemon daemon;  // max_connections 1024, 256 per client address
  daemon.start();
  const std::uint16_t port = daemon.port();
  INFO("payorchd log:\n" << daemon.log_tail());

  Connections idle;
  for (const char* source : {"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"})
    open_idle(idle, port, 256, source);
  CHECK(served_at_once(port, get("/healthz")).status == 200);
  CHECK(served_at_once(port, get("/readyz")).status == 200);
  const HttpResponse created = served_at_once(port, intake("after-idle-flood"));
  CHECK_MESSAGE(created.status == 201, created.describe());
  // One of the longest-idle connections gave way; the most recent ones are still served.
  CHECK(eventually([&] { return closed_among(idle, 32) >= 1; }, served_within));
  CHECK(idle.back()->send(get("/healthz")));
  CHECK(idle.back()->read_response(served_within).status == 200);
}

TEST_CASE("connections: at max_connections the longest-idle connection gives way, a busy one never"
          * doctest::test_suite("driver-free")) {
  DaemonConfig config;
  config.server = R"(server: {listen: "127.0.0.1:0", max_connections: 40, max_connections_per_client: 40,
                             reserved_connections: 4, read_timeout: 10s, idle_timeout: 60s})";
  Daemon daemon(config);
  daemon.start();
  const std::uint16_t port = daemon.port();
  INFO("payorchd log:\n" << daemon.log_tail());
  const std::size_t baseline = baseline_fds(daemon);

  // Half are mid-request, half idle after one request; together they fill the 36 ordinary slots.
  Connections busy;
  Connections idle;
  open_busy(busy, port, 18, "127.0.0.2");
  open_idle(idle, port, 18, "127.0.0.3");
  settle(daemon, baseline, 36);

  // Each newcomer (idle afterwards, so the youngest) takes the slot of the longest-idle
  // connection; nobody waits for idle_timeout.
  Connections newcomers;
  for (std::size_t i = 0; i < 4; ++i) {
    CAPTURE(i);
    newcomers.push_back(newcomer(port, "127.0.0.4"));
    CHECK(eventually([&] { return closed_among(idle, idle.size()) == i + 1; }, served_within));
  }
  const HttpResponse created = served_at_once(port, intake("newcomer"));
  CHECK_MESSAGE(created.status == 201, created.describe());
  CHECK(eventually([&] { return closed_among(idle, idle.size()) == 5; }, served_within));
  CHECK(idle.back()->send(get("/healthz")));
  CHECK(idle.back()->read_response(served_within).status == 200);

  // The connections mid-request were never closed: each finishes its request and is answered.
  for (auto& c : busy) {
    REQUIRE(c->send("\r\n"));
    CHECK(c->read_response(served_within).status == 200);
  }
}

TEST_CASE("connections: a client address holds at most max_connections_per_client"
          * doctest::test_suite("driver-free")) {
  DaemonConfig config;
  config.server = R"(server: {listen: "127.0.0.1:0", max_connections_per_client: 6, read_timeout: 10s})";
  Daemon daemon(config);
  daemon.start();
  const std::uint16_t port = daemon.port();
  INFO("payorchd log:\n" << daemon.log_tail());

  // Over its share, a client's own longest-idle connection gives way.
  Connections idle;
  open_idle(idle, port, 6, "127.0.0.2");
  CHECK(served_at_once(port, get("/healthz"), "127.0.0.2").status == 200);
  CHECK(eventually([&] { return closed_among(idle, idle.size()) == 1; }, served_within));

  // With all of its share busy, its next connection is closed unanswered; other addresses are
  // served.
  Connections busy;
  open_busy(busy, port, 6, "127.0.0.3");
  RawConnection over(port, "127.0.0.3");
  CHECK(over.closed_within(served_within));
  CHECK(over.read_response(100ms).status == 0);
  CHECK(served_at_once(port, get("/healthz"), "127.0.0.4").status == 200);
  for (auto& c : busy) {
    REQUIRE(c->send("\r\n"));
    CHECK(c->read_response(served_within).status == 200);
  }
}

TEST_CASE("connections: reserved_connections stay for operator requests when the rest are busy"
          * doctest::test_suite("driver-free")) {
  DaemonConfig config;
  config.server = R"(server: {listen: "127.0.0.1:0", max_connections: 20, max_connections_per_client: 20,
                             reserved_connections: 3, read_timeout: 10s})";
  Daemon daemon(config);
  daemon.start();
  const std::uint16_t port = daemon.port();
  INFO("payorchd log:\n" << daemon.log_tail());
  const std::size_t baseline = baseline_fds(daemon);

  Connections busy;
  open_busy(busy, port, 17, "127.0.0.2");  // every ordinary slot, mid-request
  settle(daemon, baseline, 17);

  // Health, readiness, status, metrics and the admin API get through, one request each.
  for (const std::string& request : operator_requests) {
    CAPTURE(request);
    const HttpResponse r = served_at_once(port, request);
    CHECK_MESSAGE(r.status == 200, r.describe());
    CHECK(r.header("connection") == "close");
    settle(daemon, baseline, 17);
  }
  // A tenant's request on a reserved connection is turned away unread, to be retried.
  const HttpResponse refused = served_at_once(port, intake("on-reserve"));
  CHECK(is_problem(refused, 503, "too-many-connections"));
  CHECK(refused.header("retry-after") == "1");
  CHECK(refused.header("connection") == "close");
  settle(daemon, baseline, 17);

  // With the reserve busy too, a new connection is closed unanswered.
  open_busy(busy, port, 3, "127.0.0.3");
  settle(daemon, baseline, 20);
  RawConnection over(port);
  CHECK(over.closed_within(served_within));
  CHECK(over.read_response(100ms).status == 0);
  for (auto& c : busy) {
    REQUIRE(c->send("\r\n"));
    CHECK(c->read_response(served_within).status == 200);
  }
  CHECK(is_problem(get_payment(port, acme_token, "on-reserve"), 404, "not-found"));
}
