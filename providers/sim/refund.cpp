#include "providers/sim/refund.h"

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

namespace payorch::providers::sim {

namespace json = boost::json;

std::optional<Refund> parse_refund(const json::value& v, std::string& error) {
  Refund r;
  const json::object* o = parse_object(v, "refund", r, error);
  if (!o) return std::nullopt;
  const json::string* charge = string_field(*o, "charge");
  if (!charge) {
    error = "refund lacks charge";
    return std::nullopt;
  }
  r.charge = *charge;
  return r;
}

std::string mismatch(const Refund& refund, const RefundRequest& sent) {
  std::string out = mismatch(refund, sent.client_key, sent.amount_minor, sent.currency);
  // A refund of another charge under our reference moves someone else's money.
  if (refund.charge != sent.charge_reference)
    add_difference(out, "charge " + refund.charge + " != " + sent.charge_reference);
  return out;
}

std::string refund_body(const RefundRequest& req) {
  return json::serialize(json::object{{"charge", req.charge_reference},
                                      {"amount_minor", req.amount_minor},
                                      {"currency", req.currency},
                                      {"reference", req.client_key}});
}

}  // namespace payorch::providers::sim
