// providers/sim callback verification: signature, timestamp tolerance, body.
#include <doctest/doctest.h>

#include <boost/json/serialize.hpp>

#include <map>
#include <string>

#include "core/signature.h"
#include "providers/sim/callback.h"
#include "providers/sim_fixture.h"

namespace {

namespace json = boost::json;
using payorch::providers::CallbackError;
using payorch::providers::OperationKind;
using payorch::VendorOutcome;
using payorch::sign_timestamped;
using payorch::test::sample_charge;
using payorch::test::SimFixture;
using payorch::test::sample_refund;
using payorch::test::vendor_charge;
using payorch::test::vendor_refund;

constexpr std::int64_t now = 1'764'400'000;
constexpr const char* secret = "whsec_test";  // SimFixture's provider secret; tolerance 300 s

std::string event_body(std::string_view type, std::string_view status) {
  return json::serialize(json::object{{"id", "evt_42"},
                                      {"type", type},
                                      {"created", now - 5},
                                      {"data", vendor_charge(sample_charge(), status)}});
}

std::string refund_event_body(std::string_view type, std::string_view status) {
  return json::serialize(json::object{{"id", "evt_43"},
                                      {"type", type},
                                      {"created", now - 5},
                                      {"data", vendor_refund(sample_refund(), status)}});
}

std::map<std::string, std::string> signed_headers(const std::string& body, std::int64_t t = now,
                                                  const std::string& key = secret) {
  return {{"sim-signature", sign_timestamped(key, t, body)}, {"content-type", "application/json"}};
}

}  // namespace

TEST_CASE("sim callback: a valid signature yields the event") {
  SimFixture f;
  const std::string body = event_body("charge.succeeded", "succeeded");
  const auto check = f.adapter().verify_and_parse(signed_headers(body), body, now);
  REQUIRE(check.verified);
  CHECK(check.events.at(0).event_id == "evt_42");
  CHECK(check.events.at(0).kind == OperationKind::charge);
  CHECK(check.events.at(0).client_key == sample_charge().client_key);
  CHECK(check.events.at(0).outcome == VendorOutcome::succeeded);
  CHECK(check.events.at(0).vendor_reference == "ch_777");
  CHECK(check.events.at(0).amount_minor == 1250);
  CHECK(check.events.at(0).currency == "EUR");

  const std::string declined = event_body("charge.declined", "declined");
  const auto d = f.adapter().verify_and_parse(signed_headers(declined), declined, now);
  REQUIRE(d.verified);
  CHECK(d.events.at(0).outcome == VendorOutcome::declined);
  CHECK(d.events.at(0).decline_code == "insufficient_funds");
}

TEST_CASE("sim callback: tampered body, wrong secret, missing or garbled header → bad_signature") {
  SimFixture f;
  const std::string body = event_body("charge.succeeded", "succeeded");
  std::string tampered = body;
  tampered.replace(tampered.find("1250"), 4, "9250");
  const auto expect_bad = [&](const std::map<std::string, std::string>& headers,
                              const std::string& b) {
    const auto check = f.adapter().verify_and_parse(headers, b, now);
    CHECK_FALSE(check.verified);
    CHECK(check.error == CallbackError::bad_signature);
  };
  expect_bad(signed_headers(body), tampered);
  expect_bad(signed_headers(body, now, "whsec_other"), body);
  expect_bad({}, body);
  expect_bad({{"sim-signature", "v1=abc"}}, body);
  expect_bad({{"sim-signature", "t=12x,v1=abc"}}, body);
  // The timestamp is signed too: moving it breaks the signature.
  std::string moved = sign_timestamped(secret, now, body);
  moved.replace(moved.find(std::to_string(now)), std::to_string(now).size(),
                std::to_string(now + 1));
  expect_bad({{"sim-signature", moved}}, body);
}

TEST_CASE("sim callback: several v1 signatures (secret rotation), one valid, are accepted") {
  SimFixture f;
  const std::string body = event_body("charge.pending", "pending");
  const std::string good = sign_timestamped(secret, now, body);
  const std::string header = "t=" + std::to_string(now) + ",v1=" + std::string(64, '0') + "," +
                             good.substr(good.find("v1="));
  const auto check = f.adapter().verify_and_parse({{"sim-signature", header}}, body, now);
  REQUIRE(check.verified);
  CHECK(check.events.at(0).outcome == VendorOutcome::pending);
}

TEST_CASE("sim callback: a timestamp outside the tolerance → stale_timestamp") {
  SimFixture f;
  const std::string body = event_body("charge.succeeded", "succeeded");
  for (const std::int64_t t : {now - 301, now + 301}) {
    CAPTURE(t);
    const auto check = f.adapter().verify_and_parse(signed_headers(body, t), body, now);
    CHECK_FALSE(check.verified);
    CHECK(check.error == CallbackError::stale_timestamp);
  }
  for (const std::int64_t t : {now - 300, now + 300})
    CHECK(f.adapter().verify_and_parse(signed_headers(body, t), body, now).verified);
}

TEST_CASE("sim callback: a correctly signed but malformed body → malformed") {
  SimFixture f;
  json::object no_reference = vendor_charge(sample_charge(), "succeeded");
  no_reference.erase("reference");
  const std::string bodies[] = {
      "{not json",
      "[]",
      // A key named twice: one reader would take "declined", another "succeeded".
      R"({"id":"evt_1","type":"charge.declined","type":"charge.succeeded","created":1,"data":{}})",
      event_body("charge.refunded", "succeeded"),
      event_body("charge.succeeded", "declined"),  // type and status disagree
      json::serialize(json::object{{"id", "evt_1"}, {"type", "charge.succeeded"}, {"created", now}}),
      json::serialize(json::object{
          {"id", "evt_1"}, {"type", "charge.succeeded"}, {"created", now}, {"data", no_reference}}),
  };
  for (const std::string& body : bodies) {
    CAPTURE(body);
    const auto check = f.adapter().verify_and_parse(signed_headers(body), body, now);
    CHECK_FALSE(check.verified);
    CHECK(check.error == CallbackError::malformed);
  }
}

TEST_CASE("sim callback: without a configured secret nothing verifies") {
  payorch::providers::sim::CallbackKey key{"", std::chrono::minutes(5)};
  const std::string body = event_body("charge.succeeded", "succeeded");
  const auto check =
      payorch::providers::sim::verify_callback(signed_headers(body, now, ""), body, now, key);
  CHECK_FALSE(check.verified);
  CHECK(check.error == CallbackError::bad_signature);
}

TEST_CASE("sim callback: a refund event is the refund's, by its own reference") {
  SimFixture f;
  const std::string body = refund_event_body("refund.succeeded", "succeeded");
  const auto check = f.adapter().verify_and_parse(signed_headers(body), body, now);
  REQUIRE(check.verified);
  CHECK(check.events.at(0).event_id == "evt_43");
  CHECK(check.events.at(0).kind == OperationKind::refund);
  CHECK(check.events.at(0).client_key == sample_refund().client_key);
  CHECK(check.events.at(0).outcome == VendorOutcome::succeeded);
  CHECK(check.events.at(0).vendor_reference == "rf_888");
  CHECK(check.events.at(0).amount_minor == 500);
  CHECK(check.events.at(0).currency == "EUR");
  CHECK_FALSE(check.events.at(0).decline_code.has_value());

  const std::string declined = refund_event_body("refund.declined", "declined");
  const auto d = f.adapter().verify_and_parse(signed_headers(declined), declined, now);
  REQUIRE(d.verified);
  CHECK(d.events.at(0).kind == OperationKind::refund);
  CHECK(d.events.at(0).outcome == VendorOutcome::declined);
  CHECK(d.events.at(0).decline_code == "exceeds_charge");

  const std::string pending = refund_event_body("refund.pending", "pending");
  const auto p = f.adapter().verify_and_parse(signed_headers(pending), pending, now);
  REQUIRE(p.verified);
  CHECK(p.events.at(0).kind == OperationKind::refund);
  CHECK(p.events.at(0).outcome == VendorOutcome::pending);
}

TEST_CASE("sim callback: a refund event with a bad signature → bad_signature") {
  SimFixture f;
  const std::string body = refund_event_body("refund.succeeded", "succeeded");
  std::string tampered = body;
  tampered.replace(tampered.find("500"), 3, "900");
  const auto check = f.adapter().verify_and_parse(signed_headers(body), tampered, now);
  CHECK_FALSE(check.verified);
  CHECK(check.error == CallbackError::bad_signature);
  const auto other_key =
      f.adapter().verify_and_parse(signed_headers(body, now, "whsec_other"), body, now);
  CHECK_FALSE(other_key.verified);
  CHECK(other_key.error == CallbackError::bad_signature);
}

TEST_CASE("sim callback: a refund event whose data is not that refund → malformed") {
  SimFixture f;
  json::object no_charge = vendor_refund(sample_refund(), "succeeded");
  no_charge.erase("charge");
  const auto event = [](std::string_view type, const json::object& data) {
    return json::serialize(
        json::object{{"id", "evt_1"}, {"type", type}, {"created", now}, {"data", data}});
  };
  const std::string bodies[] = {
      refund_event_body("refund.refunded", "succeeded"),
      refund_event_body("refund.succeeded", "declined"),  // type and status disagree
      event("refund.succeeded", no_charge),
      // A charge is not a refund, whatever the event's type says.
      event("refund.succeeded", vendor_charge(sample_charge(), "succeeded")),
  };
  for (const std::string& body : bodies) {
    CAPTURE(body);
    const auto check = f.adapter().verify_and_parse(signed_headers(body), body, now);
    CHECK_FALSE(check.verified);
    CHECK(check.error == CallbackError::malformed);
  }
}
