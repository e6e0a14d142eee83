#pragma once
// The "t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>" signature scheme, on
// payorch's side: tenant webhooks are signed with it (Payorch-Signature) and vendor callbacks
// arrive with it (Sim-Signature). One signer, one verifier.
#include <cstdint>
#include <string>
#include <string_view>

namespace payorch {

// HMAC-SHA256(key, data): the 32 bytes, and their lower-case hex.
std::string hmac_sha256(std::string_view key, std::string_view data);
std::string hmac_sha256_hex(std::string_view key, std::string_view data);

// Compares in time that depends only on the lengths (CRYPTO_memcmp), so a forger cannot learn
// a signature byte by byte from response times. Lengths are not secret (fixed per scheme).
bool constant_time_equal(std::string_view a, std::string_view b);

// The header value for `body` signed with `secret` at unix time `t`.
std::string sign_timestamped(std::string_view secret, std::int64_t t, std::string_view body);

struct SignatureVerdict {
  enum class Result {
    valid,
    malformed,  // no t= (1-12 digits) or no v1= part
    mismatch,   // no v1= value is the body's signature under the secret (or the secret is empty)
    stale,      // signed, but t is more than the tolerance away from now (a replayed delivery)
  } result = Result::malformed;
  std::int64_t t = 0;      // the signed timestamp (unless malformed)
  std::int64_t age_s = 0;  // |now - t| (valid or stale)
};

// Checks `header` against `body` in this order: its form, then the signature (constant time;
// several v1= values are accepted during a secret rotation, and each is compared), then the
// timestamp within `tolerance_s` of `now_unix_s`. Parts other than t= and v1= (v0=, …) are
// ignored; the hex of v1= is read in any case. Without a secret every signature would be an
// HMAC under the empty key, so an empty secret matches nothing.
SignatureVerdict verify_timestamped(std::string_view header, std::string_view body,
                                    std::string_view secret, std::int64_t now_unix_s,
                                    std::int64_t tolerance_s);

}  // namespace payorch
