#include "vendor_sim/signature.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <stdexcept>

namespace payorch::vendor_sim {
namespace {

std::string to_hex(const unsigned char* bytes, unsigned int n) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * n);
  for (unsigned int i = 0; i < n; ++i) {
    out += hex[bytes[i] >> 4];
    out += hex[bytes[i] & 0xf];
  }
  return out;
}

}  // namespace

std::string sha256_hex(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int md_len = 0;
  if (!EVP_Digest(data.data(), data.size(), md, &md_len, EVP_sha256(), nullptr))
    throw std::runtime_error("SHA-256 failed");
  return to_hex(md, md_len);
}

std::string hmac_sha256_hex(std::string_view secret, std::string_view data) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_len = 0;
  if (!HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
            reinterpret_cast<const unsigned char*>(data.data()), data.size(), mac, &mac_len))
    throw std::runtime_error("HMAC-SHA256 failed");
  return to_hex(mac, mac_len);
}

std::string sign_callback(std::string_view secret, std::int64_t unix_s, std::string_view body) {
  const std::string t = std::to_string(unix_s);
  std::string signed_text;
  signed_text.reserve(t.size() + 1 + body.size());
  signed_text.append(t).append(".").append(body);
  return "t=" + t + ",v1=" + hmac_sha256_hex(secret, signed_text);
}

}  // namespace payorch::vendor_sim
