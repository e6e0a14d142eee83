#pragma once
// What the sim protocol's charge and refund objects share (docs/contract.md §5 and §8):
// {"id","reference","status":"succeeded"|"declined"|"pending","amount_minor","currency",
//  "decline_code":null|"…"}. charge.h and refund.h add each object's own members.
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "providers/adapter.h"

namespace payorch::providers::sim {

struct VendorObject {
  std::string id;
  std::string reference;
  VendorOutcome status = VendorOutcome::pending;  // succeeded, declined or pending
  std::int64_t amount_minor = 0;
  std::string currency;
  std::optional<std::string> decline_code;
};

// Reads the shared members of a `noun` ("charge", "refund") into `out` and returns the object
// for the caller's own members; nullptr (with `error` set) when v is not an object, a required
// member is missing or has the wrong type, or the status is not one of the three. Never
// guesses a missing member.
const boost::json::object* parse_object(const boost::json::value& v, std::string_view noun,
                                        VendorObject& out, std::string& error);

// A string member; nullptr when absent or of another type.
const boost::json::string* string_field(const boost::json::object& o, std::string_view key);

// A member that is a string or null (or absent, = null); false (with `error` set) for any
// other type.
bool optional_string_field(const boost::json::object& o, std::string_view key,
                           std::string_view noun, std::optional<std::string>& out,
                           std::string& error);

// What differs between the object and what we sent in the members every request has:
// reference, amount_minor, currency. Empty when they agree.
std::string mismatch(const VendorObject& object, const std::string& client_key,
                     std::int64_t amount_minor, const std::string& currency);

// Appends `what` to a "; "-separated list of differences.
void add_difference(std::string& differences, const std::string& what);

// A VendorResult carrying the object's fields, with the object's status as outcome.
VendorResult to_result(const VendorObject& object, int http_status);

}  // namespace payorch::providers::sim
