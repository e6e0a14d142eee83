#include "http/auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

namespace payorch::http {
namespace {

std::array<unsigned char, 32> sha256(std::string_view s) {
  std::array<unsigned char, 32> out{};
  unsigned int len = 0;
  EVP_Digest(s.data(), s.size(), out.data(), &len, EVP_sha256(), nullptr);
  return out;
}

}  // namespace

Authenticator::Authenticator(const config::Config& cfg) : admin_(sha256(cfg.admin_token)) {
  for (const auto& t : cfg.tenants) tenants_.push_back(Entry{sha256(t.token), t.id});
}

std::optional<Authenticator::Digest> Authenticator::bearer_digest(std::string_view header) {
  constexpr std::string_view scheme = "Bearer ";
  if (header.size() <= scheme.size()) return std::nullopt;
  for (std::size_t i = 0; i < scheme.size(); ++i) {
    char c = header[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    char want = scheme[i];
    if (want >= 'A' && want <= 'Z') want = static_cast<char>(want - 'A' + 'a');
    if (c != want) return std::nullopt;
  }
  std::string_view token = header.substr(scheme.size());
  while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
  while (!token.empty() && token.back() == ' ') token.remove_suffix(1);
  if (token.empty()) return std::nullopt;
  return sha256(token);
}

std::optional<std::string> Authenticator::tenant(std::string_view header) const {
  auto d = bearer_digest(header);
  if (!d) return std::nullopt;
  const Entry* found = nullptr;
  for (const auto& e : tenants_)  // no early exit: every entry costs the same
    if (CRYPTO_memcmp(e.digest.data(), d->data(), d->size()) == 0) found = &e;
  if (!found) return std::nullopt;
  return found->tenant_id;
}

bool Authenticator::is_admin(std::string_view header) const {
  auto d = bearer_digest(header);
  return d && CRYPTO_memcmp(admin_.data(), d->data(), d->size()) == 0;
}

}  // namespace payorch::http
