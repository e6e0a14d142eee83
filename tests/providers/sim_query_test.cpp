// providers/sim query by reference, end to end against a fake vendor.
#include <doctest/doctest.h>

#include "providers/sim_fixture.h"

namespace {

namespace json = boost::json;
using payorch::VendorOutcome;
using payorch::to_string;
using payorch::test::answer_json;
using payorch::test::Reply;
using payorch::test::sample_charge;
using payorch::test::SimFixture;
using payorch::test::vendor_charge;
using payorch::test::vendor_error;

json::object list(json::array data) { return json::object{{"data", std::move(data)}}; }

}  // namespace

TEST_CASE("sim query asks by reference with the API key") {
  SimFixture f(answer_json(200, list({})));
  CHECK(f.query().outcome == VendorOutcome::not_found);
  const auto seen = f.server().requests();
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].method_string() == "GET");
  CHECK(seen[0].target() == "/v1/charges?reference=ck_01HZX3K8Q2M4N6P8R0T2V4W6Y8");
  CHECK(seen[0]["Authorization"] == "Bearer sk_test_123");
  CHECK(f.adapter().supports_query());
  CHECK_FALSE(f.adapter().supports_fence());
}

TEST_CASE("sim query: classification of vendor answers") {
  struct Row {
    std::string name;
    unsigned status;
    json::value body;
    VendorOutcome expected;
  };
  const auto req = sample_charge();
  json::object wrong_amount = vendor_charge(req, "succeeded");
  wrong_amount["amount_minor"] = 999;
  const Row rows[] = {
      {"empty list", 200, list({}), VendorOutcome::not_found},
      {"succeeded", 200, list({vendor_charge(req, "succeeded")}), VendorOutcome::succeeded},
      {"declined", 200, list({vendor_charge(req, "declined")}), VendorOutcome::declined},
      {"pending", 200, list({vendor_charge(req, "pending")}), VendorOutcome::pending},
      {"two charges", 200, list({vendor_charge(req, "succeeded"), vendor_charge(req, "succeeded")}),
       VendorOutcome::ambiguous},
      {"another amount", 200, list({wrong_amount}), VendorOutcome::ambiguous},
      {"no data", 200, json::object{}, VendorOutcome::ambiguous},
      {"404 not_supported", 404, vendor_error("not_supported"), VendorOutcome::unsupported},
      {"404 other", 404, vendor_error("not_found"), VendorOutcome::ambiguous},
      {"401", 401, vendor_error("unauthorized"), VendorOutcome::ambiguous},
      {"500", 500, json::object{}, VendorOutcome::ambiguous},
  };
  for (const Row& row : rows) {
    CAPTURE(row.name);
    SimFixture f(answer_json(row.status, row.body));
    const auto result = f.query(req);
    CHECK(to_string(result.outcome) == to_string(row.expected));
  }
}

TEST_CASE("sim query: a found charge carries the vendor's fields") {
  SimFixture f(answer_json(200, list({vendor_charge(sample_charge(), "declined")})));
  const auto result = f.query();
  CHECK(result.outcome == VendorOutcome::declined);
  CHECK(result.vendor_reference == "ch_777");
  CHECK(result.decline_code == "insufficient_funds");
  CHECK(result.amount_minor == 1250);
  CHECK(result.currency == "EUR");
}

TEST_CASE("sim query: no answer is ambiguous, no vendor is not_sent") {
  SimFixture silent([](const payorch::http::Request&) { return Reply::never_answer(); });
  CHECK(silent.query().outcome == VendorOutcome::ambiguous);
  SimFixture absent;
  CHECK(absent.query().outcome == VendorOutcome::not_sent);
}
