#include "http/auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "core/ascii.h"

namespace payorch::http {
namespace {

std::array<unsigned char, 32> sha256(std::string_view s) {
  std::array<unsigned char, 32> out{};
  unsigned int len = 0;
  EVP_Digest(s.data(), s.size(), out.data(), &len, EVP_sha256(), nullptr);
  return out;
}

}  // namespace

Authenticator::Authenticator(const config::Config& cfg) : live_(cfg.live) {
  source_ = live_ ? live_->get() : std::make_shared<const config::Secrets>(config::secrets_of(cfg));
  fixed_ = table_of(*source_);
}

std::shared_ptr<const Authenticator::Table> Authenticator::table_of(const config::Secrets& secrets) {
  auto t = std::make_shared<Table>();
  for (const auto& [id, token] : secrets.tenant_tokens)
    t->tenants.push_back(Entry{sha256(token), id});
  for (const auto& op : secrets.operators) t->operators.push_back(Entry{sha256(op.token), op.name});
  return t;
}

std::shared_ptr<const Authenticator::Table> Authenticator::table() const {
  std::shared_ptr<const config::Secrets> now = live_ ? live_->get() : nullptr;
  std::lock_guard lock(mutex_);
  if (now && now != source_) {
    source_ = std::move(now);
    fixed_ = table_of(*source_);
  }
  return fixed_;
}

std::optional<Authenticator::Digest> Authenticator::bearer_digest(std::string_view header) {
  constexpr std::string_view scheme = "Bearer ";
  if (header.size() <= scheme.size() || !ascii_iequals(header.substr(0, scheme.size()), scheme))
    return std::nullopt;
  std::string_view token = header.substr(scheme.size());
  while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
  while (!token.empty() && token.back() == ' ') token.remove_suffix(1);
  if (token.empty()) return std::nullopt;
  return sha256(token);
}

const Authenticator::Entry* Authenticator::match(const std::vector<Entry>& entries, const Digest& d) {
  const Entry* found = nullptr;
  for (const auto& e : entries)  // no early exit: every entry costs the same
    if (CRYPTO_memcmp(e.digest.data(), d.data(), d.size()) == 0) found = &e;
  return found;
}

std::optional<std::string> Authenticator::tenant(std::string_view header) const {
  auto d = bearer_digest(header);
  if (!d) return std::nullopt;
  const std::shared_ptr<const Table> t = table();
  const Entry* found = match(t->tenants, *d);
  if (!found) return std::nullopt;
  return found->name;
}

std::optional<std::string> Authenticator::admin_operator(std::string_view header) const {
  auto d = bearer_digest(header);
  if (!d) return std::nullopt;
  const std::shared_ptr<const Table> t = table();
  const Entry* found = match(t->operators, *d);
  if (!found) return std::nullopt;
  return found->name;
}

}  // namespace payorch::http
