#pragma once
// POST /v1/callbacks/{provider} (docs/contract.md §6). The provider's adapter verifies the signature and
// parses the body; store::record_callback applies it in one transaction (inbox row, state
// change by compare-and-set, outbox event). The vendor gets 2xx only after that transaction
// committed — a duplicate included — and a non-2xx whenever nothing was recorded, so its own
// retries carry a callback over our crashes and storage errors.
#include <functional>
#include <map>
#include <string>

#include "config/config.h"
#include "core/clock.h"
#include "http/server.h"
#include "providers/adapter.h"
#include "store/store.h"
#include "util/metrics.h"

namespace payorch::http {

class CallbacksApi final : public Handler {
public:
  struct Deps {
    const config::Config& config;
    store::Store& store;
    const Clock& clock;
    Random& rng;  // used on the writer thread only
    std::map<std::string, const providers::Adapter*> adapters;  // by provider name
    Metrics& metrics;
    // Called after a callback changed a payment (state, case or event), with its id.
    std::function<void(const std::string& payment_id)> on_change;
  };
  explicit CallbacksApi(Deps deps);

  static bool owns(const std::string& path);
  void handle(Request&& req, Responder done) override;

private:
  void report(const store::VendorCallback& cb, const store::CallbackOutcome& outcome);

  Deps d_;
};

}  // namespace payorch::http
