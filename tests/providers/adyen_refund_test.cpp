// providers/adyen refunds (/payments/{pspReference}/refunds) and the fence (/cancels by our
// reference): requests and classification against a fake Checkout API.
#include <doctest/doctest.h>

#include <boost/json/parse.hpp>

#include "providers/adyen_fixture.h"

namespace {

namespace json = boost::json;
using payorch::VendorOutcome;
using payorch::to_string;
using payorch::test::adyen_answer;
using payorch::test::adyen_charge;
using payorch::test::adyen_refund;
using payorch::test::adyen_service_error;
using payorch::test::AdyenFixture;

json::object refund_response(const payorch::providers::RefundRequest& req) {
  return json::object{{"merchantAccount", "PayorchECOM"},
                      {"paymentPspReference", req.charge_reference},
                      {"pspReference", "PSPREFUND0000001"},
                      {"reference", req.client_key},
                      {"amount", json::object{{"value", req.amount_minor}, {"currency", req.currency}}},
                      {"status", "received"}};
}

json::object cancel_response(const payorch::providers::ChargeRequest& req) {
  return json::object{{"merchantAccount", "PayorchECOM"},
                      {"paymentReference", req.client_key},
                      {"pspReference", "PSPCANCEL0000001"},
                      {"status", "received"}};
}

}  // namespace

TEST_CASE("adyen refund posts to the payment's refunds with the refund's own key") {
  AdyenFixture f(adyen_answer(201, refund_response(adyen_refund())));
  CHECK(f.adapter().supports_refunds());
  const auto result = f.refund();
  CHECK(result.outcome == VendorOutcome::pending);
  CHECK(result.vendor_reference == "PSPREFUND0000001");
  CHECK(result.amount_minor == 500);
  const auto seen = f.server().requests();
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].target() == "/v71/payments/PSP0000000000001/refunds");
  CHECK(seen[0]["X-API-Key"] == "AQE_test_key");
  CHECK(seen[0]["idempotency-key"] == adyen_refund().client_key);
  CHECK(json::parse(seen[0].body()) == json::parse(R"({
      "amount":{"value":500,"currency":"EUR"},
      "merchantAccount":"PayorchECOM",
      "reference":"ck_01HZX3K8Q2M4N6P8R0T2V4W6RF"})"));
}

TEST_CASE("adyen refund: classification") {
  const auto req = adyen_refund();
  json::object other_payment = refund_response(req);
  other_payment["paymentPspReference"] = "PSPOTHER";
  json::object other_amount = refund_response(req);
  other_amount["amount"] = json::object{{"value", 501}, {"currency", "EUR"}};
  json::object other_reference = refund_response(req);
  other_reference["reference"] = "ck_other";
  json::object other_account = refund_response(req);
  other_account["merchantAccount"] = "Another";
  json::object not_received = refund_response(req);
  not_received["status"] = "done";
  json::object no_reference = refund_response(req);
  no_reference.erase("reference");
  struct Row {
    std::string name;
    unsigned status;
    json::value body;
    VendorOutcome expected;
  };
  const Row rows[] = {
      {"201 received", 201, refund_response(req), VendorOutcome::pending},
      {"201 received, reference omitted", 201, no_reference, VendorOutcome::pending},
      {"201 another payment", 201, other_payment, VendorOutcome::ambiguous},
      {"201 another amount", 201, other_amount, VendorOutcome::ambiguous},
      {"201 another reference", 201, other_reference, VendorOutcome::ambiguous},
      {"201 another merchant account", 201, other_account, VendorOutcome::ambiguous},
      {"201 unknown status", 201, not_received, VendorOutcome::ambiguous},
      {"200 instead of 201", 200, refund_response(req), VendorOutcome::ambiguous},
      {"422 validation", 422, adyen_service_error(422, "167"), VendorOutcome::declined},
      {"422 704", 422, adyen_service_error(422, "704"), VendorOutcome::ambiguous},
      {"401", 401, adyen_service_error(401, "000", "security"), VendorOutcome::auth_refused},
      {"500", 500, adyen_service_error(500, "905", "internal"), VendorOutcome::ambiguous},
  };
  for (const Row& row : rows) {
    CAPTURE(row.name);
    AdyenFixture f(adyen_answer(row.status, row.body));
    CHECK(to_string(f.refund().outcome) == to_string(row.expected));
  }
}

TEST_CASE("adyen refund has no lookup: query_refund answers unsupported") {
  AdyenFixture f(adyen_answer(200, json::object{}));
  const auto result = f.call([&](payorch::providers::ResultHandler done) {
    f.adapter().query_refund(adyen_refund(), std::move(done));
  });
  CHECK(result.outcome == VendorOutcome::unsupported);
  CHECK(f.server().request_count() == 0);
}

TEST_CASE("adyen fence cancels by our reference, without a PSP reference") {
  AdyenFixture f(adyen_answer(201, cancel_response(adyen_charge())));
  CHECK(f.adapter().supports_fence());
  const auto result = f.fence();
  CHECK(result.outcome == VendorOutcome::pending);
  CHECK(result.vendor_reference == "PSPCANCEL0000001");
  const auto seen = f.server().requests();
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].target() == "/v71/cancels");
  CHECK(seen[0]["idempotency-key"] == adyen_charge().client_key + "-cancel");
  CHECK(json::parse(seen[0].body()) ==
        json::parse(R"({"merchantAccount":"PayorchECOM","paymentReference":"ck_01HZX3K8Q2M4N6P8R0T2V4W6Y8"})"));
}

TEST_CASE("adyen fence: classification") {
  json::object other = cancel_response(adyen_charge());
  other["paymentReference"] = "ck_other";
  struct Row {
    std::string name;
    unsigned status;
    json::value body;
    VendorOutcome expected;
  };
  const Row rows[] = {
      {"201 received", 201, cancel_response(adyen_charge()), VendorOutcome::pending},
      {"201 another payment", 201, other, VendorOutcome::ambiguous},
      {"422 validation", 422, adyen_service_error(422, "100"), VendorOutcome::declined},
      {"403", 403, json::object{}, VendorOutcome::auth_refused},
      {"502", 502, json::object{}, VendorOutcome::ambiguous},
  };
  for (const Row& row : rows) {
    CAPTURE(row.name);
    AdyenFixture f(adyen_answer(row.status, row.body));
    CHECK(to_string(f.fence().outcome) == to_string(row.expected));
  }
}
