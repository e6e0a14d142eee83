#pragma once
// The sim protocol's refund object (docs/contract.md §8): object.h's members and "charge", the
// refunded charge's id:
// {"id":"rf_…","reference","charge","status":"succeeded"|"declined"|"pending","amount_minor",
//  "currency","decline_code":null|"…"}
#include <boost/json/value.hpp>

#include <optional>
#include <string>

#include "providers/adapter.h"
#include "providers/sim/object.h"

namespace payorch::providers::sim {

struct Refund : VendorObject {
  std::string charge;
};

// Parses a refund; nullopt (with `error` set) as parse_charge, and when "charge" is missing or
// not a string.
std::optional<Refund> parse_refund(const boost::json::value& v, std::string& error);

// Empty when the refund is the one we asked for: same reference, charge, amount and currency.
// Otherwise says what differs.
std::string mismatch(const Refund& refund, const RefundRequest& sent);

// The JSON body of a POST /v1/refunds for `req`.
std::string refund_body(const RefundRequest& req);

}  // namespace payorch::providers::sim
