// Key retention near its end, against each real vendor's emulator (docs/contract.md §5, the
// retention guard): a payment the vendor keeps failing spends its budget and waits in a case;
// an operator's `retry` gives it a new budget, but key retention still counts from the first
// submit, so once a replay could outlive 0.9 x key_retention the engine opens a
// key_retention_expiring case and sends the key no more: a late replay after the vendor forgot
// it would charge twice.
#include <doctest/doctest.h>

#include <boost/json/serialize.hpp>

#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include "support/adyen_emulator.h"
#include "support/daemon.h"
#include "support/engine_checks.h"
#include "support/payorch_api.h"
#include "support/stripe_emulator.h"
#include "support/vendor_sim.h"

using namespace payorch::test;
using namespace std::chrono_literals;

namespace {

// 20 s of key retention: 0.9 x 20 s = 18 s. The budget (4 s) + request (2 s) + lease (3 s) keep
// the guard; replays every 500 ms.
constexpr const char* short_contract = "{key_retention: 20s, recovery: replay}";
constexpr const char* short_retry = "{max_attempts: 1000, initial_backoff: 500ms, max_backoff: 500ms, give_up_after: 4s}";

// One vendor under test: its provider entry and a fault that fails every request before commit.
struct Vendor {
  SimProviderConfig provider;
  std::string source;
  std::function<void()> fail_always;
};

// The payment's open case, once there is one with `reason` (null otherwise).
boost::json::value wait_for_case(const Daemon& daemon, const std::string& operation_id,
                                 const std::string& reason, std::chrono::milliseconds timeout) {
  const auto view = wait_for_payment(daemon.port(), acme_token, operation_id,
                                     [&reason](const boost::json::value& v) {
                                       const auto rec = reconciliation_of(v);
                                       return rec.is_object() && rec.at("status").as_string() == "open" &&
                                              rec.at("reason").as_string() == reason;
                                     },
                                     timeout);
  return view;
}

void key_retention_ends_in_a_case(const Vendor& vendor) {
  Daemon daemon(engine_daemon_config({vendor.provider}));
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail(8192));
  vendor.fail_always();

  PaymentRequest req;
  req.operation_id = unique_operation_id("retention-" + vendor.provider.name + "-");
  req.source = vendor.source;
  const auto posted_at = std::chrono::steady_clock::now();
  REQUIRE(post_payment(daemon.port(), acme_token, req).status == 201);

  // The budget is spent first.
  const auto spent = wait_for_case(daemon, req.operation_id, "retry_budget_exhausted", 15s);
  const auto first = reconciliation_of(spent);
  REQUIRE_MESSAGE(first.is_object(), boost::json::serialize(spent));
  REQUIRE(json_string(first, "reason") == "retry_budget_exhausted");

  // The operator retries late, 10 s after the first submit: 5 s of replays fit before the 18 s mark.
  std::this_thread::sleep_until(posted_at + 10s);
  const Headers admin{{"Authorization", std::string("Bearer ") + admin_token},
                      {"Content-Type", "application/json"}};
  const HttpResponse retried = http_request(
      daemon.port(), "POST", "/v1/reconciliation/" + json_string(first, "case_id") + "/resolve", admin,
      R"({"outcome":"retry","note":"vendor outage over"})");
  REQUIRE_MESSAGE(retried.status == 200, retried.describe());

  const auto expiring = wait_for_case(daemon, req.operation_id, "key_retention_expiring", 15s);
  const auto second = reconciliation_of(expiring);
  REQUIRE_MESSAGE(second.is_object(), boost::json::serialize(expiring));
  CHECK(json_string(second, "reason") == "key_retention_expiring");
  CHECK(json_string(expiring, "state") == "UNKNOWN");
  // It came before 18 s, and from then on the key is never sent again.
  CHECK(std::chrono::steady_clock::now() - posted_at < 18s);
  const auto attempts = json_int(expiring, "attempt_count");
  std::this_thread::sleep_for(2s);
  CHECK(json_int(fetch_payment(daemon.port(), acme_token, req.operation_id), "attempt_count") == attempts);
}

}  // namespace

TEST_CASE("stripe provider: near the end of key retention a case opens and the key is sent no more") {
  StripeEmulator emulator({}, 300);
  Vendor stripe{.provider = {.name = "stripe",
                             .adapter = "stripe",
                             .base_url = emulator.base_url(),
                             .api_key = stripe_emulator_api_key,
                             .contract = short_contract,
                             .retry = short_retry,
                             .callback = std::string("{secret: \"") + stripe_emulator_webhook_secret + "\"}"},
                .source = "pm_card_visa",
                .fail_always = [&emulator] {
                  emulator.faults(boost::json::object{{"mode", "fail_before_commit"}, {"count", 100000}});
                }};
  INFO("emulator log:\n" << emulator.log_tail());
  key_retention_ends_in_a_case(stripe);
}

TEST_CASE("adyen: near the end of key retention a case opens and the key is sent no more") {
  if (const std::string missing = adyen_emulator_missing(); !missing.empty()) {
    MESSAGE("skipped: " << missing);
    return;
  }
  AdyenEmulator emulator;
  SimProviderConfig provider = adyen_provider(emulator);
  provider.timeouts = SimProviderConfig{}.timeouts;
  provider.contract = short_contract;
  provider.retry = short_retry;
  Vendor adyen{.provider = provider,
               .source = "shopper_42:stored_authorised",
               .fail_always = [&emulator] { emulator.set_fault("fail_before_commit", 100000); }};
  INFO("emulator log:\n" << emulator.log_tail());
  key_retention_ends_in_a_case(adyen);
}
