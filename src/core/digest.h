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

// A refund's request_digest (docs/refunds.md): the same "sha256:" + JCS form over
// {"operation_type":"refund","payment_id","amount_minor"}. The payment's id, not its
// operation_id, since the id names the money; the currency is the payment's, so not asked.
boost::json::object refund_digest_fields(std::string_view payment_id, std::int64_t amount_minor);
std::string refund_request_digest(std::string_view payment_id, std::int64_t amount_minor);

}  // namespace payorch
