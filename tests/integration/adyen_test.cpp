// The adyen adapter end to end: the real payorchd with `adapter: adyen` against the Adyen
// emulator (tests/emulators/adyen), which answers as Checkout API v71 and sends HMAC-signed
// webhook batches to payorchd's /v1/callbacks/adyen until they are acknowledged "[accepted]".
// Checked against the emulator's ledger: one payment per client_key, whatever the faults.
#include <doctest/doctest.h>

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <chrono>
#include <string>

#include "support/adyen_emulator.h"
#include "support/daemon.h"
#include "support/engine_checks.h"
#include "support/payorch_api.h"
#include "support/vendor_sim.h"

using namespace payorch::test;
using namespace std::chrono_literals;

namespace {

DaemonConfig adyen_config(const AdyenEmulator& emulator, const std::string& retry = roomy_retry) {
  SimProviderConfig provider = adyen_provider(emulator);
  provider.retry = retry;
  return engine_daemon_config({provider});
}

PaymentRequest adyen_payment(std::string_view prefix, std::string stored_method) {
  PaymentRequest req;
  req.operation_id = unique_operation_id(prefix);
  req.amount_minor = 1250;
  req.source = "shopper_42:" + stored_method;
  return req;
}

// The emulator's payments whose reference is `client_key`.
int payments_at_vendor(const AdyenEmulator& emulator, const std::string& client_key) {
  const boost::json::value ledger = emulator.ledger();
  int n = 0;
  for (const auto& p : ledger.at("payments").as_array())
    if (p.at("reference").as_string() == client_key) ++n;
  return n;
}

// payorchd acknowledged every webhook the emulator sent.
bool webhooks_delivered(const AdyenEmulator& emulator) {
  return emulator.ledger().at("webhooks").at("pending").as_int64() == 0;
}

struct Setup {
  AdyenEmulator emulator;
  Daemon daemon;
  // Without webhooks, only payorch's own calls can settle a payment.
  explicit Setup(bool webhooks = true, const std::string& retry = roomy_retry)
      : daemon(adyen_config(emulator, retry)) {
    daemon.start();
    if (webhooks) send_webhooks();
  }
  void send_webhooks() {
    emulator.set_webhook_url("http://127.0.0.1:" + std::to_string(daemon.port()) +
                             "/v1/callbacks/adyen");
  }
};

}  // namespace

TEST_CASE("adyen: Authorised, Refused, and Received then authorised by webhook") {
  if (const std::string missing = adyen_emulator_missing(); !missing.empty()) {
    MESSAGE("skipped: " << missing);
    return;
  }
  Setup s;
  const PaymentRequest ok = adyen_payment("adyen-ok", "stored_authorised");
  const PaymentRequest refused = adyen_payment("adyen-refused", "stored_refused");
  const PaymentRequest received = adyen_payment("adyen-received", "stored_received");
  for (const PaymentRequest* req : {&ok, &refused, &received})
    REQUIRE(post_payment(s.daemon.port(), acme_token, *req).status == 201);

  const auto ok_view = wait_for_state(s.daemon.port(), acme_token, ok.operation_id, "SUCCEEDED", 15s);
  CHECK(json_string(ok_view, "state") == "SUCCEEDED");
  CHECK(!json_string(ok_view, "vendor_reference").empty());
  CHECK(payments_at_vendor(s.emulator, json_string(ok_view, "client_key")) == 1);

  const auto refused_view =
      wait_for_state(s.daemon.port(), acme_token, refused.operation_id, "FAILED_FINAL", 15s);
  CHECK(json_string(refused_view, "state") == "FAILED_FINAL");
  CHECK(failure_code_of(refused_view) == "Not enough balance");

  const auto received_view =
      wait_for_state(s.daemon.port(), acme_token, received.operation_id, "SUCCEEDED", 20s);
  CHECK(json_string(received_view, "state") == "SUCCEEDED");
  CHECK(payments_at_vendor(s.emulator, json_string(received_view, "client_key")) == 1);

  CHECK(eventually([&] { return webhooks_delivered(s.emulator); }, 15s));
}

TEST_CASE("adyen: a 500 after the vendor committed is recovered by replay, one payment at Adyen") {
  if (const std::string missing = adyen_emulator_missing(); !missing.empty()) {
    MESSAGE("skipped: " << missing);
    return;
  }
  Setup s(false);
  s.emulator.set_fault("commit_then_5xx", 1);
  const PaymentRequest req = adyen_payment("adyen-5xx", "stored_authorised");
  REQUIRE(post_payment(s.daemon.port(), acme_token, req).status == 201);
  const auto view = wait_for_state(s.daemon.port(), acme_token, req.operation_id, "SUCCEEDED", 20s);
  CHECK(json_string(view, "state") == "SUCCEEDED");
  CHECK(json_int(view, "attempt_count").value_or(0) >= 2);
  CHECK(payments_at_vendor(s.emulator, json_string(view, "client_key")) == 1);
  // The AUTHORISATION webhook, late, is a duplicate of what replay learnt.
  s.send_webhooks();
  CHECK(eventually([&] { return webhooks_delivered(s.emulator); }, 15s));
  CHECK(json_string(fetch_payment(s.daemon.port(), acme_token, req.operation_id), "state") == "SUCCEEDED");
}

TEST_CASE("adyen: a refund is received, then settled by its REFUND webhook") {
  if (const std::string missing = adyen_emulator_missing(); !missing.empty()) {
    MESSAGE("skipped: " << missing);
    return;
  }
  Setup s;
  s.emulator.set_switches(true, true);  // every batch twice, newest first
  const PaymentRequest req = adyen_payment("adyen-refunded", "stored_authorised");
  REQUIRE(post_payment(s.daemon.port(), acme_token, req).status == 201);
  const auto paid = wait_for_state(s.daemon.port(), acme_token, req.operation_id, "SUCCEEDED", 15s);
  REQUIRE(json_string(paid, "state") == "SUCCEEDED");

  const std::string refund_id = unique_operation_id("adyen-refund");
  REQUIRE(post_refund(s.daemon.port(), acme_token, req.operation_id, refund_id, 500).status == 201);
  const auto refund = wait_for_refund_state(s.daemon.port(), acme_token, refund_id, "SUCCEEDED", 20s);
  CHECK(json_string(refund, "state") == "SUCCEEDED");
  const boost::json::value ledger = s.emulator.ledger();
  const boost::json::array& refunds = ledger.at("refunds").as_array();
  REQUIRE(refunds.size() == 1);
  CHECK(refunds[0].at("reference").as_string() == json_string(refund, "client_key"));
  CHECK(refunds[0].at("paymentPspReference").as_string() == json_string(paid, "vendor_reference"));
  CHECK(json_string(refund, "vendor_reference") == refunds[0].at("pspReference").as_string());

  CHECK(eventually([&] { return webhooks_delivered(s.emulator); }, 15s));
}

TEST_CASE("adyen: no answer, then 409 704 while Adyen still executes; replay settles one payment") {
  if (const std::string missing = adyen_emulator_missing(); !missing.empty()) {
    MESSAGE("skipped: " << missing);
    return;
  }
  Setup s(false);
  // The first request is held executing past payorch's request timeout (1.5 s); the replays
  // that follow meet the key in progress (409 704) until it commits.
  s.emulator.set_fault("delayed_commit", 1, 3000);
  const PaymentRequest slow = adyen_payment("adyen-slow", "stored_authorised");
  REQUIRE(post_payment(s.daemon.port(), acme_token, slow).status == 201);
  const auto slow_view = wait_for_state(s.daemon.port(), acme_token, slow.operation_id, "SUCCEEDED", 25s);
  CHECK(json_string(slow_view, "state") == "SUCCEEDED");
  CHECK(json_int(slow_view, "attempt_count").value_or(0) >= 2);
  CHECK(payments_at_vendor(s.emulator, json_string(slow_view, "client_key")) == 1);

  // Committed, and the answer never comes: the replay gets the stored one.
  s.emulator.set_fault("commit_then_hang", 1, 5000);
  const PaymentRequest hung = adyen_payment("adyen-hung", "stored_refused");
  REQUIRE(post_payment(s.daemon.port(), acme_token, hung).status == 201);
  const auto hung_view = wait_for_state(s.daemon.port(), acme_token, hung.operation_id, "FAILED_FINAL", 25s);
  CHECK(json_string(hung_view, "state") == "FAILED_FINAL");
  CHECK(payments_at_vendor(s.emulator, json_string(hung_view, "client_key")) == 1);
}

TEST_CASE("adyen: a 500 before commit is replayed into one payment; refunds through every fault, one refund each") {
  if (const std::string missing = adyen_emulator_missing(); !missing.empty()) {
    MESSAGE("skipped: " << missing);
    return;
  }
  Setup s;
  s.emulator.set_fault("fail_before_commit", 1);
  const PaymentRequest req = adyen_payment("adyen-500-before", "stored_authorised");
  REQUIRE(post_payment(s.daemon.port(), acme_token, req).status == 201);
  const auto paid = wait_for_state(s.daemon.port(), acme_token, req.operation_id, "SUCCEEDED", 20s);
  REQUIRE(json_string(paid, "state") == "SUCCEEDED");
  CHECK(payments_at_vendor(s.emulator, json_string(paid, "client_key")) == 1);

  // Refunds through every fault: 500 after commit, 500 before, no answer (closed after 5 s),
  // held executing past the request timeout (1.5 s).
  const std::pair<std::string, int> refund_faults[] = {
      {"commit_then_5xx", 0}, {"fail_before_commit", 0}, {"commit_then_hang", 5000}, {"delayed_commit", 3000}};
  for (const auto& fault : refund_faults) {
    const std::string mode = fault.first;
    CAPTURE(mode);
    s.emulator.set_fault(mode, 1, fault.second);
    const std::string refund_id = unique_operation_id("adyen-refund-" + mode);
    REQUIRE(post_refund(s.daemon.port(), acme_token, req.operation_id, refund_id, 300).status == 201);
    const auto refund = wait_for_refund_state(s.daemon.port(), acme_token, refund_id, "SUCCEEDED", 25s);
    CHECK(json_string(refund, "state") == "SUCCEEDED");
    int at_vendor = 0;
    const boost::json::value ledger = s.emulator.ledger();
    for (const auto& r : ledger.at("refunds").as_array())
      if (r.at("reference").as_string() == json_string(refund, "client_key")) ++at_vendor;
    CHECK(at_vendor == 1);
  }
  CHECK(eventually([&] { return webhooks_delivered(s.emulator); }, 15s));
}

TEST_CASE("adyen: a key Adyen already holds for another request is never read as ours; a case opens") {
  if (const std::string missing = adyen_emulator_missing(); !missing.empty()) {
    MESSAGE("skipped: " << missing);
    return;
  }
  // Slow first retry (room to use the key at Adyen first), then a budget of three calls.
  Setup s(false, "{max_attempts: 3, initial_backoff: 6s, max_backoff: 6s, give_up_after: 1h}");
  s.emulator.set_fault("fail_before_commit", 1);
  const PaymentRequest req = adyen_payment("adyen-key-reuse", "stored_authorised");
  REQUIRE(post_payment(s.daemon.port(), acme_token, req).status == 201);
  const auto unknown = wait_for_state(s.daemon.port(), acme_token, req.operation_id, "UNKNOWN", 10s);
  REQUIRE(json_string(unknown, "state") == "UNKNOWN");
  const std::string client_key = json_string(unknown, "client_key");
  // Another request under payorch's key, for another amount, reaches Adyen first: Adyen answers
  // every retry with its result, which is not the answer to payorch's request.
  const std::string other = std::string(R"({"merchantAccount":")") + adyen_emulator_merchant +
      R"(","reference":")" + client_key + R"(","amount":{"value":999,"currency":"EUR"},)"
      R"("paymentMethod":{"type":"scheme","storedPaymentMethodId":"stored_authorised"},)"
      R"("shopperReference":"shopper_42","shopperInteraction":"ContAuth",)"
      R"("recurringProcessingModel":"UnscheduledCardOnFile","returnUrl":"https://payorch.invalid/adyen/return"})";
  const HttpResponse answer = http_request(s.emulator.port(), "POST", "/v71/payments",
                                           {{"X-API-Key", adyen_emulator_api_key},
                                            {"idempotency-key", client_key},
                                            {"Content-Type", "application/json"}},
                                           other);
  REQUIRE_MESSAGE(answer.status == 200, answer.describe());

  const auto view = wait_for_payment(s.daemon.port(), acme_token, req.operation_id, is_settled, 30s);
  const auto rec = reconciliation_of(view);
  REQUIRE_MESSAGE(rec.is_object(), boost::json::serialize(view));
  CHECK(rec.at("reason").as_string() == "retry_budget_exhausted");
  CHECK(json_string(view, "state") == "UNKNOWN");
  CHECK(payments_at_vendor(s.emulator, client_key) == 1);  // the other request's, 999
}
