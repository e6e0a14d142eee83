// providers/stripe refunds: the form body and every refund status and error row
// (providers/stripe/classify.h) against a fake vendor.
#include <doctest/doctest.h>

#include "providers/stripe_fixture.h"

namespace {

namespace json = boost::json;
using payorch::VendorOutcome;
using payorch::to_string;
using payorch::test::answer_json;
using payorch::test::sample_refund;
using payorch::test::SimFixture;
using payorch::test::stripe_error;
using payorch::test::stripe_refund;

}  // namespace

TEST_CASE("stripe refund posts payment_intent, amount and metadata[client_key] under the refund's key") {
  SimFixture f(answer_json(200, stripe_refund(sample_refund(), "succeeded")), "stripe");
  const auto result = f.refund();
  CHECK(result.outcome == VendorOutcome::succeeded);
  CHECK(result.vendor_reference == "re_3Qx9");
  CHECK(result.amount_minor == 500);
  CHECK(result.currency == "EUR");
  const auto seen = f.server().requests();
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].target() == "/v1/refunds");
  CHECK(seen[0]["Idempotency-Key"] == sample_refund().client_key);
  CHECK(seen[0]["Authorization"] == "Bearer sk_test_123");
  CHECK(seen[0].body() ==
        "payment_intent=ch_777&amount=500&metadata[client_key]=ck_01HZX3K8Q2M4N6P8R0T2V4W6RF");
}

TEST_CASE("stripe refund: every refund status and error answer") {
  struct Row {
    std::string name;
    unsigned status;
    json::value body;
    VendorOutcome expected;
    const char* decline_code;
  };
  const auto req = sample_refund();
  auto other_intent = stripe_refund(req, "succeeded");
  other_intent["payment_intent"] = "pi_other";
  auto other_key = stripe_refund(req, "succeeded");
  other_key["metadata"].as_object()["client_key"] = "ck_other";
  auto other_amount = stripe_refund(req, "succeeded");
  other_amount["amount"] = 501;
  const Row rows[] = {
      {"succeeded", 200, stripe_refund(req, "succeeded"), VendorOutcome::succeeded, nullptr},
      {"pending", 200, stripe_refund(req, "pending"), VendorOutcome::pending, nullptr},
      {"requires_action", 200, stripe_refund(req, "requires_action"), VendorOutcome::pending, nullptr},
      {"failed", 200, stripe_refund(req, "failed"), VendorOutcome::declined, "expired_or_canceled_card"},
      {"canceled", 200, stripe_refund(req, "canceled"), VendorOutcome::declined, "canceled"},
      {"unknown status", 200, stripe_refund(req, "reversed"), VendorOutcome::ambiguous, nullptr},
      {"another payment_intent", 200, other_intent, VendorOutcome::ambiguous, nullptr},
      {"another client_key", 200, other_key, VendorOutcome::ambiguous, nullptr},
      {"another amount", 200, other_amount, VendorOutcome::ambiguous, nullptr},
      {"400 charge_already_refunded", 400, stripe_error("invalid_request_error", "charge_already_refunded"),
       VendorOutcome::declined, "charge_already_refunded"},
      {"400 idempotency_error", 400, stripe_error("idempotency_error"), VendorOutcome::key_mismatch, nullptr},
      {"401", 401, stripe_error("invalid_request_error"), VendorOutcome::auth_refused, nullptr},
      {"409", 409, stripe_error("idempotency_error", "idempotency_key_in_use"), VendorOutcome::ambiguous, nullptr},
      {"429 lock_timeout", 429, stripe_error("invalid_request_error", "lock_timeout"), VendorOutcome::ambiguous, nullptr},
      {"500", 500, stripe_error("api_error"), VendorOutcome::ambiguous, nullptr},
  };
  for (const Row& row : rows) {
    CAPTURE(row.name);
    SimFixture f(answer_json(row.status, row.body), "stripe");
    const auto result = f.refund();
    CHECK(to_string(result.outcome) == to_string(row.expected));
    if (row.decline_code) CHECK(result.decline_code == row.decline_code);
    else CHECK_FALSE(result.decline_code.has_value());
  }
}
