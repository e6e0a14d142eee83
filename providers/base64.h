#pragma once
// Standard base64 (RFC 4648, with padding) through OpenSSL, for the vendors that carry
// signatures and ciphertexts in it.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace payorch::providers {

std::string base64_encode(const unsigned char* data, std::size_t size);

// Strict: no whitespace, a length that is a multiple of 4; nullopt when malformed.
std::optional<std::vector<unsigned char>> base64_decode(std::string_view text);

}  // namespace payorch::providers
