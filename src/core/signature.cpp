#include "core/signature.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <stdexcept>
#include <vector>

#include "core/ascii.h"
#include "core/hex.h"

namespace payorch {
namespace {

constexpr std::size_t max_timestamp_digits = 12;  // keeps the arithmetic below far from overflow

struct Signature {
  std::int64_t t = 0;
  std::vector<std::string> v1;  // lower-cased hex
};

std::optional<Signature> parse_signature(std::string_view header) {
  Signature sig;
  bool have_t = false;
  while (!header.empty()) {
    const std::size_t comma = header.find(',');
    std::string_view part = header.substr(0, comma);
    header = comma == std::string_view::npos ? std::string_view() : header.substr(comma + 1);
    while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
    while (!part.empty() && part.back() == ' ') part.remove_suffix(1);
    if (part.starts_with("t=")) {
      const std::string_view digits = part.substr(2);
      if (digits.empty() || digits.size() > max_timestamp_digits ||
          !std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c); }))
        return std::nullopt;
      sig.t = std::stoll(std::string(digits));
      have_t = true;
    } else if (part.starts_with("v1=")) {
      sig.v1.push_back(ascii_lower(part.substr(3)));
    }  // other schemes (v0=, …) are ignored, as a sender may add them
  }
  if (!have_t || sig.v1.empty()) return std::nullopt;
  return sig;
}

std::string signed_payload(std::int64_t t, std::string_view body) {
  std::string payload = std::to_string(t);
  payload += '.';
  payload += body;
  return payload;
}

}  // namespace

std::string hmac_sha256(std::string_view key, std::string_view data) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_len = 0;
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
           reinterpret_cast<const unsigned char*>(data.data()), data.size(), mac,
           &mac_len) == nullptr)
    throw std::runtime_error("HMAC-SHA256 failed");  // only on allocation failure
  return std::string(reinterpret_cast<const char*>(mac), mac_len);
}

std::string hmac_sha256_hex(std::string_view key, std::string_view data) {
  const std::string mac = hmac_sha256(key, data);
  return lower_hex(std::span<const unsigned char>(reinterpret_cast<const unsigned char*>(mac.data()), mac.size()));
}

bool constant_time_equal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  return a.empty() || CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string sign_timestamped(std::string_view secret, std::int64_t t, std::string_view body) {
  return "t=" + std::to_string(t) + ",v1=" + hmac_sha256_hex(secret, signed_payload(t, body));
}

SignatureVerdict verify_timestamped(std::string_view header, std::string_view body,
                                    std::string_view secret, std::int64_t now_unix_s,
                                    std::int64_t tolerance_s) {
  using Result = SignatureVerdict::Result;
  SignatureVerdict verdict;
  const std::optional<Signature> sig = parse_signature(header);
  if (!sig) return verdict;
  verdict.t = sig->t;
  verdict.result = Result::mismatch;
  if (secret.empty()) return verdict;
  const std::string expected = hmac_sha256_hex(secret, signed_payload(sig->t, body));
  bool match = false;
  for (const std::string& candidate : sig->v1)
    match = constant_time_equal(candidate, expected) || match;  // no early exit
  if (!match) return verdict;
  verdict.age_s = now_unix_s >= sig->t ? now_unix_s - sig->t : sig->t - now_unix_s;
  verdict.result = verdict.age_s > tolerance_s ? Result::stale : Result::valid;
  return verdict;
}

}  // namespace payorch
