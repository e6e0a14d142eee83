#pragma once
// RFC 9457 problem details. Every error payorch answers over HTTP is built here from one
// catalogue (docs/api.md, "Problem types"): a code has one status, one title and, for the
// 503s, one Retry-After, so no handler picks them on its own.
#include <boost/beast/http.hpp>
#include <boost/json/object.hpp>
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/intent.h"

namespace payorch::http {

namespace beast_http = boost::beast::http;
using Request = beast_http::request<beast_http::string_body>;
using Response = beast_http::response<beast_http::string_body>;

inline constexpr std::string_view problem_base = "https://payorch.dev/problems/";

enum class Problem {
  invalid_json,
  invalid_request,
  raw_card_data,
  idempotency_key_mismatch,
  idempotency_key_reused,
  unauthorized,
  not_found,
  method_not_allowed,
  unsupported_media_type,
  payload_too_large,
  headers_too_large,
  bad_request,
  unsupported_transfer_encoding,
  too_many_connections,
  request_timeout,
  storage_busy,
  storage_unavailable,
  intake_paused,
  shutting_down,
  not_ready,
  internal_error,
  case_not_open,
  retry_not_allowed,
  invalid_settlement_file,
  callback_signature_invalid,
  callback_malformed,
  payment_not_refundable,
  refund_exceeds_payment,
  operator_mismatch,
};

struct ProblemType {
  Problem problem;
  std::string_view code;   // the `type` is problem_base + code
  unsigned status;         // 4xx or 5xx
  std::string_view title;  // fixed: the detail says what happened this time
  int retry_after_s;       // > 0: every answer of this type carries Retry-After: retry_after_s
};

// In the order of Problem, one entry per value.
inline constexpr std::array<ProblemType, 29> problem_catalogue{{
    {Problem::invalid_json, "invalid-json", 400, "Request body is not valid JSON", 0},
    {Problem::invalid_request, "invalid-request", 422, "Request has invalid fields", 0},
    {Problem::raw_card_data, "raw-card-data", 422, "Card data is not accepted", 0},
    {Problem::idempotency_key_mismatch, "idempotency-key-mismatch", 400,
     "Idempotency-Key header and operation_id disagree", 0},
    {Problem::idempotency_key_reused, "idempotency-key-reused", 422,
     "Idempotency key reused with a different request", 0},
    {Problem::unauthorized, "unauthorized", 401, "Missing or invalid bearer token", 0},
    {Problem::not_found, "not-found", 404, "Not found", 0},
    {Problem::method_not_allowed, "method-not-allowed", 405, "Method not allowed", 0},
    {Problem::unsupported_media_type, "unsupported-media-type", 415, "Unsupported media type", 0},
    {Problem::payload_too_large, "payload-too-large", 413, "Request body too large", 0},
    {Problem::headers_too_large, "headers-too-large", 431, "Request headers too large", 0},
    {Problem::bad_request, "bad-request", 400, "Malformed HTTP request", 0},
    {Problem::unsupported_transfer_encoding, "unsupported-transfer-encoding", 501,
     "Transfer coding not supported", 0},
    {Problem::too_many_connections, "too-many-connections", 503, "Too many connections", 1},
    {Problem::request_timeout, "request-timeout", 408, "Request not received in time", 0},
    {Problem::storage_busy, "storage-busy", 503, "Storage busy, retry with the same key", 1},
    {Problem::storage_unavailable, "storage-unavailable", 503,
     "Storage failed, retry with the same key", 1},
    {Problem::intake_paused, "intake-paused", 503, "Intake paused for this provider", 30},
    {Problem::shutting_down, "shutting-down", 503, "payorchd is shutting down", 5},
    {Problem::not_ready, "not-ready", 503, "payorchd is not ready", 1},
    {Problem::internal_error, "internal-error", 500, "Internal error", 0},
    {Problem::case_not_open, "case-not-open", 409, "Reconciliation case is not open", 0},
    {Problem::retry_not_allowed, "retry-not-allowed", 409, "Retry not allowed for this payment", 0},
    {Problem::invalid_settlement_file, "invalid-settlement-file", 422,
     "Settlement file cannot be read", 0},
    {Problem::callback_signature_invalid, "callback-signature-invalid", 401,
     "Callback signature missing, wrong or stale", 0},
    {Problem::callback_malformed, "callback-malformed", 400, "Callback body cannot be read", 0},
    {Problem::payment_not_refundable, "payment-not-refundable", 409,
     "Payment cannot be refunded", 0},
    {Problem::refund_exceeds_payment, "refund-exceeds-payment", 422,
     "Refunds would exceed the payment", 0},
    {Problem::operator_mismatch, "operator-mismatch", 403,
     "Payorch-Operator names another operator than the token", 0},
}};

constexpr bool catalogue_in_enum_order() {
  for (std::size_t i = 0; i < problem_catalogue.size(); ++i)
    if (static_cast<std::size_t>(problem_catalogue[i].problem) != i) return false;
  return true;
}
static_assert(catalogue_in_enum_order(), "problem_catalogue must list Problem in order");
static_assert(problem_catalogue.size() == static_cast<std::size_t>(Problem::operator_mismatch) + 1,
              "problem_catalogue must have an entry for every Problem");

constexpr const ProblemType& problem_type(Problem p) {
  return problem_catalogue[static_cast<std::size_t>(p)];
}

// The catalogue entry of a code ("invalid-json"), for codes named outside src/http (core's
// IntentRejection); nullopt for a code the catalogue lacks.
std::optional<Problem> problem_of_code(std::string_view code);

// Builds an application/problem+json response: {"type": problem_base + code, "title",
// "status", "detail", ...extra}, with the catalogue's status, title and Retry-After.
Response make_problem(Problem problem, std::string detail, boost::json::object extra = {},
                      unsigned http_version = 11);

// A JSON response with the given status.
Response make_json(unsigned status, const boost::json::value& body, unsigned http_version = 11);
// A text/plain answer (a vendor's expected acknowledgement, e.g. Adyen's "[accepted]").
Response make_text(unsigned status, std::string body, unsigned http_version = 11);

// 405 method-not-allowed with Allow: `allow` ("GET", "GET, POST").
Response method_not_allowed(std::string_view allow, unsigned http_version);

// 401 unauthorized with WWW-Authenticate: Bearer realm="`realm`".
Response unauthorized(std::string detail, std::string_view realm, unsigned http_version);

// The `errors` member of a problem — {"field","code","message"} for the first
// max_listed_errors (core/intent.h) of `errors` — and, when some were left out, `errors_omitted`: how many.
void add_field_errors(boost::json::object& extra, const std::vector<FieldError>& errors);

// 422 invalid-request listing `errors` (add_field_errors).
Response invalid_request(std::string detail, const std::vector<FieldError>& errors,
                         unsigned http_version);

}  // namespace payorch::http
