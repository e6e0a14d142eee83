#pragma once
// WeChat Pay API v3 signatures and callback encryption (docs/vendors.md "WeChat Pay"):
// - requests carry Authorization: WECHATPAY2-SHA256-RSA2048 mchid="…",nonce_str="…",
//   signature="…",timestamp="…",serial_no="…", the signature being SHA256-RSA with the
//   merchant's key over "METHOD\nURL\nTIMESTAMP\nNONCE\nBODY\n", URL = path and query
//   (https://wechatpay-api.gitbook.io/wechatpay-api-v3/qian-ming-zhi-nan-1/qian-ming-sheng-cheng);
// - answers and callbacks carry Wechatpay-Timestamp, -Nonce, -Signature and -Serial, the
//   signature being SHA256-RSA with the platform key over "TIMESTAMP\nNONCE\nBODY\n"
//   an empty body (204) leaves the last line a bare "\n"; the serial must be the platform key's
//   (https://pay.weixin.qq.com/wiki/doc/apiv3/wechatpay/wechatpay4_1.shtml);
// - callbacks carry their `resource` encrypted with AEAD_AES_256_GCM under the APIv3 key, with
//   resource.nonce (12 bytes) and resource.associated_data; the ciphertext is base64 of the
//   encrypted bytes followed by the 16-byte tag
//   (https://pay.weixin.qq.com/wiki/doc/apiv3/apis/chapter3_2_5.shtml: key 32 bytes, nonce 12,
//   associated_data maybe empty; rfc5116).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace payorch::providers::wechatpay {

// The Authorization header's value; nullopt when the private key cannot sign.
std::optional<std::string> authorization(const std::string& mchid, const std::string& serial_no,
                                         const std::string& private_key_pem, std::string_view method,
                                         std::string_view path_and_query, std::string_view body,
                                         std::int64_t timestamp, std::string_view nonce);

// 32 characters of [0-9A-Za-z] from OpenSSL's generator.
std::string random_nonce();

// What a signed answer or callback's headers (lower-case keys) say.
struct SignedHeaders {
  std::string timestamp;
  std::string nonce;
  std::string signature;
  std::string serial;
};
std::optional<SignedHeaders> signed_headers(const std::map<std::string, std::string>& headers);

enum class SignatureCheck { ok, missing_headers, wrong_serial, bad_signature };
std::string_view to_string(SignatureCheck c);

// Checks the four headers against `body` as received: the serial must be the configured
// platform serial (compared in constant time) and the signature must verify under the
// platform public key.
SignatureCheck verify_signature(const std::map<std::string, std::string>& headers, std::string_view body,
                                const std::string& platform_serial, const std::string& platform_public_key_pem);

// AEAD_AES_256_GCM: the plaintext of base64 `ciphertext` (ending in the 16-byte tag) under the
// 32-byte `key`, `nonce` and `associated_data`; nullopt when anything does not hold (bad
// base64, wrong key size, the tag does not verify).
std::optional<std::string> decrypt_aes_256_gcm(const std::string& key, std::string_view nonce,
                                               std::string_view associated_data,
                                               std::string_view ciphertext_base64);

}  // namespace payorch::providers::wechatpay
