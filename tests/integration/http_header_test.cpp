// What payorchd decides from a request's header alone, on the real daemon: an HTTP/1.1 request
// needs one Host; the fields it reads as one value (Authorization, Idempotency-Key,
// Payorch-Operator, ...) may not come twice; and a request that needs a token and has none is answered 401 before its
// body is read, then the connection is closed.
#include <doctest/doctest.h>

#include <string>
#include <string_view>
#include <vector>

#include "support/daemon.h"
#include "support/http_client.h"
#include "support/payorch_api.h"

using namespace payorch::test;
using namespace std::chrono_literals;

namespace {

constexpr std::chrono::milliseconds exchange_timeout = 5s;

// Sends `request` on a fresh connection; checks that exactly one answer came, `status` with
// problem `code` and Connection: close, and that the connection was then closed cleanly (a FIN,
// not a reset that could have destroyed the answer).
HttpResponse single_answer_then_close(std::uint16_t port, const std::string& request,
                                      unsigned status, std::string_view code) {
  const RawExchange seen = send_and_read_to_close(port, request, exchange_timeout);
  const std::vector<HttpResponse> answers = raw_responses(seen.received);
  INFO("received:\n" << seen.received);
  CHECK(answers.size() == 1);
  if (answers.empty()) return {};
  CHECK(is_problem(answers[0], status, code));
  CHECK(answers[0].header("connection") == "close");
  CHECK(seen.closed);
  CHECK_FALSE(seen.reset);
  return answers[0];
}

std::string intake(std::string_view head_lines, std::string_view operation_id) {
  const std::string body = PaymentRequest{.operation_id = std::string(operation_id)}.to_json();
  return "POST /v1/payments HTTP/1.1\r\n" + std::string(head_lines) +
         "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\n\r\n" + body;
}

std::string bearer_line(std::string_view token) {
  return "Authorization: Bearer " + std::string(token) + "\r\n";
}

}  // namespace

TEST_CASE("header: an HTTP/1.1 request needs exactly one Host"
          * doctest::test_suite("driver-free")) {
  Daemon daemon;
  daemon.start();
  const std::uint16_t port = daemon.port();
  INFO("payorchd log:\n" << daemon.log_tail());

  single_answer_then_close(port, "GET /healthz HTTP/1.1\r\n\r\n", 400, "bad-request");
  single_answer_then_close(port, "GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400,
                           "bad-request");
  single_answer_then_close(port, intake(bearer_line(acme_token), "no-host"), 400, "bad-request");
  CHECK(is_problem(get_payment(port, acme_token, "no-host"), 404, "not-found"));
  // HTTP/1.0 has no Host requirement.
  const std::vector<HttpResponse> old =
      raw_responses(send_and_read(port, "GET /healthz HTTP/1.0\r\n\r\n", exchange_timeout));
  REQUIRE(old.size() == 1);
  CHECK(old[0].status == 200);
}

TEST_CASE("header: two Authorization or two Idempotency-Key lines are refused 400"
          * doctest::test_suite("driver-free")) {
  Daemon daemon;
  daemon.start();
  const std::uint16_t port = daemon.port();
  INFO("payorchd log:\n" << daemon.log_tail());
  const std::string host = "Host: 127.0.0.1\r\n";

  // Which token a server reads when it gets two is anybody's guess: none is read.
  single_answer_then_close(port, intake(host + bearer_line(acme_token) + bearer_line(globex_token), "two-tokens"),
                           400, "bad-request");
  single_answer_then_close(port, intake(host + bearer_line(acme_token) + bearer_line(acme_token), "same-token"),
                           400, "bad-request");
  single_answer_then_close(port,
                           intake(host + bearer_line(acme_token) +
                                      "Idempotency-Key: two-keys\r\nIdempotency-Key: other-key\r\n",
                                  "two-keys"),
                           400, "bad-request");
  for (const char* op : {"two-tokens", "same-token", "two-keys", "other-key"}) {
    CAPTURE(op);
    CHECK(is_problem(get_payment(port, acme_token, op), 404, "not-found"));
    CHECK(is_problem(get_payment(port, globex_token, op), 404, "not-found"));
  }
  // One of each is an ordinary intake.
  const std::vector<HttpResponse> ok = raw_responses(send_and_read(
      port, intake(host + bearer_line(acme_token) + "Idempotency-Key: one-key\r\n", "one-key"),
      exchange_timeout));
  REQUIRE(ok.size() == 1);
  CHECK_MESSAGE(ok[0].status == 201, ok[0].describe());
}

TEST_CASE("header: two Payorch-Operator lines are refused 400, whichever comes first"
          * doctest::test_suite("driver-free")) {
  Daemon daemon;
  daemon.start();
  const std::uint16_t port = daemon.port();
  INFO("payorchd log:\n" << daemon.log_tail());
  const std::string head =
      "GET /v1/reconciliation HTTP/1.1\r\nHost: 127.0.0.1\r\n" + bearer_line(admin_token);
  const auto operator_line = [](std::string_view name) {
    return "Payorch-Operator: " + std::string(name) + "\r\n";
  };

  // The token's own operator first or second, or twice: none of them is read.
  single_answer_then_close(port, head + operator_line("admin") + operator_line("mallory") + "\r\n",
                           400, "bad-request");
  single_answer_then_close(port, head + operator_line("mallory") + operator_line("admin") + "\r\n",
                           400, "bad-request");
  single_answer_then_close(port, head + operator_line("admin") + operator_line("admin") + "\r\n",
                           400, "bad-request");
  // One line naming the token's operator is an ordinary admin request.
  const std::vector<HttpResponse> ok = raw_responses(
      send_and_read(port, head + operator_line("admin") + "\r\n", exchange_timeout));
  REQUIRE(ok.size() == 1);
  CHECK_MESSAGE(ok[0].status == 200, ok[0].describe());
}

TEST_CASE("header: a request without a valid token is answered 401 before its body is read"
          * doctest::test_suite("driver-free")) {
  Daemon daemon;
  daemon.start();
  const std::uint16_t port = daemon.port();
  INFO("payorchd log:\n" << daemon.log_tail());
  const std::string host = "Host: 127.0.0.1\r\n";

  SUBCASE("a body over the limit is never read: 401, not 413") {
    const std::string big(1024 * 1024, 'x');
    const std::string head = "POST /v1/payments HTTP/1.1\r\n" + host +
                             "Content-Type: application/json\r\nContent-Length: " +
                             std::to_string(big.size()) + "\r\n";
    HttpResponse r = single_answer_then_close(port, head + "\r\n" + big, 401, "unauthorized");
    CHECK(r.header("www-authenticate") == "Bearer realm=\"payorch\"");
    single_answer_then_close(port, head + "Authorization: Bearer wrong-token\r\n\r\n" + big, 401,
                             "unauthorized");
    // The admin routes, with the admin realm; a tenant's token is not the admin's.
    const std::string import = "POST /v1/reconciliation/import?provider=sim HTTP/1.1\r\n" + host +
                               bearer_line(acme_token) +
                               "Content-Type: text/csv\r\nContent-Length: " +
                               std::to_string(big.size()) + "\r\n\r\n" + big;
    r = single_answer_then_close(port, import, 401, "unauthorized");
    CHECK(r.header("www-authenticate") == "Bearer realm=\"payorch-admin\"");
    // With a valid token the body is read, and over the limit it is a 413.
    single_answer_then_close(port, head + bearer_line(acme_token) + "\r\n" + big, 413,
                             "payload-too-large");
  }

  SUBCASE("the answer comes without the body: nothing of it has to be sent") {
    const std::string head = "POST /v1/events HTTP/1.1\r\n" + host +
                             "Content-Length: 1000\r\n\r\n";
    const std::vector<HttpResponse> answers =
        raw_responses(send_and_read(port, head, exchange_timeout));
    CHECK(answers.size() == 1);
    if (!answers.empty()) CHECK(is_problem(answers[0], 401, "unauthorized"));
    // Expect: 100-continue gets the 401 instead of a 100 Continue.
    const std::vector<HttpResponse> expecting = raw_responses(send_and_read(
        port,
        "POST /v1/payments HTTP/1.1\r\n" + host +
            "Expect: 100-continue\r\nContent-Type: application/json\r\nContent-Length: 50\r\n\r\n",
        exchange_timeout));
    CHECK(expecting.size() == 1);
    if (!expecting.empty()) CHECK(is_problem(expecting[0], 401, "unauthorized"));
  }

  SUBCASE("the unread body is never taken as a request") {
    // The body of the refused request is a complete, valid intake of acme's.
    const std::string inner = intake(host + bearer_line(acme_token), "inside-refused-body");
    const std::string outer = "POST /v1/payments HTTP/1.1\r\n" + host +
                              "Content-Type: application/json\r\nContent-Length: " +
                              std::to_string(inner.size()) + "\r\n\r\n" + inner;
    single_answer_then_close(port, outer, 401, "unauthorized");
    CHECK(is_problem(get_payment(port, acme_token, "inside-refused-body"), 404, "not-found"));
  }

  SUBCASE("routes without a bearer token keep working as before") {
    CHECK(http_request(port, "GET", "/healthz").status == 200);
    CHECK(http_request(port, "GET", "/readyz").status == 200);
    CHECK(http_request(port, "GET", "/status").status == 200);
    CHECK(http_request(port, "GET", "/metrics").status == 200);
    CHECK(is_problem(http_request(port, "GET", "/no/such/route"), 404, "not-found"));
    // A vendor callback is authenticated by its signature, after its body is read.
    const HttpResponse callback = http_request(port, "POST", "/v1/callbacks/sim",
                                               {{"Content-Type", "application/json"}}, "{}");
    CHECK_MESSAGE(is_problem(callback, 401, "callback-signature-invalid"), callback.describe());
  }
}
