#pragma once
// The sim protocol's charge object (docs/contract.md §5): object.h's members and "payee":
// {"id":"ch_…","reference","status":"succeeded"|"declined"|"pending","amount_minor","currency",
//  "payee","decline_code":null|"…"}
#include <boost/json/value.hpp>

#include <optional>
#include <string>

#include "providers/adapter.h"
#include "providers/sim/object.h"

namespace payorch::providers::sim {

struct Charge : VendorObject {
  std::optional<std::string> payee;
};

// Parses a charge; nullopt (with `error` set) when a required field is missing or has the
// wrong type, or the status is not one of the three. Never guesses a missing field.
std::optional<Charge> parse_charge(const boost::json::value& v, std::string& error);

// Empty when the charge is the one we asked for: same reference, amount and currency (and
// payee, when the vendor reports it). Otherwise says what differs.
std::string mismatch(const Charge& charge, const ChargeRequest& sent);

// The JSON body of a POST /v1/charges for `req`.
std::string charge_body(const ChargeRequest& req);

// error.type of a {"error":{"type":…}} body, "" when the body has no such field.
std::string error_type(const std::string& body);

}  // namespace payorch::providers::sim
