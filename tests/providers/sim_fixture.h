#pragma once
// An adapter (built by make_adapter; sim unless named) talking to an in-process fake vendor,
// or to a real vendor process (support/vendor_sim.h, the Stripe emulator).
#include <boost/json/object.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "config/config.h"
#include "http/problem.h"
#include "net/client_fixture.h"
#include "net/fake_server.h"
#include "providers/adapter.h"
#include "providers/registry.h"

namespace payorch::test {

inline providers::ChargeRequest sample_charge() {
  return providers::ChargeRequest{"ck_01HZX3K8Q2M4N6P8R0T2V4W6Y8", 1250, "EUR", "acct_merchant_7",
                                  "tok_ok"};
}

// The charge the sim vendor would answer for `req`.
inline boost::json::object vendor_charge(const providers::ChargeRequest& req,
                                         std::string_view status) {
  boost::json::object c{{"id", "ch_777"},
                        {"reference", req.client_key},
                        {"status", status},
                        {"amount_minor", req.amount_minor},
                        {"currency", req.currency},
                        {"payee", req.payee},
                        {"decline_code", nullptr}};
  if (status == "declined") c["decline_code"] = "insufficient_funds";
  return c;
}

// A refund of sample_charge() as payorch would send it; the vendor's charge id is "ch_777".
inline providers::RefundRequest sample_refund() {
  return providers::RefundRequest{"ck_01HZX3K8Q2M4N6P8R0T2V4W6RF", "ch_777",
                                  sample_charge().client_key, 500, "EUR"};
}

// The refund the sim vendor would answer for `req`.
inline boost::json::object vendor_refund(const providers::RefundRequest& req,
                                         std::string_view status) {
  boost::json::object r{{"id", "rf_888"},
                        {"reference", req.client_key},
                        {"charge", req.charge_reference},
                        {"status", status},
                        {"amount_minor", req.amount_minor},
                        {"currency", req.currency},
                        {"decline_code", nullptr}};
  if (status == "declined") r["decline_code"] = "exceeds_charge";
  return r;
}

inline boost::json::object vendor_error(std::string_view type) {
  return boost::json::object{{"error", boost::json::object{{"type", type}}}};
}

inline FakeServer::Script answer_json(unsigned status, boost::json::value body) {
  return [status, body](const http::Request&) { return Reply::with(http::make_json(status, body)); };
}

class SimFixture {
public:
  // A fake vendor running `script`.
  explicit SimFixture(FakeServer::Script script, std::string adapter = "sim")
      : server_(std::make_unique<FakeServer>(std::move(script))) {
    make(server_->base_url(), "sk_test_123", std::chrono::milliseconds(400), std::move(adapter));
  }
  // No vendor at all: base_url points at a port nothing listens on.
  SimFixture() { make("http://127.0.0.1:" + std::to_string(unused_port())); }
  // A vendor at `base_url` taking `api_key`: the real sim, whose answers wait for its ledger's
  // synchronous commit, so the request timeout is longer than a fake vendor needs.
  SimFixture(std::string base_url, std::string api_key, std::string adapter = "sim") {
    make(std::move(base_url), std::move(api_key), std::chrono::seconds(5), std::move(adapter));
  }

  providers::VendorResult submit(const providers::ChargeRequest& req = sample_charge()) {
    return call([&](providers::ResultHandler done) { adapter_->submit(req, std::move(done)); });
  }
  providers::VendorResult query(const providers::ChargeRequest& req = sample_charge()) {
    return call([&](providers::ResultHandler done) { adapter_->query(req, std::move(done)); });
  }
  providers::VendorResult refund(const providers::RefundRequest& req = sample_refund()) {
    return call([&](providers::ResultHandler done) { adapter_->refund(req, std::move(done)); });
  }
  providers::VendorResult query_refund(const providers::RefundRequest& req = sample_refund()) {
    return call(
        [&](providers::ResultHandler done) { adapter_->query_refund(req, std::move(done)); });
  }

  FakeServer& server() { return *server_; }
  providers::Adapter& adapter() { return *adapter_; }
  const config::Provider& provider() const { return provider_; }

private:
  void make(std::string base_url, std::string api_key = "sk_test_123",
            std::chrono::milliseconds request_timeout = std::chrono::milliseconds(400),
            std::string adapter = "sim") {
    provider_.name = adapter;
    provider_.adapter = std::move(adapter);
    provider_.base_url = std::move(base_url);
    provider_.api_key = std::move(api_key);
    provider_.timeouts.connect = std::chrono::milliseconds(500);
    provider_.contract.request_timeout = request_timeout;
    provider_.callback.secret = "whsec_test";
    adapter_ = providers::make_adapter(provider_, client_.ioc.get_executor(), client_.client);
  }

  template <class Start>
  providers::VendorResult call(Start start) {
    std::optional<providers::VendorResult> out;
    start([&out](providers::VendorResult r) { out = std::move(r); });
    client_.ioc.restart();
    client_.ioc.run();
    return out ? *out : providers::VendorResult{VendorOutcome::not_sent, {}, {}, {}, {}, 0,
                                                "handler never ran"};
  }

  std::unique_ptr<FakeServer> server_;
  ClientFixture client_;
  config::Provider provider_;
  std::unique_ptr<providers::Adapter> adapter_;
};

}  // namespace payorch::test
