// providers/stripe webhooks: Stripe-Signature (good, bad, stale, several v1 during a secret
// roll, v0 ignored) and every event type the adapter reads, through the adapter make_adapter
// builds.
#include <doctest/doctest.h>

#include <boost/json/serialize.hpp>

#include "core/signature.h"
#include "providers/stripe_fixture.h"

namespace {

namespace json = boost::json;
using payorch::VendorOutcome;
using payorch::to_string;
using payorch::providers::CallbackError;
using payorch::providers::OperationKind;
using payorch::test::answer_json;
using payorch::test::sample_charge;
using payorch::test::sample_refund;
using payorch::test::SimFixture;
using payorch::test::stripe_payment_intent;
using payorch::test::stripe_refund;

constexpr std::int64_t now = 1'767'000'000;
constexpr const char* secret = "whsec_test";  // SimFixture's callback.secret

std::string event(std::string_view type, const json::object& object) {
  return json::serialize(json::object{{"id", "evt_1Qx"},
                                      {"object", "event"},
                                      {"api_version", "2025-01-27.acacia"},
                                      {"created", now},
                                      {"data", json::object{{"object", object}}},
                                      {"livemode", false},
                                      {"pending_webhooks", 1},
                                      {"request", json::object{{"id", nullptr}, {"idempotency_key", nullptr}}},
                                      {"type", type}});
}

std::map<std::string, std::string> signed_headers(const std::string& body, std::int64_t t = now) {
  return {{"stripe-signature", payorch::sign_timestamped(secret, t, body)}};
}

SimFixture stripe_adapter() { return SimFixture(answer_json(500, json::object{}), "stripe"); }

}  // namespace

TEST_CASE("stripe webhook: PaymentIntent events become charge events keyed by metadata.client_key") {
  struct Row {
    std::string type;
    std::string status;
    VendorOutcome expected;
    const char* decline_code;
  };
  const Row rows[] = {
      {"payment_intent.succeeded", "succeeded", VendorOutcome::succeeded, nullptr},
      {"payment_intent.payment_failed", "requires_payment_method", VendorOutcome::declined, "insufficient_funds"},
      {"payment_intent.processing", "processing", VendorOutcome::pending, nullptr},
      {"payment_intent.requires_action", "requires_action", VendorOutcome::pending, nullptr},
      {"payment_intent.canceled", "canceled", VendorOutcome::declined, "abandoned"},
  };
  auto f = stripe_adapter();
  for (const Row& row : rows) {
    CAPTURE(row.type);
    const std::string body = event(row.type, stripe_payment_intent(sample_charge(), row.status));
    const auto check = f.adapter().verify_and_parse(signed_headers(body), body, now);
    REQUIRE(check.verified);
    REQUIRE(check.events.size() == 1);
    const auto& e = check.events[0];
    CHECK(e.event_id == "evt_1Qx");
    CHECK(e.kind == OperationKind::charge);
    CHECK(e.client_key == sample_charge().client_key);
    CHECK(to_string(e.outcome) == to_string(row.expected));
    CHECK(e.vendor_reference == "pi_3Qx7");
    CHECK(e.amount_minor == 1250);
    CHECK(e.currency == "EUR");
    if (row.decline_code) CHECK(e.decline_code == row.decline_code);
    else CHECK_FALSE(e.decline_code.has_value());
  }
}

TEST_CASE("stripe webhook: refund events become refund events") {
  struct Row {
    std::string type;
    std::string status;
    VendorOutcome expected;
  };
  const Row rows[] = {
      {"refund.created", "pending", VendorOutcome::pending},
      {"refund.updated", "succeeded", VendorOutcome::succeeded},
      {"refund.failed", "failed", VendorOutcome::declined},
      {"charge.refund.updated", "canceled", VendorOutcome::declined},
  };
  auto f = stripe_adapter();
  for (const Row& row : rows) {
    CAPTURE(row.type);
    const std::string body = event(row.type, stripe_refund(sample_refund(), row.status));
    const auto check = f.adapter().verify_and_parse(signed_headers(body), body, now);
    REQUIRE(check.verified);
    REQUIRE(check.events.size() == 1);
    CHECK(check.events[0].kind == OperationKind::refund);
    CHECK(check.events[0].client_key == sample_refund().client_key);
    CHECK(check.events[0].vendor_reference == "re_3Qx9");
    CHECK(to_string(check.events[0].outcome) == to_string(row.expected));
  }
}

TEST_CASE("stripe webhook: verified events about nothing payorch decides carry no events") {
  auto f = stripe_adapter();
  auto foreign = stripe_payment_intent(sample_charge(), "succeeded");
  foreign["metadata"] = json::object{};
  const std::string bodies[] = {
      event("customer.created", json::object{{"id", "cus_1"}, {"object", "customer"}}),
      event("charge.refunded", json::object{{"id", "ch_1"}, {"object", "charge"}}),
      event("payment_intent.created", stripe_payment_intent(sample_charge(), "requires_payment_method")),
      event("payment_intent.succeeded", foreign),
      event("payment_intent.amount_capturable_updated", stripe_payment_intent(sample_charge(), "requires_capture")),
      event("payment_intent.processing", stripe_payment_intent(sample_charge(), "requires_capture")),
  };
  for (const std::string& body : bodies) {
    CAPTURE(body);
    const auto check = f.adapter().verify_and_parse(signed_headers(body), body, now);
    CHECK(check.verified);
    CHECK(check.events.empty());
  }
}

TEST_CASE("stripe webhook signature: bad, stale, several v1, v0 and missing") {
  auto f = stripe_adapter();
  const std::string body = event("payment_intent.succeeded", stripe_payment_intent(sample_charge(), "succeeded"));
  const std::string good = payorch::hmac_sha256_hex(secret, std::to_string(now) + "." + body);
  const std::string wrong = payorch::hmac_sha256_hex("whsec_other", std::to_string(now) + "." + body);
  const std::string t = "t=" + std::to_string(now);
  const auto verify = [&f, &body](std::string header, std::int64_t at) {
    return f.adapter().verify_and_parse({{"stripe-signature", std::move(header)}}, body, at);
  };
  CHECK(verify(t + ",v1=" + good, now).verified);
  // While a secret is rolled Stripe signs with each: any v1 may match, in any position.
  CHECK(verify(t + ",v1=" + wrong + ",v1=" + good, now).verified);
  CHECK(verify(t + ",v1=" + good + ",v1=" + wrong, now).verified);
  // v0 (test-mode scheme) is ignored, whether right or wrong.
  CHECK(verify(t + ",v1=" + good + ",v0=" + wrong, now).verified);
  const auto only_v0 = verify(t + ",v0=" + good, now);
  CHECK_FALSE(only_v0.verified);
  CHECK(only_v0.error == CallbackError::bad_signature);
  const auto bad = verify(t + ",v1=" + wrong, now);
  CHECK_FALSE(bad.verified);
  CHECK(bad.error == CallbackError::bad_signature);
  // Outside the 300 s tolerance, either way.
  CHECK(verify(t + ",v1=" + good, now + 300).verified);
  const auto stale = verify(t + ",v1=" + good, now + 301);
  CHECK_FALSE(stale.verified);
  CHECK(stale.error == CallbackError::stale_timestamp);
  CHECK(verify(t + ",v1=" + good, now - 301).error == CallbackError::stale_timestamp);
  // The body is what is signed.
  const auto tampered = f.adapter().verify_and_parse(signed_headers(body), body + " ", now);
  CHECK(tampered.error == CallbackError::bad_signature);
  const auto missing = f.adapter().verify_and_parse({}, body, now);
  CHECK(missing.error == CallbackError::bad_signature);
}

TEST_CASE("stripe webhook: a signed body that is not an event is malformed") {
  auto f = stripe_adapter();
  auto wrong_object = stripe_payment_intent(sample_charge(), "succeeded");
  wrong_object["object"] = "charge";
  const std::string bodies[] = {
      "not json",
      R"({"id":"evt_1","type":"payment_intent.succeeded"})",
      R"({"id":"evt_1","id":"evt_2","type":"x","data":{"object":{}}})",
      event("payment_intent.succeeded", wrong_object),
  };
  for (const std::string& body : bodies) {
    CAPTURE(body);
    const auto check = f.adapter().verify_and_parse(signed_headers(body), body, now);
    CHECK_FALSE(check.verified);
    CHECK(check.error == CallbackError::malformed);
  }
}
