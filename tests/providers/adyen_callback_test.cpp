// providers/adyen webhooks: HMAC per item (Adyen's documented example vector), a batch of
// several items, and what each eventCode means.
#include <doctest/doctest.h>

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include <string>
#include <vector>

#include "providers/adyen/notification.h"
#include "providers/adyen_fixture.h"

namespace {

namespace json = boost::json;
using payorch::VendorOutcome;
using payorch::providers::CallbackCheck;
using payorch::providers::CallbackError;
using payorch::providers::OperationKind;
using payorch::providers::adyen::hmac_signature;
using payorch::providers::adyen::signing_string;
using payorch::providers::adyen::SignedFields;
using payorch::test::adyen_hmac_key;
using payorch::test::adyen_merchant;

struct ItemSpec {
  std::string psp;
  std::string original;
  std::string reference;
  std::int64_t value;
  std::string event_code;
  std::string success;
  std::string reason;
};

// A NotificationRequestItem signed with `key` (or carrying `signature` when given).
json::object item(const ItemSpec& s, const std::string& key = adyen_hmac_key,
                  std::string signature = "") {
  const SignedFields fields{s.psp, s.original, adyen_merchant, s.reference,
                            std::to_string(s.value), "EUR", s.event_code, s.success};
  if (signature.empty()) signature = hmac_signature(key, signing_string(fields));
  json::object o{{"pspReference", s.psp},
                 {"merchantAccountCode", adyen_merchant},
                 {"merchantReference", s.reference},
                 {"amount", json::object{{"value", s.value}, {"currency", "EUR"}}},
                 {"eventCode", s.event_code},
                 {"success", s.success},
                 {"eventDate", "2026-12-02T17:00:00+01:00"},
                 {"additionalData", json::object{{"hmacSignature", signature}}}};
  if (!s.original.empty()) o["originalReference"] = s.original;
  if (!s.reason.empty()) o["reason"] = s.reason;
  return json::object{{"NotificationRequestItem", o}};
}

std::string notification(const std::vector<json::object>& items) {
  json::array a;
  for (const auto& i : items) a.push_back(i);
  return json::serialize(json::object{{"live", "false"}, {"notificationItems", a}});
}

CallbackCheck verify(payorch::test::AdyenFixture& f, const std::string& body) {
  return f.adapter().verify_and_parse({}, body, 1'700'000'000);
}

const ItemSpec authorised{"7914073381342284", "", "ck_pay_1", 1130, "AUTHORISATION", "true", ""};

}  // namespace

TEST_CASE("adyen HMAC: Adyen's documented example signature") {
  const SignedFields fields{"7914073381342284", "", "TestMerchant", "TestPayment-1407325143704",
                            "1130", "EUR", "AUTHORISATION", "true"};
  CHECK(signing_string(fields) ==
        "7914073381342284::TestMerchant:TestPayment-1407325143704:1130:EUR:AUTHORISATION:true");
  CHECK(hmac_signature(adyen_hmac_key, signing_string(fields)) ==
        "coqCmt/IZ4E3CzPvMY8zTjQVL5hYJUiBRg8UU+iCWo0=");
  CHECK(hmac_signature("not hex", "x").empty());
}

TEST_CASE("adyen callback: a signed AUTHORISATION is a charge event, acknowledged [accepted]") {
  payorch::test::AdyenFixture f;
  const CallbackCheck check = verify(f, notification({item(authorised)}));
  REQUIRE(check.verified);
  CHECK(check.ack_body == "[accepted]");
  REQUIRE(check.events.size() == 1);
  const auto& e = check.events[0];
  CHECK(e.event_id == "7914073381342284:AUTHORISATION:true");
  CHECK(e.kind == OperationKind::charge);
  CHECK(e.client_key == "ck_pay_1");
  CHECK(e.outcome == VendorOutcome::succeeded);
  CHECK(e.vendor_reference == "7914073381342284");
  CHECK(e.amount_minor == 1130);
  CHECK(e.currency == "EUR");
}

TEST_CASE("adyen callback: a batch, each item its own event; untracked codes make none") {
  payorch::test::AdyenFixture f;
  const std::string body = notification({
      item({"PSPA", "", "ck_pay_1", 1130, "AUTHORISATION", "false", "Refused"}),
      item({"PSPR", "PSPB", "ck_ref_1", 500, "REFUND", "true", ""}),
      item({"PSPC", "PSPB", "ck_pay_2", 700, "CAPTURE", "true", ""}),
      item({"PSPD", "PSPB", "ck_ref_2", 200, "REFUND", "false", "Insufficient balance"}),
      item({"PSPE", "PSPB", "ck_ref_3", 300, "REFUND_FAILED", "true", ""}),
      item({"PSPF", "", "ck_pay_3", 900, "REPORT_AVAILABLE", "true", ""}),
  });
  const CallbackCheck check = verify(f, body);
  REQUIRE(check.verified);
  REQUIRE(check.events.size() == 4);
  CHECK(check.events[0].kind == OperationKind::charge);
  CHECK(check.events[0].outcome == VendorOutcome::declined);
  CHECK(check.events[0].decline_code == "Refused");
  CHECK(check.events[1].kind == OperationKind::refund);
  CHECK(check.events[1].client_key == "ck_ref_1");
  CHECK(check.events[1].vendor_reference == "PSPR");
  CHECK(check.events[1].outcome == VendorOutcome::succeeded);
  CHECK(check.events[2].outcome == VendorOutcome::declined);
  CHECK(check.events[2].decline_code == "Insufficient balance");
  CHECK(check.events[3].event_id == "PSPE:REFUND_FAILED:true");
  CHECK(check.events[3].outcome == VendorOutcome::declined);
  CHECK(check.events[3].decline_code == "refund_failed");
}

TEST_CASE("adyen callback: a successful TECHNICAL_CANCEL or CANCELLATION declines the charge; a failed one is no event") {
  payorch::test::AdyenFixture f;
  const std::string body = notification({
      item({"PSPT", "PSPPAY1", "ck_pay_1", 1250, "TECHNICAL_CANCEL", "true", ""}),
      item({"PSPC", "PSPPAY2", "ck_pay_2", 700, "CANCELLATION", "true", ""}),
      item({"PSPN", "", "ck_pay_3", 900, "TECHNICAL_CANCEL", "true", "Cancelled by merchant"}),
      item({"PSPX", "PSPPAY4", "ck_pay_4", 900, "TECHNICAL_CANCEL", "false", "Transaction already captured"}),
      item({"PSPY", "PSPPAY5", "ck_pay_5", 900, "CANCELLATION", "false", ""}),
  });
  const CallbackCheck check = verify(f, body);
  REQUIRE(check.verified);
  CHECK(check.ack_body == "[accepted]");
  REQUIRE(check.events.size() == 3);
  const auto& technical = check.events[0];
  CHECK(technical.event_id == "PSPT:TECHNICAL_CANCEL:true");
  CHECK(technical.kind == OperationKind::charge);
  CHECK(technical.client_key == "ck_pay_1");
  CHECK(technical.outcome == VendorOutcome::declined);
  CHECK(technical.decline_code == "technical_cancel");
  // The payment's pspReference (originalReference), never the cancel's own.
  CHECK(technical.vendor_reference == "PSPPAY1");
  CHECK(technical.amount_minor == 1250);
  CHECK(technical.currency == "EUR");
  CHECK(check.events[1].event_id == "PSPC:CANCELLATION:true");
  CHECK(check.events[1].client_key == "ck_pay_2");
  CHECK(check.events[1].outcome == VendorOutcome::declined);
  CHECK(check.events[1].decline_code == "cancellation");
  CHECK(check.events[1].vendor_reference == "PSPPAY2");
  // No originalReference: no vendor_reference (the cancel's pspReference is not the charge's).
  CHECK(check.events[2].client_key == "ck_pay_3");
  CHECK_FALSE(check.events[2].vendor_reference.has_value());
  CHECK(check.events[2].decline_code == "Cancelled by merchant");
}

TEST_CASE("adyen callback: one bad signature refuses the whole batch") {
  payorch::test::AdyenFixture f;
  const std::string other_key(64, 'A');
  const ItemSpec refund{"PSPR", "PSPB", "ck_ref_1", 500, "REFUND", "true", ""};
  struct Row {
    std::string name;
    std::string body;
  };
  json::object tampered = item(authorised);
  tampered["NotificationRequestItem"].as_object()["amount"].as_object()["value"] = 1;
  json::object unsigned_item = item(authorised);
  unsigned_item["NotificationRequestItem"].as_object().erase("additionalData");
  const Row rows[] = {
      {"another key", notification({item(authorised), item(refund, other_key)})},
      {"tampered amount", notification({item(refund), tampered})},
      {"no signature", notification({unsigned_item})},
      {"garbage signature", notification({item(authorised, adyen_hmac_key, "AAAA")})},
  };
  for (const Row& row : rows) {
    CAPTURE(row.name);
    const CallbackCheck check = verify(f, row.body);
    CHECK_FALSE(check.verified);
    CHECK(check.error == CallbackError::bad_signature);
    CHECK(check.events.empty());
  }
}

TEST_CASE("adyen callback: malformed bodies") {
  payorch::test::AdyenFixture f;
  json::object bad_success = item({"PSPA", "", "ck", 1, "AUTHORISATION", "maybe", ""});
  const std::string rows[] = {
      "not json",
      R"({"live":"false"})",
      R"({"live":"false","notificationItems":[]})",
      R"({"live":"false","notificationItems":[{"Other":{}}]})",
      R"({"live":"false","notificationItems":[{"NotificationRequestItem":{"pspReference":"P"}}]})",
      notification({bad_success}),
  };
  for (const std::string& body : rows) {
    CAPTURE(body);
    const CallbackCheck check = verify(f, body);
    CHECK_FALSE(check.verified);
    CHECK(check.error == CallbackError::malformed);
  }
}
