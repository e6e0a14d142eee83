#pragma once
// The secret-bearing values of a configuration, which a reload (SIGHUP) replaces without a
// restart: admin and operator tokens, tenant tokens, webhook secrets, provider api keys and
// callback secrets, the wechatpay and alipay keys (with their serials), the listener's
// certificate and key. Everything else in a Config is read
// once at startup; a reload that changes it is reported (restart_only_changes) and not applied.
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/config.h"

namespace payorch::config {

// The RSA keys of the wechatpay and alipay adapters (providers[].options, read from their
// *_file settings). A key and the serial of its certificate change together: a WeChat Pay
// rotation publishes serial_no with private_key, platform_serial with platform_public_key.
struct AdapterKeys {
  std::string serial_no;            // wechatpay
  std::string private_key;          // wechatpay, alipay (PEM)
  std::string platform_serial;      // wechatpay
  std::string platform_public_key;  // wechatpay (PEM)
  std::string api_v3_key;           // wechatpay
  std::string alipay_public_key;    // alipay (PEM)
};

AdapterKeys adapter_keys_of(const AdapterOptions& options);

struct Secrets {
  // admin.token as the operator "admin" (when given), then admin.operators[].
  std::vector<Operator> operators;
  std::vector<std::pair<std::string, std::string>> tenant_tokens;  // tenant id, token
  std::map<std::string, std::string, std::less<>> webhook_secrets;   // by tenant id
  std::map<std::string, std::string, std::less<>> api_keys;          // by provider name
  std::map<std::string, std::string, std::less<>> callback_secrets;  // by provider name
  std::map<std::string, AdapterKeys, std::less<>> adapter_keys;      // by provider name
  std::optional<Tls> tls;
};

Secrets secrets_of(const Config& cfg);

// The secrets a reload of `running` to `next` publishes: next's operators and TLS files, and
// next's tokens and secrets for the tenants and providers `running` has (one that `next` lacks
// keeps its current value: adding or removing tenants and providers needs a restart).
Secrets reloaded_secrets(const Secrets& current, const Config& running, const Config& next);

// The top-level sections (server, database, tenants, ...) whose settings other than secrets
// differ between `running` and `next`: what a reload cannot apply.
std::vector<std::string> restart_only_changes(const Config& running, const Config& next);

// Holds the current Secrets; any thread. A reader takes the snapshot once per request or call
// and keeps using it, so a request never sees half of a reload.
class LiveSecrets {
public:
  explicit LiveSecrets(Secrets initial)
      : current_(std::make_shared<const Secrets>(std::move(initial))) {}

  std::shared_ptr<const Secrets> get() const {
    std::lock_guard lock(mutex_);
    return current_;
  }
  void publish(Secrets next) {
    auto fresh = std::make_shared<const Secrets>(std::move(next));
    std::lock_guard lock(mutex_);
    current_ = std::move(fresh);
  }

private:
  mutable std::mutex mutex_;
  std::shared_ptr<const Secrets> current_;
};

// Gives `cfg` and each of its providers one LiveSecrets holding secrets_of(cfg): from then on
// the readers below (and http::Authenticator) follow what a reload publishes there.
void make_live(Config& cfg);

// The current secrets of `cfg`: cfg.live's when it is set (a serving daemon), else `cfg`'s own.
std::shared_ptr<const Secrets> current_secrets(const Config& cfg);

// The current webhook secret of a tenant, "" when there is none.
std::string webhook_secret(const Config& cfg, std::string_view tenant_id);

// What a provider's adapter signs and verifies with: the provider's api_key, callback.secret
// and adapter keys as they are now (provider.live's, when set). Cheap to copy; any thread.
class ProviderSecrets {
public:
  explicit ProviderSecrets(const Provider& provider)
      : name_(provider.name),
        api_key_(provider.api_key),
        callback_secret_(provider.callback.secret),
        adapter_keys_(std::make_shared<const AdapterKeys>(adapter_keys_of(provider.options))),
        live_(provider.live) {}
  std::string api_key() const;
  std::string callback_secret() const;
  // All of them from one snapshot, so a key never pairs with another rotation's serial.
  std::shared_ptr<const AdapterKeys> adapter_keys() const;

private:
  std::string name_;
  std::string api_key_;
  std::string callback_secret_;
  std::shared_ptr<const AdapterKeys> adapter_keys_;
  std::shared_ptr<LiveSecrets> live_;
};

}  // namespace payorch::config
