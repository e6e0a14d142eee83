// The t=,v1= signature scheme: payorch's one signer and verifier (webhooks, vendor callbacks).
#include <doctest/doctest.h>

#include <cctype>
#include <string>

#include "core/hex.h"
#include "core/signature.h"

using namespace payorch;
using Result = SignatureVerdict::Result;

namespace {

constexpr std::int64_t t0 = 1'700'000'000;
constexpr const char* body = R"({"id":"evt_1"})";

}  // namespace

TEST_CASE("sign_timestamped: t=<unix>,v1=<hex HMAC-SHA256(secret, \"<t>.<body>\")>") {
  CHECK(sign_timestamped("whsec_test", t0, body) ==
        "t=1700000000,v1=c89214b5b5da833daed6f0b8c5bb6bd58cea9022bd80ccc78230f3942d632925");
  CHECK(sign_timestamped("other", t0, body) != sign_timestamped("whsec_test", t0, body));
  CHECK(sign_timestamped("whsec_test", t0, body) ==
        "t=1700000000,v1=" + hmac_sha256_hex("whsec_test", std::to_string(t0) + "." + body));
}

TEST_CASE("verify_timestamped: what sign_timestamped signs verifies") {
  const std::string header = sign_timestamped("whsec_test", t0, body);
  const SignatureVerdict v = verify_timestamped(header, body, "whsec_test", t0 + 7, 300);
  CHECK(v.result == Result::valid);
  CHECK(v.t == t0);
  CHECK(v.age_s == 7);
  // Spaces around parts, upper-case hex, other schemes and a second (rotated) v1 are all fine.
  std::string upper = header.substr(header.find("v1=") + 3);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  CHECK(verify_timestamped("t=" + std::to_string(t0) + ", v0=abc, v1=" + std::string(64, '0') +
                               " , v1=" + upper,
                           body, "whsec_test", t0, 300)
            .result == Result::valid);
}

TEST_CASE("verify_timestamped: the tolerance window holds its edge, both ways") {
  const std::string header = sign_timestamped("whsec_test", t0, body);
  CHECK(verify_timestamped(header, body, "whsec_test", t0 + 300, 300).result == Result::valid);
  CHECK(verify_timestamped(header, body, "whsec_test", t0 - 300, 300).result == Result::valid);
  const SignatureVerdict late = verify_timestamped(header, body, "whsec_test", t0 + 301, 300);
  CHECK(late.result == Result::stale);
  CHECK(late.age_s == 301);
  CHECK(verify_timestamped(header, body, "whsec_test", t0 - 301, 300).result == Result::stale);
  CHECK(verify_timestamped(header, body, "whsec_test", t0, 0).result == Result::valid);
}

TEST_CASE("verify_timestamped: a wrong secret, body or timestamp is a mismatch, not stale") {
  const std::string header = sign_timestamped("whsec_test", t0, body);
  CHECK(verify_timestamped(header, body, "whsec_other", t0, 300).result == Result::mismatch);
  CHECK(verify_timestamped(header, std::string(body) + " ", "whsec_test", t0, 300).result ==
        Result::mismatch);
  const std::string moved = "t=" + std::to_string(t0 + 1) + header.substr(header.find(','));
  CHECK(verify_timestamped(moved, body, "whsec_test", t0, 300).result == Result::mismatch);
  // A mismatch far outside the window is still a mismatch: the signature is checked first.
  CHECK(verify_timestamped(header, body, "whsec_other", t0 + 10'000, 300).result == Result::mismatch);
  // The empty secret matches nothing, not even its own signature.
  CHECK(verify_timestamped(sign_timestamped("", t0, body), body, "", t0, 300).result ==
        Result::mismatch);
}

TEST_CASE("verify_timestamped: a malformed header") {
  const std::string v1 = ",v1=" + std::string(64, '0');
  for (const std::string& header :
       {std::string(), std::string("garbage"), "v1=" + std::string(64, '0'), std::string("t=1700000000"),
        std::string("t=1700000000,v0=abc"), "t=" + v1, "t=-5" + v1, "t=17e8" + v1,
        "t=1234567890123" + v1, "t= 1700000000x" + v1}) {
    CAPTURE(header);
    CHECK(verify_timestamped(header, body, "whsec_test", t0, 300).result == Result::malformed);
  }
}

TEST_CASE("constant_time_equal") {
  CHECK(constant_time_equal("", ""));
  CHECK(constant_time_equal("abc", "abc"));
  CHECK_FALSE(constant_time_equal("abc", "abd"));
  CHECK_FALSE(constant_time_equal("abc", "abcd"));
}

TEST_CASE("hmac_sha256 and hex_decode: RFC 4231 test case 2, and keys spelled in hex") {
  // RFC 4231 §4.3: key "Jefe", data "what do ya want for nothing?".
  const std::string expected = "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843";
  CHECK(hmac_sha256_hex("Jefe", "what do ya want for nothing?") == expected);
  CHECK(hmac_sha256("Jefe", "what do ya want for nothing?") == *hex_decode(expected));
  CHECK(hex_decode("4A6566") == std::optional<std::string>("Jef"));
  CHECK(hex_decode("4a6566") == std::optional<std::string>("Jef"));
  CHECK(hex_decode("") == std::optional<std::string>(""));
  CHECK_FALSE(hex_decode("4a6").has_value());   // odd count
  CHECK_FALSE(hex_decode("4g").has_value());    // not a hex digit
  CHECK_FALSE(hex_decode("4a 6").has_value());
}
