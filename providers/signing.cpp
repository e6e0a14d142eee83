#include "providers/signing.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <stdexcept>

namespace payorch::providers {

std::string hmac_sha256_hex(std::string_view key, std::string_view data) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_len = 0;
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
           reinterpret_cast<const unsigned char*>(data.data()), data.size(), mac,
           &mac_len) == nullptr)
    throw std::runtime_error("HMAC-SHA256 failed");  // only on allocation failure
  static constexpr char digits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * mac_len);
  for (unsigned int i = 0; i < mac_len; ++i) {
    hex.push_back(digits[mac[i] >> 4]);
    hex.push_back(digits[mac[i] & 0x0f]);
  }
  return hex;
}

bool constant_time_equal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  return a.empty() || CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace payorch::providers
