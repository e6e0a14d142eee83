#include "providers/rsa_sha256.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <map>
#include <memory>
#include <mutex>
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
using Pkey = std::shared_ptr<EVP_PKEY>;

Pkey parse_key(const std::string& pem, bool is_private) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) return nullptr;
  Pkey key(is_private ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr)
                      : PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr),
           PkeyFree{});
  if (key && EVP_PKEY_base_id(key.get()) != EVP_PKEY_RSA) return nullptr;
  return key;
}

// Parsed keys by their PEM text: a key is parsed once, and again only when a reload brings
// another PEM. Each signature has its own EVP_MD_CTX; the EVP_PKEY itself is only read, which
// OpenSSL allows from several threads. Bounded: the keys of the configured providers, old and
// new across a few rotations; past that the cache starts over.
class KeyCache {
public:
  Pkey get(const std::string& pem, bool is_private) {
    {
      std::lock_guard lock(mutex_);
      if (auto it = keys_.find({pem, is_private}); it != keys_.end()) return it->second;
    }
    Pkey key = parse_key(pem, is_private);
    if (!key) return nullptr;  // an unreadable key is not kept: config refuses those anyway
    std::lock_guard lock(mutex_);
    if (keys_.size() >= max_keys) keys_.clear();
    keys_.emplace(std::make_pair(pem, is_private), key);
    return key;
  }

private:
  static constexpr std::size_t max_keys = 64;
  std::mutex mutex_;
  std::map<std::pair<std::string, bool>, Pkey> keys_;
};

Pkey read_key(const std::string& pem, bool is_private) {
  static KeyCache cache;
  return cache.get(pem, is_private);
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
