#pragma once
// request_digest: "sha256:" + hex SHA-256 of the RFC 8785 (JCS) canonical JSON of the
// intent-determining fields {operation_type, amount_minor, currency, payee, source, provider?}.
#include <boost/json/value.hpp>
#include <string>
#include <string_view>

#include "core/intent.h"

namespace payorch {

// RFC 8785 canonical serialisation: object members sorted by UTF-16 code units, no
// whitespace, minimal string escapes, numbers as ECMAScript Number.prototype.toString.
std::string jcs_canonicalize(const boost::json::value& v);

std::string sha256_hex(std::string_view data);

// The JSON object that the digest covers (provider only when the request named one).
boost::json::object digest_fields(const Intent& intent);

std::string request_digest(const Intent& intent);

}  // namespace payorch
