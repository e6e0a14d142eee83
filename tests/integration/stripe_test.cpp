// payorchd with a provider `adapter: stripe`, against the Stripe emulator process
// (tests/emulators/stripe/server.js): a payment succeeds, a declined card fails, a 3-D Secure
// payment waits in pending until Stripe's webhook says it succeeded, a vendor that committed
// and answered 500 is recovered by replay with exactly one PaymentIntent in the emulator's
// ledger, and a refund reaches the emulator under its own key. Every fault of the emulator ends
// in one PaymentIntent (and a refund through faults in one refund); a key Stripe holds for
// other parameters opens a vendor_key_mismatch case and nothing more is charged.
#include <doctest/doctest.h>

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include "support/daemon.h"
#include "support/engine_checks.h"
#include "support/payorch_api.h"
#include "support/stripe_emulator.h"
#include "support/vendor_sim.h"

using namespace payorch::test;
using namespace std::chrono_literals;

namespace {

SimProviderConfig stripe_provider(const StripeEmulator& emulator) {
  return {.name = "stripe",
          .adapter = "stripe",
          .base_url = emulator.base_url(),
          .api_key = stripe_emulator_api_key,
          .contract = "{key_retention: 24h, recovery: replay}",
          .retry = roomy_retry,
          .callback = std::string("{secret: \"") + stripe_emulator_webhook_secret +
                      "\", tolerance: 5m, retry_horizon: 24h}"};
}

PaymentRequest stripe_payment(std::string_view prefix, std::string source) {
  PaymentRequest req;
  req.operation_id = unique_operation_id(prefix);
  req.amount_minor = 1250;
  req.source = std::move(source);
  return req;
}

// Posts the payment and waits until it is settled; returns its view.
boost::json::value pay(const Daemon& daemon, const PaymentRequest& req) {
  const HttpResponse created = post_payment(daemon.port(), acme_token, req);
  REQUIRE_MESSAGE(created.status == 201, created.describe());
  return wait_for_payment(daemon.port(), acme_token, req.operation_id, is_settled, 20s);
}

// True once every event the emulator sent has been acknowledged with a 2xx by payorchd: the
// tracked ones recorded, the others (payment_intent.created, …) verified and acknowledged.
bool webhooks_acknowledged(const StripeEmulator& emulator) {
  return eventually([&emulator] { return emulator.webhooks_acknowledged(); }, 15s);
}

}  // namespace

TEST_CASE("stripe provider: succeeded, declined, pending then webhook, replay after a 500, refund") {
  StripeEmulator emulator({}, 1500);
  Daemon daemon(engine_daemon_config({stripe_provider(emulator)}));
  daemon.start();
  emulator.faults(boost::json::object{
      {"webhook_url", "http://127.0.0.1:" + std::to_string(daemon.port()) + "/v1/callbacks/stripe"}});
  INFO("payorchd log:\n" << daemon.log_tail(8192) << "\nemulator log:\n" << emulator.log_tail());

  SUBCASE("a payment succeeds; its refund too") {
    const auto req = stripe_payment("stripe-ok-", "pm_card_visa");
    const auto view = pay(daemon, req);
    CHECK(json_string(view, "state") == "SUCCEEDED");
    const auto intents = emulator.payment_intents(json_string(view, "client_key"));
    REQUIRE(intents.size() == 1);
    CHECK(json_string(view, "vendor_reference") == intents[0].at("id").as_string());
    CHECK(intents[0].at("amount").as_int64() == 1250);
    CHECK(intents[0].at("currency").as_string() == "eur");

    const std::string refund_id = unique_operation_id("stripe-refund-");
    const HttpResponse r = post_refund(daemon.port(), acme_token, req.operation_id, refund_id, 500);
    REQUIRE_MESSAGE(r.status == 201, r.describe());
    const auto refund = wait_for_refund_state(daemon.port(), acme_token, refund_id, "SUCCEEDED", 20s);
    CHECK(json_string(refund, "state") == "SUCCEEDED");
    const auto refunds = emulator.refunds(json_string(refund, "client_key"));
    REQUIRE(refunds.size() == 1);
    CHECK(refunds[0].at("amount").as_int64() == 500);
    CHECK(refunds[0].at("payment_intent").as_string() == intents[0].at("id").as_string());
    CHECK(webhooks_acknowledged(emulator));
  }

  SUBCASE("a declined card fails the payment with Stripe's decline code") {
    const auto view = pay(daemon, stripe_payment("stripe-decline-", "pm_card_chargeDeclined"));
    CHECK(json_string(view, "state") == "FAILED_FINAL");
    CHECK(failure_code_of(view) == "generic_decline");
    CHECK(emulator.payment_intents(json_string(view, "client_key")).size() == 1);
    CHECK(webhooks_acknowledged(emulator));
  }

  SUBCASE("3-D Secure: pending until the payment_intent.succeeded webhook") {
    const auto req = stripe_payment("stripe-3ds-", "pm_card_authenticationRequired");
    REQUIRE(post_payment(daemon.port(), acme_token, req).status == 201);
    const auto view = wait_for_state(daemon.port(), acme_token, req.operation_id, "SUCCEEDED", 20s);
    CHECK(json_string(view, "state") == "SUCCEEDED");
    const auto intents = emulator.payment_intents(json_string(view, "client_key"));
    REQUIRE(intents.size() == 1);
    CHECK(intents[0].at("status").as_string() == "succeeded");
    // A replay only returns the saved requires_action answer: the webhook made it SUCCEEDED.
    bool acknowledged = false;
    const boost::json::object ledger = emulator.ledger();
    for (const auto& d : ledger.at("webhooks_delivered").as_array())
      acknowledged = acknowledged || (d.at("type").as_string() == "payment_intent.succeeded" &&
                                      d.at("status").as_int64() == 200);
    CHECK(acknowledged);
  }

  SUBCASE("duplicated and reordered webhooks: each event recorded once, one success") {
    emulator.faults(boost::json::object{{"duplicate_webhooks", true}, {"reorder_webhooks", true}});
    const auto req = stripe_payment("stripe-dup-", "pm_card_authenticationRequired");
    REQUIRE(post_payment(daemon.port(), acme_token, req).status == 201);
    const auto view = wait_for_state(daemon.port(), acme_token, req.operation_id, "SUCCEEDED", 20s);
    REQUIRE(json_string(view, "state") == "SUCCEEDED");
    CHECK(webhooks_acknowledged(emulator));
    PayorchRecords records(daemon);
    const std::string payment_id = json_string(view, "id");
    CHECK(records.count_events(payment_id, "payment.succeeded") == 1);
    CHECK(records.repeated_events().empty());
  }

  SUBCASE("committed, then a 500: replay under the same key finds the one PaymentIntent") {
    emulator.faults(boost::json::object{{"mode", "commit_then_5xx"}, {"count", 1}});
    std::vector<std::string> states;
    const auto req = stripe_payment("stripe-5xx-", "pm_card_visa");
    REQUIRE(post_payment(daemon.port(), acme_token, req).status == 201);
    const auto view = wait_for_payment(daemon.port(), acme_token, req.operation_id, is_settled, 20s, &states);
    CHECK(json_string(view, "state") == "SUCCEEDED");
    CHECK(emulator.payment_intents(json_string(view, "client_key")).size() == 1);
  }
}

namespace {

std::string daemon_webhook_url(const Daemon& daemon) {
  return "http://127.0.0.1:" + std::to_string(daemon.port()) + "/v1/callbacks/stripe";
}

}  // namespace

TEST_CASE("stripe provider: every vendor fault ends in one PaymentIntent; a refund through faults, one refund") {
  StripeEmulator emulator({}, 300);
  Daemon daemon(engine_daemon_config({stripe_provider(emulator)}));
  daemon.start();
  emulator.faults(boost::json::object{{"webhook_url", daemon_webhook_url(daemon)}});
  INFO("payorchd log:\n" << daemon.log_tail(8192) << "\nemulator log:\n" << emulator.log_tail());

  // fail_before_commit: nothing was done; commit_then_hang: done, no answer (the request times
  // out at 2 s); delayed_commit: executing past the request timeout, the replays meet
  // idempotency_key_in_use until it is done.
  const std::pair<std::string, int> faults[] = {
      {"fail_before_commit", 0}, {"commit_then_hang", 0}, {"delayed_commit", 2500}};
  for (const auto& fault : faults) {
    const std::string mode = fault.first;
    CAPTURE(mode);
    emulator.faults(boost::json::object{{"mode", mode}, {"count", 1}, {"delay_ms", fault.second}});
    const auto req = stripe_payment("stripe-" + mode + "-", "pm_card_visa");
    const auto view = pay(daemon, req);
    CHECK(json_string(view, "state") == "SUCCEEDED");
    CHECK(emulator.payment_intents(json_string(view, "client_key")).size() == 1);
  }

  // Refunds through the same faults: each ends SUCCEEDED with one refund at Stripe.
  const auto paid = pay(daemon, stripe_payment("stripe-refund-faults-", "pm_card_visa"));
  REQUIRE(json_string(paid, "state") == "SUCCEEDED");
  const std::pair<std::string, int> refund_faults[] = {
      {"commit_then_5xx", 0}, {"fail_before_commit", 0}, {"commit_then_hang", 0}, {"delayed_commit", 2500}};
  for (const auto& fault : refund_faults) {
    const std::string mode = fault.first;
    CAPTURE(mode);
    emulator.faults(boost::json::object{{"mode", mode}, {"count", 1}, {"delay_ms", fault.second}});
    const std::string refund_id = unique_operation_id("stripe-refund-" + mode + "-");
    const HttpResponse r =
        post_refund(daemon.port(), acme_token, json_string(paid, "operation_id"), refund_id, 300);
    REQUIRE_MESSAGE(r.status == 201, r.describe());
    const auto refund = wait_for_refund_state(daemon.port(), acme_token, refund_id, "SUCCEEDED", 20s);
    CHECK(json_string(refund, "state") == "SUCCEEDED");
    CHECK(emulator.refunds(json_string(refund, "client_key")).size() == 1);
  }
}

TEST_CASE("stripe provider: a key Stripe already holds for other parameters opens a vendor_key_mismatch case") {
  StripeEmulator emulator({}, 300);
  SimProviderConfig provider = stripe_provider(emulator);
  // Slow retries: room to use the key at Stripe before payorch's replay.
  provider.retry = "{max_attempts: 6, initial_backoff: 6s, max_backoff: 6s, give_up_after: 1h}";
  Daemon daemon(engine_daemon_config({provider}));
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail(8192) << "\nemulator log:\n" << emulator.log_tail());

  emulator.faults(boost::json::object{{"mode", "fail_before_commit"}, {"count", 1}});
  const auto req = stripe_payment("stripe-key-reuse-", "pm_card_visa");
  REQUIRE(post_payment(daemon.port(), acme_token, req).status == 201);
  const auto unknown = wait_for_state(daemon.port(), acme_token, req.operation_id, "UNKNOWN", 10s);
  REQUIRE(json_string(unknown, "state") == "UNKNOWN");
  const std::string client_key = json_string(unknown, "client_key");
  // Another request under payorch's key, with another amount, reaches Stripe first.
  const HttpResponse other = http_request(
      emulator.port(), "POST", "/v1/payment_intents",
      {{"Authorization", std::string("Bearer ") + stripe_emulator_api_key},
       {"Idempotency-Key", client_key},
       {"Content-Type", "application/x-www-form-urlencoded"}},
      "amount=999&currency=eur&payment_method=pm_card_visa&confirm=true"
      "&automatic_payment_methods[enabled]=true&automatic_payment_methods[allow_redirects]=never");
  REQUIRE_MESSAGE(other.status == 200, other.describe());

  const auto view = wait_for_payment(daemon.port(), acme_token, req.operation_id, is_settled, 20s);
  const auto rec = reconciliation_of(view);
  REQUIRE_MESSAGE(rec.is_object(), boost::json::serialize(view));
  CHECK(rec.at("reason").as_string() == "vendor_key_mismatch");
  CHECK(json_string(view, "state") == "UNKNOWN");
  // Nothing more was charged under the key: the one PaymentIntent is the other request's.
  const auto intents = emulator.payment_intents(client_key);
  CHECK(intents.empty());
  CHECK(emulator.ledger().at("payment_intents").as_array().size() == 1);
}
