#pragma once
// Signature primitives shared by vendor dialects ("t=…,v1=<hex HMAC-SHA256>" schemes).
#include <string>
#include <string_view>

namespace payorch::providers {

// Lower-case hex of HMAC-SHA256(key, data).
std::string hmac_sha256_hex(std::string_view key, std::string_view data);

// Compares in time that depends only on the lengths (CRYPTO_memcmp), so a forger cannot learn
// a signature byte by byte from response times. Lengths are not secret (fixed per scheme).
bool constant_time_equal(std::string_view a, std::string_view b);

}  // namespace payorch::providers
