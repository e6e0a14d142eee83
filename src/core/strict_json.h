#pragma once
// The one JSON reading policy for what payorch is sent: request bodies (intake, operator
// resolutions), vendor callbacks and vendor answers. RFC 8259 strictly (no comments or trailing
// commas, valid UTF-8, nothing after the value), bounded nesting, and no duplicated object key:
// boost::json::parse silently keeps one of two equal keys, so two readers of the same bytes
// could disagree about what was asked or reported — a signed callback saying both "succeeded"
// and "declined", or a resolution naming two outcomes.
#include <boost/json/value.hpp>

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <variant>

namespace payorch {

struct StrictJson {
  boost::json::value root;
  // The source text of each number that is a direct member of a top-level object, so that an
  // amount is judged by what the sender wrote ("100.0", "1e2") rather than by what a double
  // made of it.
  std::map<std::string, std::string, std::less<>> top_level_numbers;
};

struct StrictJsonError {
  enum class Kind { invalid, duplicate_key, too_deep } kind = Kind::invalid;
  std::string message;  // e.g. `duplicate object key "outcome"`, naming the key's path
};

inline constexpr std::size_t default_max_json_depth = 32;

std::variant<StrictJson, StrictJsonError> parse_strict_json(std::string_view text,
                                                            std::size_t max_depth = default_max_json_depth);

}  // namespace payorch
