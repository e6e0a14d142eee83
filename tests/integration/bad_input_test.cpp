// Hostile and broken requests get the right status and problem type, leave no rows behind, and
// do not disturb the daemon: a good request is served after each one.
#include <doctest/doctest.h>

#include <boost/json/parse.hpp>

#include <functional>
#include <regex>
#include <string>
#include <vector>

#include "support/daemon.h"
#include "support/http_client.h"
#include "support/payorch_api.h"
#include "support/database_probe.h"

using namespace payorch::test;

namespace {

const std::string valid_fields =
    R"("amount_minor":100,"currency":"EUR","payee":"merchant-1","source":"tok_ok")";

std::string body_with(const std::string& operation_id, const std::string& more = "") {
  return R"({"operation_id":")" + operation_id + R"(",)" + valid_fields + more + "}";
}

// A body with `amount` and `currency` spelled exactly as given (JSON text).
std::string body_spelled(const std::string& operation_id, const std::string& amount,
                         const std::string& currency = R"("EUR")") {
  return R"({"operation_id":")" + operation_id + R"(","amount_minor":)" + amount +
         R"(,"currency":)" + currency + R"(,"payee":"p","source":"tok_ok"})";
}

HttpResponse post_raw(std::uint16_t port, const Headers& headers, std::string body) {
  return http_request(port, "POST", "/v1/payments", headers, std::move(body));
}

// True when the problem's errors[] has an entry for `field` (with `code`, if given).
bool names_field(const HttpResponse& response, std::string_view field, std::string_view code = "") {
  boost::system::error_code ec;
  const auto body = boost::json::parse(response.body, ec);
  if (ec || !body.is_object()) return false;
  const auto* errors = body.as_object().if_contains("errors");
  if (!errors || !errors->is_array()) return false;
  for (const auto& e : errors->get_array()) {
    if (json_string(e, "field") != field) continue;
    if (json_string(e, "message").empty()) return false;
    if (code.empty() || json_string(e, "code") == code) return true;
  }
  return false;
}

struct BadCase {
  std::string name;
  std::function<HttpResponse(std::uint16_t)> send;
  std::function<bool(const HttpResponse&)> expected;
  std::string expectation;
};

}  // namespace

TEST_CASE("bad input: each refusal has its status and problem type, and leaves nothing behind") {
  Daemon daemon;
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail());
  const Headers acme = tenant_headers(acme_token);

  // One payment of acme's that globex must not see.
  const PaymentRequest acme_payment{.operation_id = "acme-private", .amount_minor = 5};
  REQUIRE(post_payment(daemon.port(), acme_token, acme_payment).status == 201);
  int good_payments = 1;

  const std::string nested =
      body_with("nested", R"(,"metadata":)" + std::string(5000, '[') + std::string(5000, ']'));
  const std::vector<BadCase> cases = {
      {"malformed JSON",
       [&](auto port) {
         return post_raw(port, acme, R"({"operation_id":"bad-1","amount_minor":)");
       },
       [](const auto& r) { return is_problem(r, 400, "invalid-json"); }, "400 invalid-json"},
      {"trailing garbage after the JSON",
       [&](auto port) { return post_raw(port, acme, body_with("bad-2") + "{}"); },
       [](const auto& r) { return is_problem(r, 400, "invalid-json"); }, "400 invalid-json"},
      {"duplicate JSON key",
       [&](auto port) {
         return post_raw(port, acme, body_with("bad-3", R"(,"amount_minor":100000)"));
       },
       [](const auto& r) { return r.status == 400 || r.status == 422; }, "400 or 422"},
      {"wrong content type",
       [&](auto port) {
         return post_raw(port, {acme[0], {"Content-Type", "text/plain"}}, body_with("bad-4"));
       },
       [](const auto& r) { return is_problem(r, 415, "unsupported-media-type"); },
       "415 unsupported-media-type"},
      {"no content type", [&](auto port) { return post_raw(port, {acme[0]}, body_with("bad-5")); },
       [](const auto& r) { return is_problem(r, 415, "unsupported-media-type"); },
       "415 unsupported-media-type"},
      {"1 MiB body",
       [&](auto port) {
         return post_raw(
             port, acme,
             body_with("bad-6", R"(,"description":")" + std::string(1 << 20, 'x') + "\""));
       },
       [](const auto& r) {
         // The whole body is read and discarded, so a client that writes all of it before
         // reading (most do) is not reset mid-write and sees the 413.
         return is_problem(r, 413, "payload-too-large") && r.write_error.empty();
       },
       "413 payload-too-large, the request body drained (no write error)"},
      {"deeply nested JSON", [&](auto port) { return post_raw(port, acme, nested); },
       [](const auto& r) {
         return is_problem(r, 400, "invalid-json") || is_problem(r, 422, "invalid-request");
       },
       "400 invalid-json or 422 invalid-request"},
      {"missing fields",
       [&](auto port) { return post_raw(port, acme, R"({"operation_id":"bad-7"})"); },
       [](const auto& r) {
         return is_problem(r, 422, "invalid-request") && names_field(r, "amount_minor") &&
                names_field(r, "currency") && names_field(r, "payee") && names_field(r, "source");
       },
       "422 invalid-request naming amount_minor, currency, payee, source"},
      {"extra field",
       [&](auto port) { return post_raw(port, acme, body_with("bad-8", R"(,"amount":5)")); },
       [](const auto& r) {
         return is_problem(r, 422, "invalid-request") && names_field(r, "amount", "unknown_field");
       },
       "422 invalid-request, errors[] {field: amount, code: unknown_field}"},
      {"tenant_id in the body",
       [&](auto port) {
         return post_raw(port, acme, body_with("bad-9", R"(,"tenant_id":"globex")"));
       },
       [](const auto& r) {
         return is_problem(r, 422, "invalid-request") &&
                names_field(r, "tenant_id", "unknown_field");
       },
       "422 invalid-request, tenant_id unknown_field"},
      {"float amount",
       [&](auto port) { return post_raw(port, acme, body_spelled("bad-10", "100.5")); },
       [](const auto& r) {
         return is_problem(r, 422, "invalid-request") && names_field(r, "amount_minor");
       },
       "422 invalid-request naming amount_minor"},
      {"amount as a string",
       [&](auto port) { return post_raw(port, acme, body_spelled("bad-11", R"("100")")); },
       [](const auto& r) {
         return is_problem(r, 422, "invalid-request") && names_field(r, "amount_minor");
       },
       "422 invalid-request naming amount_minor"},
      {"amount 2^53",
       [&](auto port) { return post_raw(port, acme, body_spelled("bad-12", "9007199254740992")); },
       [](const auto& r) {
         return is_problem(r, 422, "invalid-request") && names_field(r, "amount_minor");
       },
       "422 invalid-request naming amount_minor"},
      {"lower-case currency",
       [&](auto port) { return post_raw(port, acme, body_spelled("bad-13", "1", R"("eur")")); },
       [](const auto& r) {
         return is_problem(r, 422, "invalid-request") && names_field(r, "currency");
       },
       "422 invalid-request naming currency"},
      {"operation_id with a slash",
       [&](auto port) { return post_raw(port, acme, body_with("bad/14")); },
       [](const auto& r) {
         return is_problem(r, 422, "invalid-request") && names_field(r, "operation_id");
       },
       "422 invalid-request naming operation_id"},
      {"operation_id \"..\" (a path segment clients normalise away)",
       [&](auto port) { return post_raw(port, acme, body_with("..")); },
       [](const auto& r) {
         return is_problem(r, 422, "invalid-request") && names_field(r, "operation_id", "invalid_format");
       },
       "422 invalid-request, operation_id invalid_format"},
      {"operation_id \".\" as the Idempotency-Key",
       [&](auto port) {
         Headers h = acme;
         h.emplace_back("Idempotency-Key", ".");
         return post_raw(port, h, R"({"amount_minor":100,"currency":"EUR","payee":"p","source":"tok_ok"})");
       },
       [](const auto& r) {
         return is_problem(r, 422, "invalid-request") && names_field(r, "Idempotency-Key", "invalid_format");
       },
       "422 invalid-request, Idempotency-Key invalid_format"},
      {"a card number as source",
       [&](auto port) {
         return post_raw(port, acme,
                         R"({"operation_id":"bad-pan","amount_minor":100,"currency":"EUR","payee":"p","source":"4111 1111 1111 1111"})");
       },
       [](const auto& r) {
         return is_problem(r, 422, "raw-card-data") && names_field(r, "source", "raw_card_data") &&
                r.body.find("1111") == std::string::npos;
       },
       "422 raw-card-data naming source, the number not echoed"},
      {"Idempotency-Key disagrees with operation_id",
       [&](auto port) {
         Headers h = acme;
         h.emplace_back("Idempotency-Key", "other-key");
         return post_raw(port, h, body_with("bad-15"));
       },
       [](const auto& r) { return is_problem(r, 400, "idempotency-key-mismatch"); },
       "400 idempotency-key-mismatch"},
      {"wrong token",
       [&](auto port) {
         return post_raw(port, tenant_headers("acme-token-124"), body_with("bad-16"));
       },
       [](const auto& r) { return is_problem(r, 401, "unauthorized"); }, "401 unauthorized"},
      {"admin token on the tenant API",
       [&](auto port) { return post_raw(port, tenant_headers(admin_token), body_with("bad-17")); },
       [](const auto& r) { return r.status == 401 || r.status == 403; }, "401 or 403"},
      {"missing token",
       [&](auto port) {
         return post_raw(port, {{"Content-Type", "application/json"}}, body_with("bad-18"));
       },
       [](const auto& r) { return is_problem(r, 401, "unauthorized"); }, "401 unauthorized"},
      {"missing token on GET",
       [&](auto port) { return http_request(port, "GET", "/v1/payments/acme-private"); },
       [](const auto& r) { return is_problem(r, 401, "unauthorized"); }, "401 unauthorized"},
      {"another tenant's operation_id",
       [&](auto port) { return get_payment(port, globex_token, "acme-private"); },
       [](const auto& r) { return is_problem(r, 404, "not-found"); }, "404 not-found"},
      {"a missing operation_id",
       [&](auto port) { return get_payment(port, acme_token, "never-created"); },
       [](const auto& r) { return is_problem(r, 404, "not-found"); }, "404 not-found"},
  };

  for (const BadCase& c : cases) {
    CAPTURE(c.name);
    const HttpResponse refused = c.send(daemon.port());
    CHECK_MESSAGE(c.expected(refused),
                  "expected " << c.expectation << ", got " << refused.describe());

    const PaymentRequest good{.operation_id = unique_operation_id("good-after"),
                              .amount_minor = 42};
    const HttpResponse served = post_payment(daemon.port(), acme_token, good);
    CHECK_MESSAGE(served.status == 201,
                  "daemon unwell after '" << c.name << "': " << served.describe());
    if (served.status == 201) ++good_payments;
  }

  // The 413 must reach a raw client that keeps writing too, before the connection closes.
  const std::string huge = raw_request(
      "POST", "/v1/payments", acme,
      body_with("bad-raw-huge", R"(,"description":")" + std::string(1 << 20, 'y') + "\""));
  const std::string raw = send_and_read(daemon.port(), huge);
  CHECK_MESSAGE(raw_status(raw) == 413, "raw answer: " << raw.substr(0, 500));
  // The server's own answer names a request id too (a fresh one: 32 hex digits).
  CHECK_MESSAGE(std::regex_search(raw, std::regex("\r\n[Xx]-[Rr]equest-[Ii]d: [0-9a-f]{32}\r\n")),
                "raw answer: " << raw.substr(0, 500));

  DatabaseProbe db(daemon);
  CHECK(db.count("SELECT count(*) FROM payments") == good_payments);
  CHECK(db.count("SELECT count(*) FROM outbox") == good_payments);
  CHECK(db.count("SELECT count(*) FROM payments WHERE operation_id LIKE 'bad%' OR "
                 "operation_id = 'nested' OR tenant_id <> 'acme'") == 0);
  CHECK(db.count("SELECT count(*) FROM idempotency_conflicts") == 0);

  // The card number reached no log line, in any spelling.
  const std::string log = daemon.log_tail(1 << 24);
  CHECK(log.find("4111 1111 1111 1111") == std::string::npos);
  CHECK(log.find("4111111111111111") == std::string::npos);

  // Still healthy.
  CHECK(http_request(daemon.port(), "GET", "/healthz").status == 200);
  CHECK(http_request(daemon.port(), "GET", "/readyz").status == 200);
}

TEST_CASE("bad input: a body of thousands of unknown fields gets an answer of bounded size"
          * doctest::test_suite("driver-free")) {
  Daemon daemon;
  daemon.start();
  std::string extra;
  int fields = 0;
  while (extra.size() < 60'000) extra += ",\"x" + std::to_string(fields++) + "\":1";
  const std::string body = body_with("amplify-1", extra);
  REQUIRE(body.size() < 65'536);
  const HttpResponse r = post_raw(daemon.port(), tenant_headers(acme_token), body);
  CHECK_MESSAGE(r.status == 422, r.describe());
  CHECK(names_field(r, "x0", "unknown_field"));
  const auto problem = boost::json::parse(r.body).as_object();
  CHECK(problem.at("errors").as_array().size() == 20);
  CHECK(problem.at("errors_omitted").as_int64() == fields - 20);
  CHECK(r.body.size() < 4'096);  // was ~500 KB: one error line per field
  // A few mistakes are all listed, with no omission count.
  const HttpResponse few =
      post_raw(daemon.port(), tenant_headers(acme_token), body_with("amplify-2", R"(,"colour":"red","size":3)"));
  CHECK(few.status == 422);
  const auto few_problem = boost::json::parse(few.body).as_object();
  CHECK(few_problem.at("errors").as_array().size() == 2);
  CHECK_FALSE(few_problem.contains("errors_omitted"));
}
