#pragma once
// Reading members of a vendor's JSON object, the same way in every dialect.
#include <boost/json/object.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace payorch::providers {

// A JSON integer member that fits int64; nullopt when absent or of another type (1200.0 or
// "1200" is not an amount).
std::optional<std::int64_t> integer_member(const boost::json::object& o, std::string_view key);

// A JSON string member; nullopt when absent or of another type.
std::optional<std::string> string_member(const boost::json::object& o, std::string_view key);

// `text` read with the one JSON reading policy (core/strict_json.h: an answer naming a key
// twice is as unreadable as a broken one); nullopt unless it is an object.
std::optional<boost::json::object> json_object(const std::string& text);

}  // namespace payorch::providers
