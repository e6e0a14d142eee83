#pragma once
// The sim's hashing, on OpenSSL: SHA-256 for request hashes and the API key check, and
// Sim-Signature (docs/contract.md §5): "t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>".
// The same scheme as payorch's own Payorch-Signature, so receivers share one verifier.
#include <cstdint>
#include <string>
#include <string_view>

namespace payorch::vendor_sim {

// Lower-case hex SHA-256 of `data`.
std::string sha256_hex(std::string_view data);

// Lower-case hex HMAC-SHA256 of `data` under `secret`.
std::string hmac_sha256_hex(std::string_view secret, std::string_view data);

// The header value for `body` signed at `unix_s`.
std::string sign_callback(std::string_view secret, std::int64_t unix_s, std::string_view body);

}  // namespace payorch::vendor_sim
