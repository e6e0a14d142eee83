#pragma once
// The request members that charges and refunds share (docs/contract.md §5 and §8, the `sim`
// protocol): one home for each validation rule. Pure functions; each returns false and puts a
// one-line reason in `error`.
#include <boost/json/object.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace payorch::vendor_sim {

// The longest payee, source or charge id, in bytes: the same bound as payorch's intake, so that
// every payment payorch accepts can be charged here (tests/vendor_sim/charge_test.cpp checks both).
inline constexpr std::size_t max_text_chars = 255;

// An Idempotency-Key: 1–255 visible ASCII characters.
bool valid_idempotency_key(std::string_view key, std::string& error);

// The body as a JSON object; nullptr (with `error`) when it is not one. `storage` keeps it.
const boost::json::object* parse_object(std::string_view body, boost::json::value& storage,
                                        std::string& error);

// amount_minor: an integer in [1, 2^53−1]. A float (even 100.0), a string or a number beyond
// int64 is refused, never rounded.
bool amount_member(const boost::json::object& o, std::int64_t& out, std::string& error);

// A required non-empty string member of at most max_text_chars bytes.
bool text_member(const boost::json::object& o, std::string_view key, std::string& out,
                 std::string& error);

// currency: three upper-case letters.
bool currency_member(const boost::json::object& o, std::string& out, std::string& error);

// reference: a text member equal to the Idempotency-Key.
bool reference_member(const boost::json::object& o, std::string_view idempotency_key,
                      std::string& out, std::string& error);

}  // namespace payorch::vendor_sim
