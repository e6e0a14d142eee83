#include "providers/json_fields.h"

#include <limits>

namespace payorch::providers {

std::optional<std::int64_t> integer_member(const boost::json::object& o, std::string_view key) {
  const boost::json::value* v = o.if_contains(key);
  if (!v) return std::nullopt;
  if (const auto* i = v->if_int64()) return *i;
  if (const auto* u = v->if_uint64(); u && *u <= std::numeric_limits<std::int64_t>::max())
    return static_cast<std::int64_t>(*u);
  return std::nullopt;
}

}  // namespace payorch::providers
