#include "providers/wechatpay/signing.h"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <memory>
#include <stdexcept>
#include <vector>

#include "core/signature.h"
#include "providers/base64.h"
#include "providers/rsa_sha256.h"

namespace payorch::providers::wechatpay {
namespace {

struct CipherCtxFree {
  void operator()(EVP_CIPHER_CTX* c) const { EVP_CIPHER_CTX_free(c); }
};

std::string header_or_empty(const std::map<std::string, std::string>& headers, const std::string& name) {
  const auto it = headers.find(name);
  return it == headers.end() ? std::string() : it->second;
}

}  // namespace

std::optional<std::string> authorization(const std::string& mchid, const std::string& serial_no,
                                         const std::string& private_key_pem, std::string_view method,
                                         std::string_view path_and_query, std::string_view body,
                                         std::int64_t timestamp, std::string_view nonce) {
  const std::string ts = std::to_string(timestamp);
  std::string message;
  message.append(method).append("\n").append(path_and_query).append("\n").append(ts).append("\n");
  message.append(nonce).append("\n").append(body).append("\n");
  const auto signature = rsa_sha256_sign_base64(private_key_pem, message);
  if (!signature) return std::nullopt;
  return "WECHATPAY2-SHA256-RSA2048 mchid=\"" + mchid + "\",nonce_str=\"" + std::string(nonce) +
         "\",signature=\"" + *signature + "\",timestamp=\"" + ts + "\",serial_no=\"" + serial_no + "\"";
}

std::string random_nonce() {
  static constexpr std::string_view alphabet =
      "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof bytes) != 1) throw std::runtime_error("RAND_bytes failed");
  std::string out;
  for (unsigned char b : bytes) out.push_back(alphabet[b % alphabet.size()]);
  return out;
}

std::optional<SignedHeaders> signed_headers(const std::map<std::string, std::string>& headers) {
  SignedHeaders h{header_or_empty(headers, "wechatpay-timestamp"), header_or_empty(headers, "wechatpay-nonce"),
                  header_or_empty(headers, "wechatpay-signature"), header_or_empty(headers, "wechatpay-serial")};
  if (h.timestamp.empty() || h.nonce.empty() || h.signature.empty() || h.serial.empty()) return std::nullopt;
  return h;
}

std::string_view to_string(SignatureCheck c) {
  switch (c) {
    case SignatureCheck::ok: return "signature verified";
    case SignatureCheck::missing_headers: return "Wechatpay-Timestamp/-Nonce/-Signature/-Serial missing";
    case SignatureCheck::wrong_serial: return "Wechatpay-Serial is not the configured platform serial";
    case SignatureCheck::bad_signature: return "Wechatpay-Signature does not verify";
  }
  return "?";
}

SignatureCheck verify_signature(const std::map<std::string, std::string>& headers, std::string_view body,
                                const std::string& platform_serial, const std::string& platform_public_key_pem) {
  const auto h = signed_headers(headers);
  if (!h) return SignatureCheck::missing_headers;
  if (platform_serial.empty() || !constant_time_equal(h->serial, platform_serial)) return SignatureCheck::wrong_serial;
  std::string message;
  message.append(h->timestamp).append("\n").append(h->nonce).append("\n").append(body).append("\n");
  return rsa_sha256_verify_base64(platform_public_key_pem, message, h->signature) ? SignatureCheck::ok
                                                                                  : SignatureCheck::bad_signature;
}

std::optional<std::string> decrypt_aes_256_gcm(const std::string& key, std::string_view nonce,
                                               std::string_view associated_data,
                                               std::string_view ciphertext_base64) {
  constexpr std::size_t tag_size = 16;
  if (key.size() != 32 || nonce.empty()) return std::nullopt;
  const auto bytes = base64_decode(ciphertext_base64);
  if (!bytes || bytes->size() < tag_size) return std::nullopt;
  const std::size_t text_size = bytes->size() - tag_size;
  std::unique_ptr<EVP_CIPHER_CTX, CipherCtxFree> ctx(EVP_CIPHER_CTX_new());
  if (!ctx) return std::nullopt;
  if (EVP_DecryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, nullptr, nullptr) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_IVLEN, static_cast<int>(nonce.size()), nullptr) != 1 ||
      EVP_DecryptInit_ex(ctx.get(), nullptr, nullptr, reinterpret_cast<const unsigned char*>(key.data()),
                         reinterpret_cast<const unsigned char*>(nonce.data())) != 1)
    return std::nullopt;
  int n = 0;
  if (!associated_data.empty() &&
      EVP_DecryptUpdate(ctx.get(), nullptr, &n, reinterpret_cast<const unsigned char*>(associated_data.data()),
                        static_cast<int>(associated_data.size())) != 1)
    return std::nullopt;
  std::string plain(text_size + 16, '\0');
  auto* out = reinterpret_cast<unsigned char*>(plain.data());
  if (EVP_DecryptUpdate(ctx.get(), out, &n, bytes->data(), static_cast<int>(text_size)) != 1) return std::nullopt;
  int total = n;
  std::vector<unsigned char> tag(bytes->end() - tag_size, bytes->end());
  if (EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, static_cast<int>(tag_size), tag.data()) != 1)
    return std::nullopt;
  if (EVP_DecryptFinal_ex(ctx.get(), out + total, &n) != 1) return std::nullopt;  // the tag did not verify
  total += n;
  plain.resize(static_cast<std::size_t>(total));
  return plain;
}

}  // namespace payorch::providers::wechatpay
