#include "support/payorch_api.h"

#include <openssl/evp.h>

#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <atomic>
#include <stdexcept>

namespace payorch::test {
namespace {

std::string sha256_hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(data.data(), data.size(), digest, &length, EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("EVP_Digest failed");
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < length; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 0xF];
  }
  return out;
}

std::string quoted(std::string_view s) { return boost::json::serialize(boost::json::string(s)); }

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

}  // namespace

std::string PaymentRequest::to_json() const {
  boost::json::object body;
  body["operation_id"] = operation_id;
  body["amount_minor"] = amount_minor;
  body["currency"] = currency;
  body["payee"] = payee;
  body["source"] = source;
  if (provider) body["provider"] = *provider;
  if (description) body["description"] = *description;
  return boost::json::serialize(body);
}

std::string PaymentRequest::expected_digest() const {
  // JCS: members sorted by name, no whitespace; integers print as themselves.
  std::string canonical = "{\"amount_minor\":" + std::to_string(amount_minor) +
                          ",\"currency\":" + quoted(currency) +
                          ",\"operation_type\":\"payment\",\"payee\":" + quoted(payee);
  if (provider) canonical += ",\"provider\":" + quoted(*provider);
  canonical += ",\"source\":" + quoted(source) + "}";
  return "sha256:" + sha256_hex(canonical);
}

Headers tenant_headers(std::string_view token) {
  return {{"Authorization", "Bearer " + std::string(token)}, {"Content-Type", "application/json"}};
}

HttpResponse post_payment(std::uint16_t port, std::string_view token, const PaymentRequest& req,
                          const Headers& extra) {
  Headers headers = tenant_headers(token);
  headers.insert(headers.end(), extra.begin(), extra.end());
  return http_request(port, "POST", "/v1/payments", headers, req.to_json());
}

HttpResponse post_payment(HttpConnection& connection, std::string_view token,
                          const PaymentRequest& req, const Headers& extra) {
  Headers headers = tenant_headers(token);
  headers.insert(headers.end(), extra.begin(), extra.end());
  return connection.request("POST", "/v1/payments", headers, req.to_json());
}

HttpResponse get_payment(std::uint16_t port, std::string_view token,
                         std::string_view operation_id) {
  return http_request(port, "GET", "/v1/payments/" + std::string(operation_id),
                      {{"Authorization", "Bearer " + std::string(token)}});
}

std::string refund_json(std::string_view operation_id, std::int64_t amount_minor) {
  return boost::json::serialize(boost::json::object{{"operation_id", operation_id},
                                                    {"amount_minor", amount_minor},
                                                    {"reason", "customer asked"},
                                                    {"metadata", {{"ticket", "T-1"}}}});
}

HttpResponse post_refund(std::uint16_t port, std::string_view token, std::string_view payment_operation_id,
                         std::string_view operation_id, std::int64_t amount_minor) {
  return http_request(port, "POST", "/v1/payments/" + std::string(payment_operation_id) + "/refunds",
                      tenant_headers(token), refund_json(operation_id, amount_minor));
}

HttpResponse get_refund(std::uint16_t port, std::string_view token, std::string_view operation_id) {
  return http_request(port, "GET", "/v1/refunds/" + std::string(operation_id),
                      {{"Authorization", "Bearer " + std::string(token)}});
}

std::string json_string(const boost::json::value& v, std::string_view key) {
  const auto* object = v.if_object();
  if (!object) return "";
  const auto* member = object->if_contains(key);
  if (!member || !member->is_string()) return "";
  return std::string(member->get_string());
}

std::optional<std::int64_t> json_int(const boost::json::value& v, std::string_view key) {
  const auto* object = v.if_object();
  if (!object) return std::nullopt;
  const auto* member = object->if_contains(key);
  if (!member) return std::nullopt;
  if (member->is_int64()) return member->get_int64();
  if (member->is_uint64() && member->get_uint64() <= INT64_MAX)
    return static_cast<std::int64_t>(member->get_uint64());
  return std::nullopt;
}

std::string problem_type(const HttpResponse& response) {
  const std::string content_type = response.header("content-type");
  if (!starts_with(content_type, "application/problem+json"))
    return "not a problem: content-type '" + content_type + "'; " + response.describe();
  boost::system::error_code ec;
  const boost::json::value body = boost::json::parse(response.body, ec);
  if (ec || !body.is_object())
    return "not a problem: body is no JSON object; " + response.describe();
  if (json_string(body, "title").empty() || !body.as_object().contains("detail"))
    return "not a problem: no title/detail; " + response.describe();
  if (json_int(body, "status") != static_cast<std::int64_t>(response.status))
    return "not a problem: status member differs from HTTP status; " + response.describe();
  const std::string type = json_string(body, "type");
  return type.empty() ? "not a problem: no type; " + response.describe() : type;
}

bool is_problem(const HttpResponse& response, unsigned status, std::string_view code) {
  if (response.status != status) return false;
  const std::string type = problem_type(response);
  const std::string suffix = "/" + std::string(code);
  return type.size() >= suffix.size() &&
         type.compare(type.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string view_mismatch(const boost::json::value& view, const PaymentRequest& req,
                          std::string_view expected_state, std::string_view routed_provider) {
  std::string diff;
  auto expect = [&](bool ok, const std::string& what) {
    if (!ok) diff += what + "; ";
  };
  if (!view.is_object()) return "view is not a JSON object: " + boost::json::serialize(view);
  for (const char* field :
       {"id", "operation_id", "state", "amount_minor", "currency", "payee", "source", "provider",
        "client_key", "request_digest", "description", "metadata", "created_at", "updated_at",
        "attempt_count", "vendor_reference", "failure", "reconciliation"})
    expect(view.as_object().contains(field), std::string("missing field ") + field);
  const std::string id = json_string(view, "id");
  expect(starts_with(id, "pay_") && id.size() == 4 + 26, "id '" + id + "' is not pay_+ULID");
  const std::string client_key = json_string(view, "client_key");
  expect(starts_with(client_key, "ck_") && client_key.size() == 3 + 26,
         "client_key '" + client_key + "' is not ck_+26 chars");
  expect(json_string(view, "operation_id") == req.operation_id,
         "operation_id " + json_string(view, "operation_id") + " != " + req.operation_id);
  expect(json_int(view, "amount_minor") == req.amount_minor, "amount_minor differs");
  expect(json_string(view, "currency") == req.currency, "currency differs");
  expect(json_string(view, "payee") == req.payee, "payee differs");
  expect(json_string(view, "source") == req.source, "source differs");
  expect(json_string(view, "provider") == req.provider.value_or(std::string(routed_provider)),
         "provider " + json_string(view, "provider") + " differs");
  expect(json_string(view, "request_digest") == req.expected_digest(),
         "request_digest " + json_string(view, "request_digest") + " != expected " +
             req.expected_digest());
  if (!expected_state.empty())
    expect(json_string(view, "state") == expected_state,
           "state " + json_string(view, "state") + " != " + std::string(expected_state));
  return diff;
}

std::string unique_operation_id(std::string_view prefix) {
  static std::atomic<int> counter{0};
  return std::string(prefix) + "-" + std::to_string(++counter);
}

}  // namespace payorch::test
