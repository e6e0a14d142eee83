#include "providers/adyen/request.h"

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <boost/url/encode.hpp>
#include <boost/url/rfc/unreserved_chars.hpp>

namespace payorch::providers::adyen {
namespace {

namespace json = boost::json;

// A placeholder the schema's `returnUrl` requires; never visited (no redirect for ContAuth).
constexpr const char* return_url = "https://payorch.invalid/adyen/return";

json::object amount(std::int64_t value, const std::string& currency) {
  return json::object{{"value", value}, {"currency", currency}};
}

}  // namespace

StoredMethod parse_source(const std::string& source) {
  const auto colon = source.rfind(':');
  if (colon == std::string::npos) return StoredMethod{"", source};
  return StoredMethod{source.substr(0, colon), source.substr(colon + 1)};
}

std::string payment_body(const ChargeRequest& req, const std::string& merchant_account) {
  const StoredMethod method = parse_source(req.source);
  json::object body{
      {"amount", amount(req.amount_minor, req.currency)},
      {"merchantAccount", merchant_account},
      {"reference", req.client_key},
      {"paymentMethod", json::object{{"type", "scheme"},
                                     {"storedPaymentMethodId", method.stored_payment_method_id}}},
      {"shopperInteraction", "ContAuth"},
      {"recurringProcessingModel", "UnscheduledCardOnFile"},
      {"returnUrl", return_url},
      {"metadata", json::object{{"payee", req.payee}}},
  };
  if (!method.shopper_reference.empty()) body["shopperReference"] = method.shopper_reference;
  return json::serialize(body);
}

std::string refund_body(const RefundRequest& req, const std::string& merchant_account) {
  return json::serialize(json::object{{"amount", amount(req.amount_minor, req.currency)},
                                      {"merchantAccount", merchant_account},
                                      {"reference", req.client_key}});
}

std::string cancel_body(const ChargeRequest& req, const std::string& merchant_account) {
  return json::serialize(
      json::object{{"merchantAccount", merchant_account}, {"paymentReference", req.client_key}});
}

std::string path_segment(const std::string& value) {
  return boost::urls::encode(value, boost::urls::unreserved_chars);
}

}  // namespace payorch::providers::adyen
