#include "providers/stripe/object.h"

#include <boost/json/object.hpp>

#include <variant>

#include "core/strict_json.h"
#include "providers/json_fields.h"

namespace payorch::providers::stripe {
namespace {

namespace json = boost::json;

const json::string* string_member(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v ? v->if_string() : nullptr;
}

// A member that is a string, null or absent; false for any other type.
bool optional_string(const json::object& o, std::string_view key, std::optional<std::string>& out) {
  const json::value* v = o.if_contains(key);
  if (!v || v->is_null()) return true;
  if (!v->is_string()) return false;
  out = std::string(v->get_string());
  return true;
}

// The members both objects share; nullptr (with `error` set) when one is missing.
const json::object* parse_common(const json::value& v, std::string_view kind, StripeObject& out,
                                 std::string& error) {
  const json::object* o = v.if_object();
  if (!o) {
    error = std::string(kind) + " is not a JSON object";
    return nullptr;
  }
  const json::string* object = string_member(*o, "object");
  if (!object || *object != kind) {
    error = "not a " + std::string(kind) + " (\"object\" is " +
            (object ? "\"" + std::string(*object) + "\"" : std::string("missing")) + ")";
    return nullptr;
  }
  const json::string* id = string_member(*o, "id");
  const json::string* status = string_member(*o, "status");
  const json::string* currency = string_member(*o, "currency");
  const auto amount = integer_member(*o, "amount");
  if (!id || id->empty() || !status || !currency || !amount) {
    error = std::string(kind) + " lacks id, status, amount or currency";
    return nullptr;
  }
  out.id = *id;
  out.status = *status;
  out.amount = *amount;
  out.currency = *currency;
  if (const json::value* metadata = o->if_contains("metadata"); metadata && !metadata->is_null()) {
    if (!metadata->is_object()) {
      error = std::string(kind) + " metadata is not an object";
      return nullptr;
    }
    if (!optional_string(metadata->get_object(), "client_key", out.client_key)) {
      error = std::string(kind) + " metadata.client_key is not a string";
      return nullptr;
    }
  }
  return o;
}

}  // namespace

std::optional<json::value> parse_json(std::string_view body) {
  auto parsed = parse_strict_json(body);
  if (!std::holds_alternative<StrictJson>(parsed)) return std::nullopt;
  return std::get<StrictJson>(std::move(parsed)).root;
}

std::optional<StripeObject> parse_payment_intent(const json::value& v, std::string& error) {
  StripeObject pi;
  const json::object* o = parse_common(v, "payment_intent", pi, error);
  if (!o) return std::nullopt;
  // https://docs.stripe.com/api/payment_intents/object#payment_intent_object-last_payment_error
  if (const json::value* e = o->if_contains("last_payment_error"); e && !e->is_null()) {
    if (!e->is_object()) {
      error = "payment_intent last_payment_error is not an object";
      return std::nullopt;
    }
    std::optional<std::string> decline_code;
    std::optional<std::string> code;
    if (!optional_string(e->get_object(), "decline_code", decline_code) ||
        !optional_string(e->get_object(), "code", code)) {
      error = "payment_intent last_payment_error.code or decline_code is not a string";
      return std::nullopt;
    }
    pi.decline_code = decline_code ? decline_code : code;
  }
  std::optional<std::string> cancellation_reason;
  if (!optional_string(*o, "cancellation_reason", cancellation_reason)) {
    error = "payment_intent cancellation_reason is not a string";
    return std::nullopt;
  }
  if (!pi.decline_code) pi.decline_code = cancellation_reason;
  return pi;
}

std::optional<StripeObject> parse_refund(const json::value& v, std::string& error) {
  StripeObject refund;
  const json::object* o = parse_common(v, "refund", refund, error);
  if (!o) return std::nullopt;
  if (!optional_string(*o, "payment_intent", refund.payment_intent) ||
      !optional_string(*o, "failure_reason", refund.decline_code)) {
    error = "refund payment_intent or failure_reason is not a string";
    return std::nullopt;
  }
  return refund;
}

std::optional<StripeError> parse_error(const std::string& body) {
  const auto v = parse_json(body);
  if (!v || !v->is_object()) return std::nullopt;
  const json::value* e = v->get_object().if_contains("error");
  if (!e || !e->is_object()) return std::nullopt;
  const json::object& o = e->get_object();
  const json::string* type = string_member(o, "type");
  if (!type) return std::nullopt;
  StripeError out;
  out.type = *type;
  if (const auto* code = string_member(o, "code")) out.code = *code;
  if (const auto* decline_code = string_member(o, "decline_code")) out.decline_code = *decline_code;
  if (const auto* message = string_member(o, "message")) out.message = *message;
  if (const json::value* pi = o.if_contains("payment_intent"); pi && pi->is_object())
    out.payment_intent = *pi;
  return out;
}

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  return out;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

std::string mismatch(const StripeObject& object, const std::string& client_key,
                     std::int64_t amount_minor, const std::string& currency) {
  std::string out;
  const auto add = [&out](const std::string& what) {
    out += out.empty() ? "" : "; ";
    out += what;
  };
  if (object.client_key != client_key)
    add("metadata.client_key " + object.client_key.value_or("(none)") + " != " + client_key);
  if (object.amount != amount_minor)
    add("amount " + std::to_string(object.amount) + " != " + std::to_string(amount_minor));
  if (lower(object.currency) != lower(currency)) add("currency " + object.currency + " != " + currency);
  return out;
}

}  // namespace payorch::providers::stripe
