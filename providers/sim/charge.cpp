#include "providers/sim/charge.h"

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include "core/strict_json.h"

namespace payorch::providers::sim {

namespace json = boost::json;

std::optional<Charge> parse_charge(const json::value& v, std::string& error) {
  Charge c;
  const json::object* o = parse_object(v, "charge", c, error);
  if (!o || !optional_string_field(*o, "payee", "charge", c.payee, error)) return std::nullopt;
  return c;
}

std::string mismatch(const Charge& charge, const ChargeRequest& sent) {
  std::string out = mismatch(charge, sent.client_key, sent.amount_minor, sent.currency);
  if (charge.payee && *charge.payee != sent.payee)
    add_difference(out, "payee " + *charge.payee + " != " + sent.payee);
  return out;
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
