#include "providers/sim/charge.h"

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include <limits>

#include "core/enum_names.h"
#include "core/strict_json.h"

namespace payorch::providers::sim {
namespace {

namespace json = boost::json;

const json::string* string_field(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v ? v->if_string() : nullptr;
}

// JSON integers only: 1200.0 or "1200" is not an amount.
std::optional<std::int64_t> integer_field(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  if (!v) return std::nullopt;
  if (const auto* i = v->if_int64()) return *i;
  if (const auto* u = v->if_uint64(); u && *u <= std::numeric_limits<std::int64_t>::max())
    return static_cast<std::int64_t>(*u);
  return std::nullopt;
}

// A charge's "status" in the sim protocol (docs/contract.md §5); any other is not an answer.
constexpr EnumNames<VendorOutcome, 3> charge_status_names{{
    {VendorOutcome::succeeded, "succeeded"},
    {VendorOutcome::declined, "declined"},
    {VendorOutcome::pending, "pending"},
}};

std::optional<VendorOutcome> parse_status(std::string_view s) {
  return value_of(charge_status_names, s);
}

}  // namespace

std::optional<Charge> parse_charge(const json::value& v, std::string& error) {
  const json::object* o = v.if_object();
  if (!o) {
    error = "charge is not a JSON object";
    return std::nullopt;
  }
  Charge c;
  const json::string* id = string_field(*o, "id");
  const json::string* reference = string_field(*o, "reference");
  const json::string* status = string_field(*o, "status");
  const json::string* currency = string_field(*o, "currency");
  const auto amount = integer_field(*o, "amount_minor");
  if (!id || id->empty() || !reference || !status || !currency || !amount) {
    error = "charge lacks id, reference, status, amount_minor or currency";
    return std::nullopt;
  }
  const auto outcome = parse_status(*status);
  if (!outcome) {
    error = "unknown charge status \"" + std::string(*status) + "\"";
    return std::nullopt;
  }
  c.id = *id;
  c.reference = *reference;
  c.status = *outcome;
  c.amount_minor = *amount;
  c.currency = *currency;
  if (const json::value* payee = o->if_contains("payee"); payee && !payee->is_null()) {
    if (!payee->is_string()) {
      error = "charge payee is not a string";
      return std::nullopt;
    }
    c.payee = std::string(payee->get_string());
  }
  if (const json::value* code = o->if_contains("decline_code"); code && !code->is_null()) {
    if (!code->is_string()) {
      error = "charge decline_code is not a string";
      return std::nullopt;
    }
    c.decline_code = std::string(code->get_string());
  }
  return c;
}

std::string mismatch(const Charge& charge, const ChargeRequest& sent) {
  std::string out;
  const auto note = [&out](std::string what) {
    out += out.empty() ? "" : "; ";
    out += what;
  };
  if (charge.reference != sent.client_key)
    note("reference " + charge.reference + " != " + sent.client_key);
  if (charge.amount_minor != sent.amount_minor)
    note("amount_minor " + std::to_string(charge.amount_minor) +
         " != " + std::to_string(sent.amount_minor));
  if (charge.currency != sent.currency) note("currency " + charge.currency + " != " + sent.currency);
  if (charge.payee && *charge.payee != sent.payee)
    note("payee " + *charge.payee + " != " + sent.payee);
  return out;
}

VendorResult to_result(const Charge& charge, int http_status) {
  VendorResult r;
  r.outcome = charge.status;
  r.vendor_reference = charge.id;
  r.decline_code = charge.decline_code;
  r.amount_minor = charge.amount_minor;
  r.currency = charge.currency;
  r.http_status = http_status;
  return r;
}

std::string charge_body(const ChargeRequest& req) {
  return json::serialize(json::object{{"amount_minor", req.amount_minor},
                                      {"currency", req.currency},
                                      {"payee", req.payee},
                                      {"source", req.source},
                                      {"reference", req.client_key}});
}

std::string error_type(const std::string& body) {
  auto parsed = parse_strict_json(body);
  if (!std::holds_alternative<StrictJson>(parsed)) return {};
  const json::value& v = std::get<StrictJson>(parsed).root;
  if (!v.is_object()) return {};
  const json::value* err = v.get_object().if_contains("error");
  if (!err || !err->is_object()) return {};
  const json::string* type = string_field(err->get_object(), "type");
  return type ? std::string(*type) : std::string();
}

}  // namespace payorch::providers::sim
