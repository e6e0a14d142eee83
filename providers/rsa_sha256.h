#pragma once
// RSA signatures with SHA-256 (PKCS#1 v1.5, "SHA256withRSA"), the one home for the vendors that
// sign with RSA keys in PEM: WeChat Pay API v3 (WECHATPAY2-SHA256-RSA2048) and Alipay (RSA2).
// Everything goes through OpenSSL's EVP interface. Callers pass the PEM as it is now (a reload
// may replace it); a PEM is parsed once and its key kept, by the PEM's text, for the next calls.
// Any thread.
#include <optional>
#include <string>
#include <string_view>

namespace payorch::providers {

// base64 of the signature of `data` under the PEM private key (PKCS#8 or PKCS#1); nullopt when
// the key cannot be read or is not RSA, or signing fails.
std::optional<std::string> rsa_sha256_sign_base64(const std::string& private_key_pem, std::string_view data);

// True when `signature_base64` is a valid signature of `data` under the PEM public key
// ("BEGIN PUBLIC KEY", as config checks it). False for an unreadable key, bad base64 or a mismatch.
bool rsa_sha256_verify_base64(const std::string& public_key_pem, std::string_view data,
                              std::string_view signature_base64);

}  // namespace payorch::providers
