#include "providers/rsa_sha256.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <memory>
#include <vector>

#include "providers/base64.h"

namespace payorch::providers {
namespace {

struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct MdCtxFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;

Pkey read_key(const std::string& pem, bool is_private) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) return nullptr;
  Pkey key(is_private ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr)
                      : PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr));
  if (key && EVP_PKEY_base_id(key.get()) != EVP_PKEY_RSA) return nullptr;
  return key;
}

}  // namespace

std::optional<std::string> rsa_sha256_sign_base64(const std::string& private_key_pem, std::string_view data) {
  const Pkey key = read_key(private_key_pem, true);
  if (!key) return std::nullopt;
  std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx(EVP_MD_CTX_new());
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key.get()) != 1) return std::nullopt;
  std::size_t size = 0;
  const auto* bytes = reinterpret_cast<const unsigned char*>(data.data());
  if (EVP_DigestSign(ctx.get(), nullptr, &size, bytes, data.size()) != 1) return std::nullopt;
  std::vector<unsigned char> signature(size);
  if (EVP_DigestSign(ctx.get(), signature.data(), &size, bytes, data.size()) != 1) return std::nullopt;
  return base64_encode(signature.data(), size);
}

bool rsa_sha256_verify_base64(const std::string& public_key_pem, std::string_view data,
                              std::string_view signature_base64) {
  const Pkey key = read_key(public_key_pem, false);
  if (!key) return false;
  const auto signature = base64_decode(signature_base64);
  if (!signature) return false;
  std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx(EVP_MD_CTX_new());
  if (!ctx || EVP_DigestVerifyInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key.get()) != 1) return false;
  return EVP_DigestVerify(ctx.get(), signature->data(), signature->size(),
                          reinterpret_cast<const unsigned char*>(data.data()), data.size()) == 1;
}

}  // namespace payorch::providers
