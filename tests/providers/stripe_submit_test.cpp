// providers/stripe submit: the form body, and every row of the classification table
// (providers/stripe/classify.h), end to end through the HTTP client against a fake vendor.
#include <doctest/doctest.h>

#include "providers/stripe/form.h"
#include "providers/stripe_fixture.h"

namespace {

namespace json = boost::json;
using payorch::VendorOutcome;
using payorch::to_string;
using payorch::test::answer_json;
using payorch::test::Reply;
using payorch::test::sample_charge;
using payorch::test::SimFixture;
using payorch::test::stripe_error;
using payorch::test::stripe_payment_intent;

}  // namespace

TEST_CASE("stripe form encoding keeps key brackets and percent-encodes values") {
  using payorch::providers::stripe::form_encode;
  CHECK(form_encode({{"metadata[client_key]", "ck_1"}, {"amount", "1250"}}) ==
        "metadata[client_key]=ck_1&amount=1250");
  CHECK(form_encode({{"metadata[payee]", "a b&c=d+e/f"}}) == "metadata[payee]=a%20b%26c%3Dd%2Be%2Ff");
  CHECK(form_encode({{"x", "[é]"}}) == "x=%5B%C3%A9%5D");
  CHECK(form_encode({}).empty());
}

TEST_CASE("stripe submit creates and confirms a PaymentIntent with the client_key as key and metadata") {
  SimFixture f(answer_json(200, stripe_payment_intent(sample_charge(), "succeeded")), "stripe");
  const auto result = f.submit();
  CHECK(result.outcome == VendorOutcome::succeeded);
  CHECK(result.vendor_reference == "pi_3Qx7");
  CHECK(result.amount_minor == 1250);
  CHECK(result.currency == "EUR");
  const auto seen = f.server().requests();
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].method_string() == "POST");
  CHECK(seen[0].target() == "/v1/payment_intents");
  CHECK(seen[0]["Authorization"] == "Bearer sk_test_123");
  CHECK(seen[0]["Idempotency-Key"] == sample_charge().client_key);
  CHECK(seen[0]["Content-Type"] == "application/x-www-form-urlencoded");
  CHECK(seen[0].body() ==
        "amount=1250&currency=eur&payment_method=tok_ok&confirm=true"
        "&automatic_payment_methods[enabled]=true&automatic_payment_methods[allow_redirects]=never"
        "&metadata[client_key]=ck_01HZX3K8Q2M4N6P8R0T2V4W6Y8&metadata[payee]=acct_merchant_7");
}

TEST_CASE("stripe submit: every PaymentIntent status and error answer") {
  struct Row {
    std::string name;
    unsigned status;
    json::value body;
    VendorOutcome expected;
    const char* decline_code;  // nullptr: none expected
  };
  const auto req = sample_charge();
  auto card_error_with_intent = stripe_error("card_error", "card_declined", "stolen_card");
  card_error_with_intent["error"].as_object()["payment_intent"] =
      stripe_payment_intent(req, "requires_payment_method");
  auto card_error_other_intent = card_error_with_intent;
  card_error_other_intent["error"].as_object()["payment_intent"].as_object()["amount"] = 99;
  auto card_error_succeeded_intent = card_error_with_intent;
  card_error_succeeded_intent["error"].as_object()["payment_intent"] = stripe_payment_intent(req, "succeeded");
  auto rpm_without_error = stripe_payment_intent(req, "requires_payment_method");
  rpm_without_error["last_payment_error"] = nullptr;
  auto rpm_code_only = stripe_payment_intent(req, "requires_payment_method");
  rpm_code_only["last_payment_error"] = json::object{{"type", "card_error"}, {"code", "expired_card"}};
  const Row rows[] = {
      {"succeeded", 200, stripe_payment_intent(req, "succeeded"), VendorOutcome::succeeded, nullptr},
      {"processing", 200, stripe_payment_intent(req, "processing"), VendorOutcome::pending, nullptr},
      {"requires_action", 200, stripe_payment_intent(req, "requires_action"), VendorOutcome::pending, nullptr},
      {"requires_confirmation", 200, stripe_payment_intent(req, "requires_confirmation"), VendorOutcome::pending, nullptr},
      {"requires_payment_method after a failed confirm", 200,
       stripe_payment_intent(req, "requires_payment_method"), VendorOutcome::declined, "insufficient_funds"},
      {"requires_payment_method, code only", 200, rpm_code_only, VendorOutcome::declined, "expired_card"},
      {"requires_payment_method without an error", 200, rpm_without_error, VendorOutcome::ambiguous, nullptr},
      {"requires_capture", 200, stripe_payment_intent(req, "requires_capture"), VendorOutcome::ambiguous, nullptr},
      {"canceled", 200, stripe_payment_intent(req, "canceled"), VendorOutcome::declined, "abandoned"},
      {"unknown status", 200, stripe_payment_intent(req, "requires_source"), VendorOutcome::ambiguous, nullptr},
      {"200 not a payment_intent", 200, json::object{{"object", "refund"}}, VendorOutcome::ambiguous, nullptr},
      {"200 not an object", 200, json::array{}, VendorOutcome::ambiguous, nullptr},
      {"402 card_error", 402, stripe_error("card_error", "card_declined", "generic_decline"),
       VendorOutcome::declined, "generic_decline"},
      {"402 card_error, code only", 402, stripe_error("card_error", "incorrect_cvc"), VendorOutcome::declined, "incorrect_cvc"},
      {"402 card_error with our intent", 402, card_error_with_intent, VendorOutcome::declined, "stolen_card"},
      {"402 card_error with another intent", 402, card_error_other_intent, VendorOutcome::ambiguous, nullptr},
      {"402 card_error with a succeeded intent", 402, card_error_succeeded_intent, VendorOutcome::ambiguous, nullptr},
      {"400 idempotency_error", 400, stripe_error("idempotency_error"), VendorOutcome::key_mismatch, nullptr},
      {"400 idempotency_key_in_use", 400, stripe_error("idempotency_error", "idempotency_key_in_use"),
       VendorOutcome::ambiguous, nullptr},
      {"400 invalid_request_error", 400, stripe_error("invalid_request_error", "resource_missing"),
       VendorOutcome::declined, "resource_missing"},
      {"400 invalid_request_error without code", 400, stripe_error("invalid_request_error"),
       VendorOutcome::declined, "invalid_request_error"},
      {"400 rate_limit", 400, stripe_error("invalid_request_error", "rate_limit"), VendorOutcome::ambiguous, nullptr},
      {"400 unknown type", 400, stripe_error("something_new"), VendorOutcome::ambiguous, nullptr},
      {"401", 401, stripe_error("invalid_request_error"), VendorOutcome::auth_refused, nullptr},
      {"403", 403, stripe_error("invalid_request_error"), VendorOutcome::auth_refused, nullptr},
      {"404", 404, stripe_error("invalid_request_error", "resource_missing"), VendorOutcome::ambiguous, nullptr},
      {"409 key in use", 409, stripe_error("idempotency_error", "idempotency_key_in_use"), VendorOutcome::ambiguous, nullptr},
      {"429 lock_timeout", 429, stripe_error("invalid_request_error", "lock_timeout"), VendorOutcome::ambiguous, nullptr},
      {"429 rate_limit", 429, stripe_error("invalid_request_error", "rate_limit"), VendorOutcome::ambiguous, nullptr},
      {"500 api_error", 500, stripe_error("api_error"), VendorOutcome::ambiguous, nullptr},
      {"503 no body", 503, json::object{}, VendorOutcome::ambiguous, nullptr},
      {"201", 201, stripe_payment_intent(req, "succeeded"), VendorOutcome::ambiguous, nullptr},
  };
  for (const Row& row : rows) {
    CAPTURE(row.name);
    SimFixture f(answer_json(row.status, row.body), "stripe");
    const auto result = f.submit();
    CHECK(to_string(result.outcome) == to_string(row.expected));
    CHECK(result.http_status == static_cast<int>(row.status));
    if (row.decline_code) CHECK(result.decline_code == row.decline_code);
    else CHECK_FALSE(result.decline_code.has_value());
    CHECK(f.server().request_count() == 1);
  }
}

TEST_CASE("stripe submit: a PaymentIntent that is not the one sent is ambiguous, whatever its status") {
  const auto req = sample_charge();
  auto other_key = stripe_payment_intent(req, "succeeded");
  other_key["metadata"].as_object()["client_key"] = "ck_other";
  auto no_metadata = stripe_payment_intent(req, "succeeded");
  no_metadata.erase("metadata");
  auto other_amount = stripe_payment_intent(req, "succeeded");
  other_amount["amount"] = 1251;
  auto other_currency = stripe_payment_intent(req, "succeeded");
  other_currency["currency"] = "usd";
  auto upper_currency = stripe_payment_intent(req, "succeeded");
  upper_currency["currency"] = "EUR";
  struct Row {
    json::object body;
    VendorOutcome expected;
  };
  const Row rows[] = {{other_key, VendorOutcome::ambiguous},      {no_metadata, VendorOutcome::ambiguous},
                      {other_amount, VendorOutcome::ambiguous},   {other_currency, VendorOutcome::ambiguous},
                      {upper_currency, VendorOutcome::succeeded}};
  for (const Row& row : rows) {
    SimFixture f(answer_json(200, row.body), "stripe");
    CHECK(to_string(f.submit().outcome) == to_string(row.expected));
  }
}

TEST_CASE("stripe submit: no vendor is not_sent, a dropped connection is ambiguous") {
  SimFixture none("http://127.0.0.1:" + std::to_string(payorch::test::unused_port()), "sk_test_123",
                  "stripe");
  CHECK(none.submit().outcome == VendorOutcome::not_sent);
  SimFixture dropped([](const payorch::http::Request&) { return Reply::drop_connection(); }, "stripe");
  CHECK(dropped.submit().outcome == VendorOutcome::ambiguous);
  SimFixture silent([](const payorch::http::Request&) { return Reply::never_answer(); }, "stripe");
  CHECK(silent.submit().outcome == VendorOutcome::ambiguous);
}

TEST_CASE("stripe has no lookup by client_key: query and query_refund answer unsupported without a request") {
  SimFixture f(answer_json(500, json::object{}), "stripe");
  CHECK_FALSE(f.adapter().supports_query());
  CHECK(f.adapter().supports_refunds());
  CHECK_FALSE(f.adapter().supports_fence());
  CHECK(f.query().outcome == VendorOutcome::unsupported);
  CHECK(f.query_refund().outcome == VendorOutcome::unsupported);
  CHECK(f.server().request_count() == 0);
}
