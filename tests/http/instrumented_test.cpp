// InstrumentedHandler: every answered request is counted by route template, method and status,
// and its time from handle() to the answer — a late answer included — lands in the latency
// histogram; raw paths (which carry operation, case and payment ids) never become labels.
#include <doctest/doctest.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "http/instrumented.h"
#include "util/log.h"

using namespace payorch;
using namespace payorch::http;
using namespace std::chrono_literals;

namespace {

// Answers every request with the status its target asks for, at once or when told.
class FakeApi final : public Handler {
public:
  void handle(Request&& req, Responder done) override {
    const std::string target(req.target());
    const unsigned status = target.find("/v1/events") == 0 ? 401 : target.find("/v1/payments") == 0 ? 201 : 404;
    Response res{static_cast<beast_http::status>(status), 11};
    if (target.find("wait") != std::string::npos) {
      held.push_back([done, res] { done(res); });
      return;
    }
    done(res);
  }
  std::optional<Response> screen(const Request& header) override {
    if (header.target() != "/v1/events/screened") return std::nullopt;
    return Response{beast_http::status::unauthorized, 11};
  }
  std::vector<std::function<void()>> held;
};

Request request(beast_http::verb method, std::string target) {
  Request req{method, target, 11};
  return req;
}

}  // namespace

TEST_CASE("route_of: the route template, never the raw path") {
  CHECK(route_of("/v1/payments") == "/v1/payments");
  CHECK(route_of("/v1/payments?state=SUCCEEDED&limit=5") == "/v1/payments");
  CHECK(route_of("/v1/payments/order-1001") == "/v1/payments/{operation_id}");
  CHECK(route_of("/v1/payments/order-1001?x=1") == "/v1/payments/{operation_id}");
  CHECK(route_of("/v1/events?after=12") == "/v1/events");
  CHECK(route_of("/v1/callbacks/sim") == "/v1/callbacks/{provider}");
  CHECK(route_of("/v1/reconciliation") == "/v1/reconciliation");
  CHECK(route_of("/v1/reconciliation?status=open") == "/v1/reconciliation");
  CHECK(route_of("/v1/reconciliation/import?provider=sim") == "/v1/reconciliation/import");
  CHECK(route_of("/v1/reconciliation/rc_01J") == "/v1/reconciliation/{case_id}");
  CHECK(route_of("/v1/reconciliation/rc_01J/resolve") == "/v1/reconciliation/{case_id}/resolve");
  CHECK(route_of("/v1/admin/payments/pay_01J") == "/v1/admin/payments/{payment_id}");
  CHECK(route_of("/v1/admin/payments?operation_id=order-1") == "/v1/admin/payments");
  CHECK(route_of("/v1/admin/timeline?client_key=ck_1") == "/v1/admin/timeline");
  CHECK(route_of("/v1/admin/refunds/re_01J?tenant_id=acme") == "/v1/admin/refunds/{refund_id}");
  for (const char* fixed : {"/healthz", "/readyz", "/status", "/metrics"}) CHECK(route_of(fixed) == fixed);
  for (const char* other : {"/", "", "/v1", "/v1/", "/v1/payments/", "/v1/payments/a/b", "/v2/payments/x",
                            "/v1/unknown/x", "/v1/admin/payments/", "/v1/reconciliation/rc_1/other",
                            "/healthz/x", "/v1/payments//", "/etc/passwd"})
    CHECK_MESSAGE(route_of(other) == "other", other);
  CHECK(method_label("GET") == "GET");
  CHECK(method_label("POST") == "POST");
  CHECK(method_label("BREW") == "other");
}

TEST_CASE("InstrumentedHandler: counts by route/method/status and times each request until its answer") {
  FakeApi api;
  Metrics metrics;
  ManualClock clock;
  SeededRandom rng(7);
  InstrumentedHandler handler(api, metrics, clock, rng, /*access_log=*/false);
  std::vector<unsigned> answered;
  auto record = [&](Response r) { answered.push_back(r.result_int()); };

  handler.handle(request(beast_http::verb::post, "/v1/payments"), record);
  handler.handle(request(beast_http::verb::get, "/v1/payments/order-1"), record);
  handler.handle(request(beast_http::verb::get, "/v1/payments/order-2?x=y"), record);
  handler.handle(request(beast_http::verb::get, "/v1/events?after=3"), record);
  handler.handle(request(beast_http::verb::get, "/no/such/thing"), record);
  // An answer that comes later (a `Prefer: wait`, a group commit): timed until it is sent.
  handler.handle(request(beast_http::verb::get, "/v1/payments/order-3?wait"), record);
  CHECK(answered.size() == 5);
  clock.advance(1500ms);
  REQUIRE(api.held.size() == 1);
  api.held[0]();
  CHECK(answered.size() == 6);

  using L = Labels;
  CHECK(metrics.value(requests_metric, L{{"route", "/v1/payments"}, {"method", "POST"}, {"status", "201"}}) == 1);
  CHECK(metrics.value(requests_metric, L{{"route", "/v1/payments/{operation_id}"}, {"method", "GET"}, {"status", "201"}}) == 3);
  CHECK(metrics.value(requests_metric, L{{"route", "/v1/events"}, {"method", "GET"}, {"status", "401"}}) == 1);
  CHECK(metrics.value(requests_metric, L{{"route", "other"}, {"method", "GET"}, {"status", "404"}}) == 1);
  CHECK(metrics.total(requests_metric) == 6);
  const Labels item{{"route", "/v1/payments/{operation_id}"}, {"method", "GET"}};
  CHECK(metrics.observations(request_duration_metric, item) == 3);
  CHECK(metrics.observed_sum(request_duration_metric, item) == doctest::Approx(1.5));
  CHECK(metrics.observations(request_duration_metric, {{"route", "/v1/payments"}, {"method", "POST"}}) == 1);
  const std::string text = metrics.render();
  CHECK(text.find("order-") == std::string::npos);  // no raw path, no operation id
  const std::string series = "payorch_http_request_duration_seconds_bucket{route=\"/v1/payments/{operation_id}\",method=\"GET\",le=";
  CHECK(text.find(series + "\"1\"} 2\n") != std::string::npos);
  CHECK(text.find(series + "\"2.5\"} 3\n") != std::string::npos);
  // A `Prefer: wait` of up to 30 s still lands in a bucket of its own.
  CHECK(text.find(series + "\"30\"} 3\n") != std::string::npos);
}

TEST_CASE("InstrumentedHandler: a request refused on its header is counted too") {
  FakeApi api;
  Metrics metrics;
  ManualClock clock;
  SeededRandom rng(7);
  InstrumentedHandler handler(api, metrics, clock, rng, /*access_log=*/false);
  CHECK_FALSE(handler.screen(request(beast_http::verb::get, "/v1/payments")).has_value());
  const auto refused = handler.screen(request(beast_http::verb::post, "/v1/events/screened"));
  REQUIRE(refused.has_value());
  CHECK(refused->result_int() == 401);
  CHECK(metrics.value(requests_metric, Labels{{"route", "other"}, {"method", "POST"}, {"status", "401"}}) == 1);
  CHECK(metrics.total(requests_metric) == 1);
  CHECK(metrics.observations(request_duration_metric, {{"route", "other"}, {"method", "POST"}}) == 1);
  CHECK(refused->find(request_id_header) != refused->end());
}

TEST_CASE("valid_request_id: 1-128 characters of [A-Za-z0-9._:/+=-]") {
  for (const char* ok : {"a", "req-1", "01J9ZK.x:y/z+w=v_", "ABCdef0123456789", "trace/span:1"})
    CHECK_MESSAGE(valid_request_id(ok), ok);
  CHECK(valid_request_id(std::string(128, 'x')));
  CHECK_FALSE(valid_request_id(std::string(129, 'x')));
  for (const char* bad : {"", "two words", "tab\tx", "nl\nlevel=alert", "quote\"", "back\\slash",
                          "semi;colon", "caf\xc3\xa9", "pct%41"})
    CHECK_MESSAGE(!valid_request_id(bad), bad);
  SeededRandom rng(1);
  const std::string fresh = new_request_id(rng);
  CHECK(fresh.size() == 32);
  CHECK(fresh.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(valid_request_id(fresh));
  CHECK(new_request_id(rng) != fresh);
}

TEST_CASE("InstrumentedHandler: the request id is echoed, put on the request's lines and on its access line") {
  std::vector<std::string> lines;
  log::set_sink([&](std::string_view line) { lines.emplace_back(line); });
  // Logs one line while it handles the request, as a handler does, then answers.
  class LoggingApi final : public Handler {
  public:
    void handle(Request&& req, Responder done) override {
      log::note_tenant("acme");
      log::info("test.handled", "");
      Response res{beast_http::status::created, 11};
      res.body() = "{\"ok\":true}";
      if (req.target() == "/v1/payments/later") {
        held = [done, res] { done(res); };
        return;
      }
      done(res);
    }
    std::function<void()> held;
  } api;
  Metrics metrics;
  ManualClock clock;
  SeededRandom rng(3);
  InstrumentedHandler handler(api, metrics, clock, rng);
  std::vector<Response> answers;
  auto record = [&](Response r) { answers.push_back(std::move(r)); };

  Request given = request(beast_http::verb::post, "/v1/payments");
  given.set(request_id_header, "client-req.42");
  given.body() = "{\"amount\":1}";
  handler.handle(std::move(given), record);
  Request forged = request(beast_http::verb::get, "/v1/payments/later");
  forged.set(request_id_header, "x level=alert");
  handler.handle(std::move(forged), record);
  clock.advance(std::chrono::milliseconds(2345));
  api.held();
  log::set_sink({});

  REQUIRE(answers.size() == 2);
  CHECK(answers[0][request_id_header] == "client-req.42");
  const std::string fresh(answers[1][request_id_header]);
  CHECK(fresh.size() == 32);
  CHECK(fresh != "x level=alert");
  REQUIRE(lines.size() == 4);
  CHECK(lines[0] == "payorchd level=info event=test.handled request_id=client-req.42 tenant=acme\n");
  CHECK(lines[1] ==
        "payorchd level=info event=http.access method=POST route=/v1/payments status=201 duration_ms=0 "
        "tenant=acme bytes=11 request_bytes=12 request_id=client-req.42\n");
  CHECK(lines[2] == "payorchd level=info event=test.handled request_id=" + fresh + " tenant=acme\n");
  CHECK(lines[3] ==
        "payorchd level=info event=http.access method=GET route=/v1/payments/{operation_id} status=201 "
        "duration_ms=2345 tenant=acme bytes=11 request_bytes=0 request_id=" + fresh + "\n");
  CHECK(lines[2].find("alert") == std::string::npos);
}

TEST_CASE("InstrumentedHandler: log.access false writes no access line; the id is still echoed") {
  std::vector<std::string> lines;
  log::set_sink([&](std::string_view line) { lines.emplace_back(line); });
  FakeApi api;
  Metrics metrics;
  ManualClock clock;
  SeededRandom rng(5);
  InstrumentedHandler handler(api, metrics, clock, rng, false);
  std::vector<Response> answers;
  handler.handle(request(beast_http::verb::get, "/v1/payments/x"), [&](Response r) { answers.push_back(std::move(r)); });
  const auto refused = handler.screen(request(beast_http::verb::post, "/v1/events/screened"));
  log::set_sink({});
  CHECK(lines.empty());
  REQUIRE(answers.size() == 1);
  CHECK(answers[0][request_id_header].size() == 32);
  REQUIRE(refused.has_value());
  CHECK((*refused)[request_id_header].size() == 32);
}
