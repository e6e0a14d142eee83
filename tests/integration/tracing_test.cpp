// Request tracing against the real payorchd (docs/operations.md, "Logs and request tracing"):
// every answer carries X-Request-Id (the caller's when valid, else a fresh one); the request's
// log lines and its access line carry it; the intake keeps it, and a valid traceparent's trace
// id, with the payment and its created event; and the engine's vendor calls for that payment
// reach the vendor — here a tiny recording server — with the payment's trace id.
#include <doctest/doctest.h>

#include <boost/asio/io_context.hpp>
#include <boost/beast/http.hpp>

#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "http/server.h"
#include "support/daemon.h"
#include "support/database_probe.h"
#include "support/payorch_api.h"
#include "support/process.h"

using namespace payorch;
using namespace payorch::test;

namespace {

constexpr std::string_view acme = "acme-token-123";
constexpr const char* trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";

// A vendor that records every request's Idempotency-Key and traceparent and answers 503, so
// that the payments stay PROCESSING and their calls come again.
class RecordingVendor final : public http::Handler {
public:
  RecordingVendor() : server_(ioc_, config(), *this) {
    server_.start();
    thread_ = std::thread([this] { ioc_.run(); });
  }
  ~RecordingVendor() override {
    server_.stop_accepting();
    ioc_.stop();
    thread_.join();
  }
  void handle(http::Request&& req, http::Responder done) override {
    {
      std::lock_guard lock(mu_);
      seen_.push_back({std::string(req["Idempotency-Key"]), std::string(req["traceparent"])});
    }
    http::Response res{boost::beast::http::status::service_unavailable, req.version()};
    done(std::move(res));
  }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(server_.port()); }
  // The traceparent headers of the calls made with `client_key` ("" for a call without one).
  std::vector<std::string> traceparents(const std::string& client_key) {
    std::lock_guard lock(mu_);
    std::vector<std::string> out;
    for (const auto& s : seen_)
      if (s.first == client_key) out.push_back(s.second);
    return out;
  }

private:
  static config::Server config() {
    config::Server c;
    c.listen_host = "127.0.0.1";
    c.listen_port = 0;
    return c;
  }
  boost::asio::io_context ioc_;
  http::Server server_;
  std::thread thread_;
  std::mutex mu_;
  std::vector<std::pair<std::string, std::string>> seen_;
};

}  // namespace

TEST_CASE("tracing: X-Request-Id is echoed or minted, logged, and kept; traceparent reaches the vendor") {
  RecordingVendor vendor;
  DaemonConfig config;
  const std::string discard = "base_url: \"http://127.0.0.1:9\"";
  config.providers.replace(config.providers.find(discard), discard.size(),
                           "base_url: \"" + vendor.base_url() + "\"");
  config.engine = "engine: {workers: 2, lease: 30s, poll_interval: 100ms}";
  Daemon daemon(config);
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail(8192));

  // A caller's valid id comes back; a forged one is replaced by a fresh one.
  PaymentRequest traced{unique_operation_id("trace-a")};
  const HttpResponse a = post_payment(daemon.port(), acme, traced,
                                      {{"X-Request-Id", "client-req.0001"},
                                       {"traceparent", std::string("00-") + trace_id + "-00f067aa0ba902b7-01"}});
  REQUIRE_MESSAGE(a.status == 201, a.describe());
  CHECK(a.header("x-request-id") == "client-req.0001");
  PaymentRequest plain{unique_operation_id("trace-b")};
  const HttpResponse b = post_payment(daemon.port(), acme, plain,
                                      {{"X-Request-Id", "bad id\" level=alert"},
                                       {"traceparent", "00-00000000000000000000000000000000-00f067aa0ba902b7-01"}});
  REQUIRE_MESSAGE(b.status == 201, b.describe());
  const std::string fresh = b.header("x-request-id");
  CHECK(fresh.size() == 32);
  // Problem answers, and answers refused on the header alone, carry one too.
  const HttpResponse missing = http_request(daemon.port(), "GET", "/v1/payments/nope", tenant_headers(acme));
  CHECK(missing.status == 404);
  CHECK(missing.header("x-request-id").size() == 32);
  const HttpResponse unauthorized = http_request(daemon.port(), "GET", "/v1/payments",
                                                 {{"X-Request-Id", "no-token-1"}});
  CHECK(unauthorized.status == 401);
  CHECK(unauthorized.header("x-request-id") == "no-token-1");

  // The vendor sees the first payment's trace, with a span id of payorch's; the second none.
  const std::string key_a = json_string(a.json(), "client_key");
  const std::string key_b = json_string(b.json(), "client_key");
  REQUIRE(eventually([&] { return !vendor.traceparents(key_a).empty() && !vendor.traceparents(key_b).empty(); },
                     std::chrono::seconds(10)));
  const std::string header = vendor.traceparents(key_a).front();
  CHECK(header.starts_with(std::string("00-") + trace_id + "-"));
  CHECK(header.ends_with("-01"));
  CHECK(header.size() == 55);
  CHECK(header.find("00f067aa0ba902b7") == std::string::npos);
  CHECK(vendor.traceparents(key_b).front().empty());

  // Kept with the payment and its created event.
  DatabaseProbe db(daemon);
  const auto rows = db.query("SELECT request_id, trace_id, trace_flags FROM payments WHERE client_key = ?", {key_a});
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].at("request_id") == "client-req.0001");
  CHECK(rows[0].at("trace_id") == trace_id);
  CHECK(rows[0].at("trace_flags") == "01");
  const auto untraced = db.query("SELECT request_id, trace_id FROM payments WHERE client_key = ?", {key_b});
  REQUIRE(untraced.size() == 1);
  CHECK(untraced[0].at("request_id") == fresh);
  CHECK_FALSE(untraced[0].at("trace_id").has_value());
  CHECK(db.count("SELECT count(*) FROM outbox o JOIN payments p ON p.id = o.payment_id"
                 " WHERE p.client_key = ? AND o.type = 'payment.created' AND o.request_id = 'client-req.0001'",
                 {key_a}) == 1);

  // The access lines: one per answer, with route template, status, tenant, the operation it
  // named and request id.
  const std::string log = daemon.log_tail(1 << 20);
  CHECK(log.find("event=http.access method=POST route=/v1/payments status=201 duration_ms=") != std::string::npos);
  CHECK(log.find("tenant=acme operation_id=" + traced.operation_id + " bytes=") != std::string::npos);
  CHECK(log.find("request_id=client-req.0001") != std::string::npos);
  CHECK(log.find("route=/v1/payments/{operation_id} status=404") != std::string::npos);
  CHECK(log.find("status=401 duration_ms=0 bytes=") != std::string::npos);
  CHECK(log.find("request_id=no-token-1") != std::string::npos);
  CHECK(log.find("level=alert event=x") == std::string::npos);
  CHECK(log.find("bad id") == std::string::npos);
  // Every line of the daemon starts with its name and an RFC 3339 UTC time with milliseconds.
  std::istringstream lines(log);
  int daemon_lines = 0;
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with("payorchd ")) continue;
    ++daemon_lines;
    // "ts=2026-12-03T01:02:03.456Z"
    CHECK_MESSAGE(line.size() > 36, line);
    if (line.size() <= 36) continue;
    const std::string ts = line.substr(9, 27);
    CHECK_MESSAGE((ts.starts_with("ts=20") && ts[7] == '-' && ts[10] == '-' && ts[13] == 'T' &&
                   ts[16] == ':' && ts[19] == ':' && ts[22] == '.' && ts[26] == 'Z' &&
                   line.substr(36, 7) == " level="),
                  line);
  }
  CHECK(daemon_lines > 5);
}

TEST_CASE("tracing: log.access false writes no access line; log.level warn drops info lines"
          * doctest::test_suite("driver-free")) {
  DaemonConfig config;
  config.extra = "log: {access: false, level: warn}";
  Daemon daemon(config);
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail(8192));
  const HttpResponse health = http_request(daemon.port(), "GET", "/healthz");
  CHECK(health.status == 200);
  CHECK(health.header("x-request-id").size() == 32);
  const std::string log = daemon.log_tail(1 << 20);
  CHECK(log.find("event=http.access") == std::string::npos);
  CHECK(log.find("level=info") == std::string::npos);
}
