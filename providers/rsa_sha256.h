#pragma once
// RSA signatures with SHA-256 (PKCS #1 v1.5) over PEM keys, base64-encoded: the one place both
// WeChat Pay API v3 ("SHA256-RSA2048") and Alipay OpenAPI ("RSA2" = SHA256WithRSA) sign
// requests and check answers and callbacks. All through OpenSSL EVP.
#include <optional>
#include <string>
#include <string_view>

namespace payorch::providers {

// base64(RSA-SHA256 signature of `data`) with the private key in `private_key_pem` (PKCS #8
// "PRIVATE KEY" or PKCS #1 "RSA PRIVATE KEY"); nullopt when the key is unreadable or signing
// fails.
std::optional<std::string> rsa_sha256_sign_base64(const std::string& private_key_pem,
                                                  std::string_view data);

// Whether `signature_base64` is a valid RSA-SHA256 signature of `data` under the public key in
// `public_key_pem` (SubjectPublicKeyInfo, "PUBLIC KEY"). False for an unreadable key, signature
// or base64, never an exception.
bool rsa_sha256_verify_base64(const std::string& public_key_pem, std::string_view data,
                              std::string_view signature_base64);

}  // namespace payorch::providers
