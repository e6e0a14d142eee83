#pragma once
// An adapter built by make_adapter, driven from the test thread: each call runs the HTTP
// client's io_context until the adapter's handler has run. The vendor fixtures that test an
// adapter against its emulator derive from it and call make() once their emulator is up. As in
// the daemon (config::make_live), the provider reads its secrets from a LiveSecrets, where a
// test publishes a rotation as a reload (SIGHUP) would.
#include <memory>
#include <optional>
#include <utility>

#include "config/config.h"
#include "config/secrets.h"
#include "net/client_fixture.h"
#include "providers/adapter.h"
#include "providers/registry.h"

namespace payorch::test {

class AdapterDriver {
public:
  providers::VendorResult submit(const providers::ChargeRequest& req) {
    return call([&](providers::ResultHandler done) { adapter_->submit(req, std::move(done)); });
  }
  providers::VendorResult query(const providers::ChargeRequest& req) {
    return call([&](providers::ResultHandler done) { adapter_->query(req, std::move(done)); });
  }
  providers::VendorResult fence(const providers::ChargeRequest& req) {
    return call([&](providers::ResultHandler done) { adapter_->fence(req, std::move(done)); });
  }
  providers::VendorResult refund(const providers::RefundRequest& req) {
    return call([&](providers::ResultHandler done) { adapter_->refund(req, std::move(done)); });
  }
  providers::VendorResult query_refund(const providers::RefundRequest& req) {
    return call([&](providers::ResultHandler done) { adapter_->query_refund(req, std::move(done)); });
  }
  providers::Adapter& adapter() { return *adapter_; }

  // The provider's adapter keys as now published.
  config::AdapterKeys adapter_keys() const { return live_->get()->adapter_keys.at(provider_.name); }
  // Publishes `keys` as the provider's adapter keys, the rest unchanged: what a reload does.
  void publish_adapter_keys(const config::AdapterKeys& keys) {
    config::Secrets next = *live_->get();
    next.adapter_keys[provider_.name] = keys;
    live_->publish(std::move(next));
  }

protected:
  // Builds the adapter for `provider` (kept here: the adapter may refer to it).
  void make(config::Provider provider) {
    provider_ = std::move(provider);
    config::Config cfg;
    cfg.providers.push_back(provider_);
    live_ = std::make_shared<config::LiveSecrets>(config::secrets_of(cfg));
    provider_.live = live_;
    adapter_ = providers::make_adapter(provider_, client_.ioc.get_executor(), client_.client);
  }

private:
  template <class Start>
  providers::VendorResult call(Start start) {
    std::optional<providers::VendorResult> out;
    start([&out](providers::VendorResult r) { out = std::move(r); });
    client_.ioc.restart();
    client_.ioc.run();
    return out ? *out : providers::VendorResult{VendorOutcome::not_sent, {}, {}, {}, {}, 0, "handler never ran"};
  }

  ClientFixture client_;
  config::Provider provider_;
  std::shared_ptr<config::LiveSecrets> live_;
  std::unique_ptr<providers::Adapter> adapter_;
};

}  // namespace payorch::test
