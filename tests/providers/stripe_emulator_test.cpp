// providers/stripe against the Stripe emulator process (tests/emulators/stripe/server.js):
// the adapter's requests are what the emulator (and Stripe's library, stripe.test.js) accept,
// replay recovers after faults with one PaymentIntent in the ledger, and webhooks signed by the
// emulator or by Stripe's library (generateTestHeaderString) pass the adapter's check.
#include <doctest/doctest.h>

#include <boost/json/parse.hpp>

#include <ctime>

#include "http/problem.h"
#include "providers/stripe/callback.h"
#include "providers/stripe_fixture.h"
#include "support/stripe_emulator.h"

namespace {

namespace json = boost::json;
using payorch::VendorOutcome;
using payorch::to_string;
using payorch::providers::ChargeRequest;
using payorch::providers::RefundRequest;
using payorch::test::SimFixture;
using payorch::test::StripeEmulator;

ChargeRequest charge(std::string client_key, std::string payment_method, std::int64_t amount = 1250) {
  return ChargeRequest{std::move(client_key), amount, "EUR", "acct_merchant_7", std::move(payment_method)};
}

payorch::providers::stripe::CallbackKey emulator_key() {
  return {payorch::test::stripe_emulator_webhook_secret, std::chrono::minutes(5)};
}

std::int64_t now_s() { return static_cast<std::int64_t>(std::time(nullptr)); }

}  // namespace

TEST_CASE("stripe adapter against the emulator: succeeded, declined, pending, replayed") {
  StripeEmulator emulator;
  SimFixture f(emulator.base_url(), payorch::test::stripe_emulator_api_key, "stripe");

  const auto ok = f.submit(charge("ck_emu_ok", "pm_card_visa"));
  CHECK(ok.outcome == VendorOutcome::succeeded);
  REQUIRE(ok.vendor_reference);
  CHECK(ok.vendor_reference->starts_with("pi_"));
  CHECK(ok.currency == "EUR");
  const auto again = f.submit(charge("ck_emu_ok", "pm_card_visa"));
  CHECK(again.outcome == VendorOutcome::succeeded);
  CHECK(again.vendor_reference == ok.vendor_reference);
  CHECK(emulator.payment_intents("ck_emu_ok").size() == 1);

  const auto declined = f.submit(charge("ck_emu_decline", "pm_card_chargeDeclinedInsufficientFunds"));
  CHECK(declined.outcome == VendorOutcome::declined);
  CHECK(declined.decline_code == "insufficient_funds");
  CHECK(declined.http_status == 402);
  CHECK(declined.vendor_reference.has_value());
  CHECK(f.submit(charge("ck_emu_decline", "pm_card_chargeDeclinedInsufficientFunds")).outcome ==
        VendorOutcome::declined);

  const auto pending = f.submit(charge("ck_emu_3ds", "pm_card_authenticationRequired"));
  CHECK(pending.outcome == VendorOutcome::pending);

  // The same key with other parameters: Stripe's idempotency_error.
  CHECK(f.submit(charge("ck_emu_ok", "pm_card_visa", 999)).outcome == VendorOutcome::key_mismatch);
  // An unknown payment method fails validation: declined with Stripe's code.
  const auto unknown = f.submit(charge("ck_emu_unknown_pm", "pm_nope"));
  CHECK(unknown.outcome == VendorOutcome::declined);
  CHECK(unknown.decline_code == "resource_missing");
}

TEST_CASE("stripe adapter against the emulator: faults are ambiguous and replay finds the one PaymentIntent") {
  StripeEmulator emulator;
  SimFixture f(emulator.base_url(), payorch::test::stripe_emulator_api_key, "stripe");
  struct Row {
    std::string mode;
    std::size_t intents_after_fault;
  };
  const Row rows[] = {{"commit_then_5xx", 1}, {"fail_before_commit", 0}, {"commit_then_hang", 1}};
  for (const Row& row : rows) {
    CAPTURE(row.mode);
    const std::string key = std::string("ck_emu_") + row.mode;
    emulator.faults(json::object{{"mode", row.mode}, {"count", 1}});
    CHECK(f.submit(charge(key, "pm_card_visa")).outcome == VendorOutcome::ambiguous);
    CHECK(emulator.payment_intents(key).size() == row.intents_after_fault);
    CHECK(f.submit(charge(key, "pm_card_visa")).outcome == VendorOutcome::succeeded);
    CHECK(emulator.payment_intents(key).size() == 1);
  }
}

TEST_CASE("stripe adapter against the emulator: refunds") {
  StripeEmulator emulator;
  SimFixture f(emulator.base_url(), payorch::test::stripe_emulator_api_key, "stripe");
  const auto paid = f.submit(charge("ck_emu_paid", "pm_card_visa"));
  REQUIRE(paid.vendor_reference);
  const RefundRequest part{"ck_emu_refund_1", *paid.vendor_reference, "ck_emu_paid", 1000, "EUR"};
  const auto refunded = f.refund(part);
  CHECK(refunded.outcome == VendorOutcome::succeeded);
  REQUIRE(refunded.vendor_reference);
  CHECK(refunded.vendor_reference->starts_with("re_"));
  CHECK(f.refund(part).vendor_reference == refunded.vendor_reference);
  CHECK(emulator.refunds("ck_emu_refund_1").size() == 1);
  const auto over = f.refund(RefundRequest{"ck_emu_refund_2", *paid.vendor_reference, "ck_emu_paid", 251, "EUR"});
  CHECK(over.outcome == VendorOutcome::declined);
  CHECK(over.decline_code == "amount_too_large");
}

TEST_CASE("stripe webhooks from the emulator pass the adapter's check and say what happened") {
  payorch::test::FakeServer receiver(payorch::test::answer_json(200, json::object{}));
  StripeEmulator emulator(receiver.base_url() + "/v1/callbacks/stripe", 100);
  SimFixture f(emulator.base_url(), payorch::test::stripe_emulator_api_key, "stripe");
  CHECK(f.submit(charge("ck_emu_hook", "pm_card_authenticationRequired")).outcome == VendorOutcome::pending);
  // payment_intent.created (not tracked), .requires_action (pending), then .succeeded.
  REQUIRE(payorch::test::eventually([&receiver] { return receiver.request_count() >= 3; }));
  std::vector<std::string> outcomes;
  for (const auto& req : receiver.requests()) {
    const std::map<std::string, std::string> headers{{"stripe-signature", std::string(req["Stripe-Signature"])}};
    const auto check = payorch::providers::stripe::verify_callback(headers, req.body(), now_s(), emulator_key());
    CHECK(check.verified);
    for (const auto& e : check.events) {
      CHECK(e.client_key == "ck_emu_hook");
      outcomes.emplace_back(to_string(e.outcome));
    }
  }
  CHECK(outcomes == std::vector<std::string>{"pending", "succeeded"});
}

TEST_CASE("a webhook signed by Stripe's library (generateTestHeaderString) passes the adapter's check") {
  const std::string out = payorch::test::run_node(R"(
    const stripe = require('stripe')('sk_test_x');
    const payload = JSON.stringify({id: 'evt_lib', object: 'event', type: 'payment_intent.succeeded',
      data: {object: {id: 'pi_lib', object: 'payment_intent', status: 'succeeded', amount: 1250,
        currency: 'eur', metadata: {client_key: 'ck_lib'}}}});
    const header = stripe.webhooks.generateTestHeaderString({payload, secret: 'whsec_payorch'});
    process.stdout.write(JSON.stringify({payload, header}));
  )");
  const json::object o = json::parse(out).as_object();
  const std::string body(o.at("payload").as_string());
  const std::map<std::string, std::string> headers{{"stripe-signature", std::string(o.at("header").as_string())}};
  const auto check = payorch::providers::stripe::verify_callback(headers, body, now_s(), emulator_key());
  REQUIRE(check.verified);
  REQUIRE(check.events.size() == 1);
  CHECK(check.events[0].event_id == "evt_lib");
  CHECK(check.events[0].client_key == "ck_lib");
  CHECK(check.events[0].outcome == VendorOutcome::succeeded);
  const auto wrong = payorch::providers::stripe::verify_callback(headers, body, now_s(),
                                                                 {"whsec_other", std::chrono::minutes(5)});
  CHECK_FALSE(wrong.verified);
}
