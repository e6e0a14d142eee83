#include "providers/json_fields.h"

#include <limits>
#include <variant>

#include "core/strict_json.h"

namespace payorch::providers {

std::optional<std::int64_t> integer_member(const boost::json::object& o, std::string_view key) {
  const boost::json::value* v = o.if_contains(key);
  if (!v) return std::nullopt;
  if (const auto* i = v->if_int64()) return *i;
  if (const auto* u = v->if_uint64(); u && *u <= std::numeric_limits<std::int64_t>::max())
    return static_cast<std::int64_t>(*u);
  return std::nullopt;
}

std::optional<std::string> string_member(const boost::json::object& o, std::string_view key) {
  const boost::json::value* v = o.if_contains(key);
  if (!v || !v->is_string()) return std::nullopt;
  return std::string(v->get_string());
}

std::optional<boost::json::object> json_object(const std::string& text) {
  auto parsed = parse_strict_json(text);
  if (!std::holds_alternative<StrictJson>(parsed)) return std::nullopt;
  boost::json::value root = std::get<StrictJson>(std::move(parsed)).root;
  if (!root.is_object()) return std::nullopt;
  return std::move(root.get_object());
}

}  // namespace payorch::providers
