#pragma once
// The tenant-facing API as integration tests use it: intent bodies, requests with the right
// headers, and checks of payment views and problem details against docs/contract.md §2/§4.
#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "support/http_client.h"

namespace payorch::test {

struct PaymentRequest {
  std::string operation_id;
  std::int64_t amount_minor = 1000;
  std::string currency = "EUR";
  std::string payee = "merchant-1";
  std::string source = "tok_ok";
  std::optional<std::string> provider = std::nullopt;
  std::optional<std::string> description = std::nullopt;

  std::string to_json() const;
  // Computed here, independently of payorchd: "sha256:" + hex SHA-256 of the JCS canonical
  // form of {operation_type, amount_minor, currency, payee, source, provider?}. Valid for the
  // plain ASCII values tests use.
  std::string expected_digest() const;
};

// Authorization: Bearer <token>, Content-Type: application/json.
Headers tenant_headers(std::string_view token);

HttpResponse post_payment(std::uint16_t port, std::string_view token, const PaymentRequest& req,
                          const Headers& extra = {});
HttpResponse post_payment(HttpConnection& connection, std::string_view token,
                          const PaymentRequest& req, const Headers& extra = {});
HttpResponse get_payment(std::uint16_t port, std::string_view token, std::string_view operation_id);

// A refund body (docs/refunds.md): {"operation_id","amount_minor","reason","metadata"}.
std::string refund_json(std::string_view operation_id, std::int64_t amount_minor);
// POST /v1/payments/{payment_operation_id}/refunds and GET /v1/refunds/{operation_id}.
HttpResponse post_refund(std::uint16_t port, std::string_view token, std::string_view payment_operation_id,
                         std::string_view operation_id, std::int64_t amount_minor);
HttpResponse get_refund(std::uint16_t port, std::string_view token, std::string_view operation_id);

// `v[key]` as a string, "" when absent or not a string.
std::string json_string(const boost::json::value& v, std::string_view key);
// `v[key]` as an integer, nullopt when absent or not an integer.
std::optional<std::int64_t> json_int(const boost::json::value& v, std::string_view key);

// The problem `type` if the response is application/problem+json with a JSON object body
// carrying type/title/status (status equal to the HTTP status); otherwise a description of
// what is wrong, starting with "not a problem:".
std::string problem_type(const HttpResponse& response);
// True when problem_type(response) ends in "/" + code.
bool is_problem(const HttpResponse& response, unsigned status, std::string_view code);

// "" when `view` is the payment view of `req` as accepted for tenant intake with the default
// provider (docs/contract.md §4: ids, prefixes, digest, immutable fields, state PROCESSING, all fields
// present); otherwise the list of differences. `routed_provider`: the provider payorchd routes a
// request that names none to (its routing default).
std::string view_mismatch(const boost::json::value& view, const PaymentRequest& req,
                          std::string_view expected_state = "PROCESSING",
                          std::string_view routed_provider = "sim");

// A unique operation id for this test run: prefix + counter.
std::string unique_operation_id(std::string_view prefix);

}  // namespace payorch::test
