#include "http/problem.h"

#include <boost/json/serialize.hpp>

namespace payorch::http {

std::string_view problem_title(std::string_view code) {
  struct Entry {
    std::string_view code, title;
  };
  static constexpr Entry table[] = {
      {"invalid-json", "Request body is not valid JSON"},
      {"invalid-request", "Request has invalid fields"},
      {"raw-card-data", "Card data is not accepted"},
      {"idempotency-key-mismatch", "Idempotency-Key header and operation_id disagree"},
      {"idempotency-key-reused", "Idempotency key reused with a different request"},
      {"unauthorized", "Missing or invalid bearer token"},
      {"not-found", "Not found"},
      {"method-not-allowed", "Method not allowed"},
      {"unsupported-media-type", "Unsupported media type"},
      {"payload-too-large", "Request body too large"},
      {"headers-too-large", "Request headers too large"},
      {"bad-request", "Malformed HTTP request"},
      {"unsupported-transfer-encoding", "Transfer coding not supported"},
      {"too-many-connections", "Too many connections"},
      {"request-timeout", "Request not received in time"},
      {"storage-busy", "Storage busy, retry with the same key"},
      {"storage-unavailable", "Storage failed, retry with the same key"},
      {"intake-paused", "Intake paused for this provider"},
      {"shutting-down", "payorchd is shutting down"},
      {"not-ready", "payorchd is not ready"},
      {"internal-error", "Internal error"},
      {"case-not-open", "Reconciliation case is not open"},
      {"retry-not-allowed", "Retry not allowed for this payment"},
      {"invalid-settlement-file", "Settlement file cannot be read"},
      {"callback-signature-invalid", "Callback signature missing, wrong or stale"},
      {"callback-malformed", "Callback body cannot be read"},
  };
  for (const auto& e : table)
    if (e.code == code) return e.title;
  return "Error";
}

Response make_json(unsigned status, const boost::json::value& body, unsigned http_version) {
  Response res{static_cast<beast_http::status>(status), http_version};
  res.set(beast_http::field::content_type, "application/json");
  res.set(beast_http::field::cache_control, "no-store");
  res.body() = boost::json::serialize(body);
  res.prepare_payload();
  return res;
}

Response make_problem(unsigned status, std::string_view code, std::string detail,
                      boost::json::object extra, unsigned http_version) {
  boost::json::object body;
  body["type"] = std::string(problem_base) + std::string(code);
  body["title"] = problem_title(code);
  body["status"] = status;
  body["detail"] = std::move(detail);
  for (auto& kv : extra) body[kv.key()] = std::move(kv.value());
  Response res = make_json(status, body, http_version);
  res.set(beast_http::field::content_type, "application/problem+json");
  return res;
}

void add_field_errors(boost::json::object& extra, const std::vector<FieldError>& errors) {
  boost::json::array list;
  for (std::size_t i = 0; i < errors.size() && i < max_listed_errors; ++i)
    list.push_back(boost::json::object{{"field", errors[i].field}, {"code", errors[i].code}, {"message", errors[i].message}});
  extra["errors"] = std::move(list);
  if (errors.size() > max_listed_errors) extra["errors_omitted"] = errors.size() - max_listed_errors;
}

}  // namespace payorch::http
