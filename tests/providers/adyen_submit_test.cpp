// providers/adyen submit: the /payments request, and every row of the classification table
// (providers/adyen/classify.h), end to end through the HTTP client against a fake Checkout API.
#include <doctest/doctest.h>

#include <boost/json/parse.hpp>

#include <string>

#include "providers/adyen_fixture.h"

namespace {

namespace json = boost::json;
using payorch::VendorOutcome;
using payorch::to_string;
using payorch::test::adyen_answer;
using payorch::test::adyen_charge;
using payorch::test::adyen_payment_response;
using payorch::test::adyen_service_error;
using payorch::test::AdyenFixture;
using payorch::test::Reply;

}  // namespace

TEST_CASE("adyen submit sends a ContAuth payment with the stored method, keyed by the client_key") {
  AdyenFixture f(adyen_answer(200, adyen_payment_response(adyen_charge(), "Authorised")));
  const auto result = f.submit();
  CHECK(result.outcome == VendorOutcome::succeeded);
  CHECK(result.vendor_reference == "PSP0000000000001");
  CHECK(result.amount_minor == 1250);
  CHECK(result.currency == "EUR");
  const auto seen = f.server().requests();
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].method_string() == "POST");
  CHECK(seen[0].target() == "/v71/payments");
  CHECK(seen[0]["X-API-Key"] == "AQE_test_key");
  CHECK(seen[0]["idempotency-key"] == adyen_charge().client_key);
  CHECK(seen[0]["Content-Type"] == "application/json");
  CHECK(json::parse(seen[0].body()) == json::parse(R"({
      "amount":{"value":1250,"currency":"EUR"},
      "merchantAccount":"PayorchECOM",
      "reference":"ck_01HZX3K8Q2M4N6P8R0T2V4W6Y8",
      "paymentMethod":{"type":"scheme","storedPaymentMethodId":"8415718415172204"},
      "shopperInteraction":"ContAuth",
      "recurringProcessingModel":"UnscheduledCardOnFile",
      "returnUrl":"https://payorch.invalid/adyen/return",
      "metadata":{"payee":"acct_merchant_7"},
      "shopperReference":"shopper_42"})"));
}

TEST_CASE("adyen submit: a source without a shopper sends the token alone") {
  AdyenFixture f(adyen_answer(200, adyen_payment_response(adyen_charge(), "Authorised")));
  auto req = adyen_charge();
  req.source = "8415718415172204";
  f.submit(req);
  const auto seen = f.server().requests();
  REQUIRE(seen.size() == 1);
  const json::object body = json::parse(seen[0].body()).as_object();
  CHECK_FALSE(body.contains("shopperReference"));
  CHECK(body.at("paymentMethod").at("storedPaymentMethodId") == "8415718415172204");
}

TEST_CASE("adyen submit: every resultCode of PaymentResponse") {
  struct Row {
    std::string code;
    VendorOutcome expected;
  };
  const Row rows[] = {
      {"Authorised", VendorOutcome::succeeded},
      {"Refused", VendorOutcome::declined},
      {"Cancelled", VendorOutcome::declined},
      {"Received", VendorOutcome::pending},
      {"Pending", VendorOutcome::pending},
      {"PresentToShopper", VendorOutcome::pending},
      {"RedirectShopper", VendorOutcome::pending},
      {"IdentifyShopper", VendorOutcome::pending},
      {"ChallengeShopper", VendorOutcome::pending},
      {"AuthenticationFinished", VendorOutcome::pending},
      {"AuthenticationNotRequired", VendorOutcome::pending},
      {"PartiallyAuthorised", VendorOutcome::ambiguous},
      {"Error", VendorOutcome::ambiguous},
      {"Success", VendorOutcome::ambiguous},
      {"SomethingNew", VendorOutcome::ambiguous},
  };
  for (const Row& row : rows) {
    CAPTURE(row.code);
    AdyenFixture f(adyen_answer(200, adyen_payment_response(adyen_charge(), row.code)));
    const auto result = f.submit();
    CHECK(to_string(result.outcome) == to_string(row.expected));
    CHECK(result.http_status == 200);
  }
}

TEST_CASE("adyen submit: a refusal carries Adyen's refusalReason") {
  AdyenFixture f(adyen_answer(200, adyen_payment_response(adyen_charge(), "Refused")));
  const auto result = f.submit();
  CHECK(result.outcome == VendorOutcome::declined);
  CHECK(result.decline_code == "Not enough balance");
  CHECK(result.detail.find("refusalReasonCode 12") != std::string::npos);
  json::object cancelled = adyen_payment_response(adyen_charge(), "Cancelled");
  AdyenFixture g(adyen_answer(200, cancelled));
  CHECK(g.submit().decline_code == "Cancelled");
}

TEST_CASE("adyen submit: an answer about another payment is ambiguous") {
  const auto req = adyen_charge();
  json::object other_reference = adyen_payment_response(req, "Authorised");
  other_reference["merchantReference"] = "ck_someone_else";
  json::object other_amount = adyen_payment_response(req, "Authorised");
  other_amount["amount"] = json::object{{"value", 999}, {"currency", "EUR"}};
  json::object other_currency = adyen_payment_response(req, "Refused");
  other_currency["amount"] = json::object{{"value", 1250}, {"currency", "USD"}};
  json::object bad_amount = adyen_payment_response(req, "Authorised");
  bad_amount["amount"] = json::object{{"value", "1250"}, {"currency", "EUR"}};
  json::object no_amount = adyen_payment_response(req, "Authorised");
  no_amount.erase("amount");
  struct Row {
    std::string name;
    json::object body;
    VendorOutcome expected;
  };
  const Row rows[] = {
      {"other merchantReference", other_reference, VendorOutcome::ambiguous},
      {"other amount", other_amount, VendorOutcome::ambiguous},
      {"other currency", other_currency, VendorOutcome::ambiguous},
      {"amount.value not an integer", bad_amount, VendorOutcome::ambiguous},
      {"no amount (optional in the schema)", no_amount, VendorOutcome::succeeded},
      {"no resultCode", json::object{{"pspReference", "PSP1"}}, VendorOutcome::ambiguous},
  };
  for (const Row& row : rows) {
    CAPTURE(row.name);
    AdyenFixture f(adyen_answer(200, row.body));
    CHECK(to_string(f.submit().outcome) == to_string(row.expected));
  }
}

TEST_CASE("adyen submit: error answers (ServiceError)") {
  struct Row {
    std::string name;
    unsigned status;
    json::value body;
    VendorOutcome expected;
    const char* decline_code;
  };
  const Row rows[] = {
      {"401", 401, adyen_service_error(401, "000", "security"), VendorOutcome::auth_refused, ""},
      {"403", 403, adyen_service_error(403, "010", "security"), VendorOutcome::auth_refused, ""},
      {"422 704 in progress", 422, adyen_service_error(422, "704"), VendorOutcome::ambiguous, ""},
      {"409 704 in progress", 409, adyen_service_error(409, "704"), VendorOutcome::ambiguous, ""},
      {"422 validation", 422, adyen_service_error(422, "101"), VendorOutcome::declined, "validation_101"},
      {"400 validation", 400, adyen_service_error(400, "702", "validation"), VendorOutcome::declined, "validation_702"},
      {"422 without errorCode", 422, json::object{{"status", 422}}, VendorOutcome::ambiguous, ""},
      {"500", 500, adyen_service_error(500, "905", "internal"), VendorOutcome::ambiguous, ""},
      {"503 empty", 503, json::object{}, VendorOutcome::ambiguous, ""},
      {"404", 404, json::object{}, VendorOutcome::ambiguous, ""},
      {"201 instead of 200", 201, adyen_payment_response(adyen_charge(), "Authorised"), VendorOutcome::ambiguous, ""},
      {"200 not an object", 200, json::array{}, VendorOutcome::ambiguous, ""},
  };
  for (const Row& row : rows) {
    CAPTURE(row.name);
    AdyenFixture f(adyen_answer(row.status, row.body));
    const auto result = f.submit();
    CHECK(to_string(result.outcome) == to_string(row.expected));
    CHECK(result.http_status == static_cast<int>(row.status));
    CHECK(result.decline_code.value_or("") == row.decline_code);
  }
}

TEST_CASE("adyen submit: transport failures") {
  AdyenFixture nobody;
  CHECK(nobody.submit().outcome == VendorOutcome::not_sent);
  AdyenFixture dropped([](const payorch::http::Request&) { return Reply::drop_connection(); });
  CHECK(dropped.submit().outcome == VendorOutcome::ambiguous);
  AdyenFixture silent([](const payorch::http::Request&) { return Reply::never_answer(); });
  CHECK(silent.submit().outcome == VendorOutcome::ambiguous);
}

TEST_CASE("adyen has no lookup: query answers unsupported without a request") {
  AdyenFixture f(adyen_answer(200, json::object{}));
  CHECK_FALSE(f.adapter().supports_query());
  const auto result = f.call([&](payorch::providers::ResultHandler done) {
    f.adapter().query(adyen_charge(), std::move(done));
  });
  CHECK(result.outcome == VendorOutcome::unsupported);
  CHECK(f.server().request_count() == 0);
}
