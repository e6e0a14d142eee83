// Request framing on the real payorchd (RFC 9112 §6): a request whose body length two parsers
// could read differently is refused with one answer and a closed connection, so nothing sent
// after its header can become a second request (request smuggling).
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

std::string header_lines(const Headers& headers) {
  std::string out;
  for (const auto& [name, value] : headers) out += name + ": " + value + "\r\n";
  return out;
}

// A complete, valid intake for `operation_id`: what an attacker hides in a body.
std::string smuggled_intake(std::string_view operation_id) {
  return raw_request("POST", "/v1/payments", tenant_headers(acme_token),
                     PaymentRequest{.operation_id = std::string(operation_id)}.to_json());
}

std::string chunked(std::string_view body) {
  char size[32];
  std::snprintf(size, sizeof size, "%zx", body.size());
  return std::string(size) + "\r\n" + std::string(body) + "\r\n0\r\n\r\n";
}

// Sends one request whose header carries `framing` lines and whose body is `body`, and checks
// that exactly one answer came, `status` with problem `code` and Connection: close, and that
// the connection was then closed cleanly.
void check_refused_and_closed(std::uint16_t port, const std::string& framing,
                              const std::string& body, unsigned status, std::string_view code) {
  const std::string request = "POST /v1/payments HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
                              header_lines(tenant_headers(acme_token)) + framing + "\r\n" + body;
  const RawExchange seen = send_and_read_to_close(port, request, exchange_timeout);
  const std::vector<HttpResponse> answers = raw_responses(seen.received);
  INFO("received:\n" << seen.received);
  CHECK(answers.size() == 1);
  if (answers.empty()) return;
  CHECK(is_problem(answers[0], status, code));
  CHECK(answers[0].header("connection") == "close");
  CHECK(seen.closed);
  CHECK_FALSE(seen.reset);
}

}  // namespace

TEST_CASE("framing: a transfer coding other than exactly chunked is refused and the connection closed"
          * doctest::test_suite("driver-free")) {
  Daemon daemon;
  daemon.start();
  const std::uint16_t port = daemon.port();
  INFO("payorchd log:\n" << daemon.log_tail());

  struct Case {
    std::string transfer_encoding;
    unsigned status;
    std::string code;
  };
  // chunked not last: the length cannot be known (§6.3, 400); chunked twice (§6.1, 400); a
  // coding payorchd does not implement in front of chunked (§6.1, 501).
  const std::vector<Case> cases{
      {"identity", 400, "bad-request"},          {"xchunked", 400, "bad-request"},
      {"chunked, identity", 400, "bad-request"}, {"chunked, chunked", 400, "bad-request"},
      {"", 400, "bad-request"},                  {"gzip, chunked", 501, "unsupported-transfer-encoding"},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    CAPTURE(c.transfer_encoding);
    // The body is a whole second intake: if the first request were read as having no body,
    // or a chunked one, this would be taken as the next request (or as the intent itself).
    const std::string operation_id = "smuggled-" + std::to_string(i);
    const std::string inner = smuggled_intake(operation_id);
    const std::string body = c.transfer_encoding.ends_with("chunked") ? chunked(inner) : inner;
    check_refused_and_closed(port, "Transfer-Encoding: " + c.transfer_encoding + "\r\n", body,
                             c.status, c.code);
    CHECK(is_problem(get_payment(port, acme_token, operation_id), 404, "not-found"));
  }
  // Split over two lines, the codings are the same list (RFC 9110 §5.3).
  check_refused_and_closed(port, "Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n",
                           chunked(PaymentRequest{.operation_id = "smuggled-lines"}.to_json()),
                           501, "unsupported-transfer-encoding");
  CHECK(is_problem(get_payment(port, acme_token, "smuggled-lines"), 404, "not-found"));

  // Exactly chunked, in any case and with spaces around it, is read as chunked and kept alive.
  const std::string intent = PaymentRequest{.operation_id = "chunked-ok"}.to_json();
  const std::string request = "POST /v1/payments HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
                              header_lines(tenant_headers(acme_token)) +
                              "Transfer-Encoding:  ChUnKeD \r\n\r\n" + chunked(intent);
  const std::vector<HttpResponse> answers =
      raw_responses(send_and_read(port, request, exchange_timeout));
  REQUIRE(answers.size() == 1);
  CHECK_MESSAGE(answers[0].status == 201, answers[0].describe());
  CHECK(answers[0].header("connection") != "close");
}

TEST_CASE("framing: Content-Length with Transfer-Encoding is refused 400 and the connection closed"
          * doctest::test_suite("driver-free")) {
  Daemon daemon;
  daemon.start();
  const std::uint16_t port = daemon.port();
  INFO("payorchd log:\n" << daemon.log_tail());

  const std::string inner = smuggled_intake("smuggled-cl");
  const std::string length = "Content-Length: " + std::to_string(inner.size()) + "\r\n";
  for (const std::string& framing :
       {length + "Transfer-Encoding: identity\r\n", "Transfer-Encoding: identity\r\n" + length,
        length + "Transfer-Encoding: chunked\r\n", "Transfer-Encoding: chunked\r\n" + length}) {
    CAPTURE(framing);
    check_refused_and_closed(port, framing, inner, 400, "bad-request");
  }
  CHECK(is_problem(get_payment(port, acme_token, "smuggled-cl"), 404, "not-found"));
}
