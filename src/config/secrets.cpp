#include "config/secrets.h"

namespace payorch::config {
namespace {

std::string value_in(const std::map<std::string, std::string, std::less<>>& m, std::string_view key) {
  auto it = m.find(key);
  return it == m.end() ? std::string() : it->second;
}

// `next`'s value for each key `running` has, else `current`'s.
template <class Keys, class Value>
std::map<std::string, Value, std::less<>> for_running(const Keys& running_keys,
                                                      const std::map<std::string, Value, std::less<>>& current,
                                                      const std::map<std::string, Value, std::less<>>& next) {
  std::map<std::string, Value, std::less<>> out;
  for (const std::string& key : running_keys) {
    if (auto it = next.find(key); it != next.end()) out.emplace(key, it->second);
    else if (auto old = current.find(key); old != current.end()) out.emplace(key, old->second);
  }
  return out;
}

}  // namespace

AdapterKeys adapter_keys_of(const AdapterOptions& o) {
  return AdapterKeys{o.serial_no,  o.private_key, o.platform_serial, o.platform_public_key,
                     o.api_v3_key, o.alipay_public_key};
}

Secrets secrets_of(const Config& cfg) {
  Secrets s;
  if (!cfg.admin_token.empty())
    s.operators.push_back(Operator{std::string(legacy_admin_operator), cfg.admin_token});
  s.operators.insert(s.operators.end(), cfg.operators.begin(), cfg.operators.end());
  for (const Tenant& t : cfg.tenants) {
    s.tenant_tokens.emplace_back(t.id, t.token);
    if (t.webhook) s.webhook_secrets.emplace(t.id, t.webhook->secret);
  }
  for (const Provider& p : cfg.providers) {
    s.api_keys.emplace(p.name, p.api_key);
    s.callback_secrets.emplace(p.name, p.callback.secret);
    s.adapter_keys.emplace(p.name, adapter_keys_of(p.options));
  }
  s.tls = cfg.server.tls;
  return s;
}

Secrets reloaded_secrets(const Secrets& current, const Config& running, const Config& next) {
  const Secrets fresh = secrets_of(next);
  Secrets out;
  out.operators = fresh.operators;
  out.tls = running.server.tls && fresh.tls ? fresh.tls : current.tls;
  std::map<std::string, std::string, std::less<>> current_tokens(current.tenant_tokens.begin(),
                                                                 current.tenant_tokens.end());
  std::map<std::string, std::string, std::less<>> fresh_tokens(fresh.tenant_tokens.begin(),
                                                               fresh.tenant_tokens.end());
  std::vector<std::string> tenants, hooked, providers;
  for (const Tenant& t : running.tenants) {
    tenants.push_back(t.id);
    if (t.webhook) hooked.push_back(t.id);
  }
  for (const Provider& p : running.providers) providers.push_back(p.name);
  for (const auto& [id, token] : for_running(tenants, current_tokens, fresh_tokens))
    out.tenant_tokens.emplace_back(id, token);
  out.webhook_secrets = for_running(hooked, current.webhook_secrets, fresh.webhook_secrets);
  out.api_keys = for_running(providers, current.api_keys, fresh.api_keys);
  out.callback_secrets = for_running(providers, current.callback_secrets, fresh.callback_secrets);
  out.adapter_keys = for_running(providers, current.adapter_keys, fresh.adapter_keys);
  return out;
}

std::vector<std::string> restart_only_changes(const Config& running, const Config& next) {
  std::vector<std::string> out;
  for (const auto& [section, text] : running.restart_sections) {
    auto it = next.restart_sections.find(section);
    if (it == next.restart_sections.end() || it->second != text) out.push_back(section);
  }
  for (const auto& [section, text] : next.restart_sections)
    if (!running.restart_sections.contains(section)) out.push_back(section);
  return out;
}

void make_live(Config& cfg) {
  cfg.live = std::make_shared<LiveSecrets>(secrets_of(cfg));
  for (Provider& p : cfg.providers) p.live = cfg.live;
}

std::shared_ptr<const Secrets> current_secrets(const Config& cfg) {
  if (cfg.live) return cfg.live->get();
  return std::make_shared<const Secrets>(secrets_of(cfg));
}

std::string webhook_secret(const Config& cfg, std::string_view tenant_id) {
  if (!cfg.live) {
    for (const Tenant& t : cfg.tenants)
      if (t.id == tenant_id && t.webhook) return t.webhook->secret;
    return {};
  }
  return value_in(cfg.live->get()->webhook_secrets, tenant_id);
}

std::string ProviderSecrets::api_key() const {
  return live_ ? value_in(live_->get()->api_keys, name_) : api_key_;
}

std::string ProviderSecrets::callback_secret() const {
  return live_ ? value_in(live_->get()->callback_secrets, name_) : callback_secret_;
}

std::shared_ptr<const AdapterKeys> ProviderSecrets::adapter_keys() const {
  if (!live_) return adapter_keys_;
  std::shared_ptr<const Secrets> now = live_->get();
  auto it = now->adapter_keys.find(name_);
  if (it == now->adapter_keys.end()) return std::make_shared<const AdapterKeys>();
  // Shares the snapshot's lifetime: no copy of the PEMs per call.
  return std::shared_ptr<const AdapterKeys>(now, &it->second);
}

}  // namespace payorch::config
