// providers/adyen against Adyen's own HMAC implementation: notifications signed by
// @adyen/api-library's HmacValidator (run by Node) are accepted, the same notification
// tampered with or signed with another key is refused.
#include <doctest/doctest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <string>

#include "providers/adyen_fixture.h"
#include "support/adyen_emulator.h"

namespace {

using payorch::VendorOutcome;
using payorch::providers::CallbackError;
using payorch::providers::OperationKind;

constexpr const char* items = R"([
  {"eventCode":"AUTHORISATION","success":"true","pspReference":"PSPLIB0000000001",
   "merchantAccountCode":"PayorchECOM","merchantReference":"ck_lib_1",
   "amount":{"value":1250,"currency":"EUR"},"eventDate":"2026-12-02T17:00:00+01:00"},
  {"eventCode":"REFUND","success":"false","pspReference":"PSPLIB0000000002",
   "originalReference":"PSPLIB0000000001","merchantAccountCode":"PayorchECOM",
   "merchantReference":"ck_lib_refund_1","amount":{"value":500,"currency":"EUR"},
   "reason":"Insufficient balance on payment","eventDate":"2026-12-02T17:01:00+01:00"}
])";

}  // namespace

TEST_CASE("adyen callback: notifications signed by @adyen/api-library") {
  if (const std::string missing = payorch::test::adyen_emulator_missing(); !missing.empty()) {
    MESSAGE("skipped: " << missing);
    return;
  }
  payorch::test::AdyenFixture f;
  const std::string signed_body =
      payorch::test::sign_with_adyen_library(payorch::test::adyen_hmac_key, items);
  const auto check = f.adapter().verify_and_parse({}, signed_body, 0);
  REQUIRE(check.verified);
  CHECK(check.ack_body == "[accepted]");
  REQUIRE(check.events.size() == 2);
  CHECK(check.events[0].kind == OperationKind::charge);
  CHECK(check.events[0].outcome == VendorOutcome::succeeded);
  CHECK(check.events[0].client_key == "ck_lib_1");
  CHECK(check.events[1].kind == OperationKind::refund);
  CHECK(check.events[1].outcome == VendorOutcome::declined);
  CHECK(check.events[1].decline_code == "Insufficient balance on payment");

  boost::json::value tampered = boost::json::parse(signed_body);
  tampered.at("notificationItems").as_array()[1].at("NotificationRequestItem").as_object()["success"] = "true";
  const auto refused = f.adapter().verify_and_parse({}, boost::json::serialize(tampered), 0);
  CHECK_FALSE(refused.verified);
  CHECK(refused.error == CallbackError::bad_signature);

  const std::string other_key_body = payorch::test::sign_with_adyen_library(std::string(64, 'B'), items);
  const auto other = f.adapter().verify_and_parse({}, other_key_body, 0);
  CHECK_FALSE(other.verified);
  CHECK(other.error == CallbackError::bad_signature);
}
