// providers/wechatpay callbacks: notifications built by wechatpay-axios-plugin's Aes/Rsa
// helpers and the emulator's own are accepted and read; tampered ones are refused (a changed
// body, another serial, a resource whose GCM tag does not hold, a stale timestamp, another key).
#include <doctest/doctest.h>

#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <chrono>
#include <ctime>
#include <string>

#include "providers/rsa_sha256.h"
#include "providers/wechatpay_fixture.h"
#include "support/webhook_receiver.h"

namespace {

namespace json = boost::json;
using payorch::VendorOutcome;
using payorch::providers::CallbackError;
using payorch::providers::OperationKind;
using payorch::test::notification_from_library;
using payorch::test::SignedNotification;
using payorch::test::WechatpayFixture;

constexpr const char* paid_resource = R"({"appid":"wxd678efh567hg6787","mchid":"1900000109",
  "out_trade_no":"ck_callback_paid_1","transaction_id":"4200000000202612020000000001","trade_type":"NATIVE",
  "trade_state":"SUCCESS","trade_state_desc":"支付成功","bank_type":"OTHERS","success_time":"2026-12-02T18:00:00+08:00",
  "payer":{"openid":"o_user"},"amount":{"total":1200,"payer_total":1200,"currency":"CNY","payer_currency":"CNY"}})";

constexpr const char* refund_resource = R"({"mchid":"1900000109","out_trade_no":"ck_callback_paid_1",
  "transaction_id":"4200000000202612020000000001","out_refund_no":"ck_callback_refund_1",
  "refund_id":"50000000382019052709732678859","refund_status":"SUCCESS","success_time":"2026-12-02T18:05:00+08:00",
  "user_received_account":"支付用户零钱","amount":{"total":1200,"refund":400,"payer_total":1200,"payer_refund":400}})";

std::int64_t now_s() { return static_cast<std::int64_t>(std::time(nullptr)); }

// The notification re-signed with the test platform key after `edit` changed its body.
template <class Edit>
SignedNotification resigned(SignedNotification n, Edit edit) {
  json::object body = json::parse(n.body).as_object();
  edit(body);
  n.body = json::serialize(body);
  const std::string message = n.headers["wechatpay-timestamp"] + "\n" + n.headers["wechatpay-nonce"] + "\n" + n.body + "\n";
  n.headers["wechatpay-signature"] =
      *payorch::providers::rsa_sha256_sign_base64(payorch::test::wechatpay_key("platform_private.pem"), message);
  return n;
}

}  // namespace

TEST_CASE("wechatpay callback: TRANSACTION.SUCCESS and REFUND.SUCCESS built by wechatpay-axios-plugin") {
  WECHATPAY_EMULATOR_OR_RETURN();
  WechatpayFixture f;
  const SignedNotification paid = notification_from_library("TRANSACTION.SUCCESS", paid_resource);
  const auto check = f.adapter().verify_and_parse(paid.headers, paid.body, now_s());
  REQUIRE_MESSAGE(check.verified, check.detail);
  CHECK_FALSE(check.ack_body.has_value());  // payorch's own 200 is the acknowledgement
  REQUIRE(check.events.size() == 1);
  const auto& e = check.events[0];
  CHECK(e.kind == OperationKind::charge);
  CHECK(e.client_key == "ck_callback_paid_1");
  CHECK(e.outcome == VendorOutcome::succeeded);
  CHECK(e.vendor_reference == "4200000000202612020000000001");
  CHECK(e.amount_minor == 1200);
  CHECK(e.currency == "CNY");
  CHECK(e.event_id.rfind("EV-", 0) == 0);

  const SignedNotification refunded = notification_from_library("REFUND.SUCCESS", refund_resource);
  const auto r = f.adapter().verify_and_parse(refunded.headers, refunded.body, now_s());
  REQUIRE_MESSAGE(r.verified, r.detail);
  REQUIRE(r.events.size() == 1);
  CHECK(r.events[0].kind == OperationKind::refund);
  CHECK(r.events[0].client_key == "ck_callback_refund_1");
  CHECK(r.events[0].outcome == VendorOutcome::succeeded);
  CHECK(r.events[0].vendor_reference == "50000000382019052709732678859");
  CHECK(r.events[0].amount_minor == 400);

  const SignedNotification other = notification_from_library("TRANSACTION.OTHER", paid_resource);
  const auto untracked = f.adapter().verify_and_parse(other.headers, other.body, now_s());
  CHECK(untracked.verified);
  CHECK(untracked.events.empty());
}

TEST_CASE("wechatpay callback: tampered notifications are refused") {
  WECHATPAY_EMULATOR_OR_RETURN();
  WechatpayFixture f;
  const SignedNotification good = notification_from_library("TRANSACTION.SUCCESS", paid_resource);
  auto& adapter = f.adapter();

  SUBCASE("a changed body") {
    SignedNotification n = good;
    n.body.replace(n.body.find("payorch test"), 12, "payorch TEST");
    const auto c = adapter.verify_and_parse(n.headers, n.body, now_s());
    CHECK_FALSE(c.verified);
    CHECK(c.error == CallbackError::bad_signature);
  }
  SUBCASE("another serial") {
    SignedNotification n = good;
    n.headers["wechatpay-serial"] = "ANOTHER0SERIAL";
    const auto c = adapter.verify_and_parse(n.headers, n.body, now_s());
    CHECK_FALSE(c.verified);
    CHECK(c.error == CallbackError::bad_signature);
  }
  SUBCASE("a missing header") {
    SignedNotification n = good;
    n.headers.erase("wechatpay-nonce");
    CHECK(adapter.verify_and_parse(n.headers, n.body, now_s()).error == CallbackError::bad_signature);
  }
  SUBCASE("a resource whose GCM tag does not hold, though the body is signed") {
    const SignedNotification n = resigned(good, [](json::object& body) {
      std::string ciphertext(body["resource"].as_object()["ciphertext"].as_string());
      ciphertext[3] = ciphertext[3] == 'A' ? 'B' : 'A';
      body["resource"].as_object()["ciphertext"] = ciphertext;
    });
    const auto c = adapter.verify_and_parse(n.headers, n.body, now_s());
    CHECK_FALSE(c.verified);
    CHECK(c.error == CallbackError::bad_signature);
    CHECK(c.detail.find("decrypt") != std::string::npos);
  }
  SUBCASE("changed associated_data") {
    const SignedNotification n = resigned(good, [](json::object& body) {
      body["resource"].as_object()["associated_data"] = "refund";
    });
    CHECK(adapter.verify_and_parse(n.headers, n.body, now_s()).error == CallbackError::bad_signature);
  }
  SUBCASE("a stale timestamp") {
    const SignedNotification old = notification_from_library("TRANSACTION.SUCCESS", paid_resource, now_s() - 600);
    const auto c = adapter.verify_and_parse(old.headers, old.body, now_s());
    CHECK_FALSE(c.verified);
    CHECK(c.error == CallbackError::stale_timestamp);
  }
  SUBCASE("signed with another key") {
    SignedNotification n = good;
    const std::string message =
        n.headers["wechatpay-timestamp"] + "\n" + n.headers["wechatpay-nonce"] + "\n" + n.body + "\n";
    n.headers["wechatpay-signature"] =
        *payorch::providers::rsa_sha256_sign_base64(payorch::test::wechatpay_key("other_private.pem"), message);
    CHECK(adapter.verify_and_parse(n.headers, n.body, now_s()).error == CallbackError::bad_signature);
  }
  SUBCASE("a signed body that is not a notification") {
    const SignedNotification n = resigned(good, [](json::object& body) { body.erase("resource"); });
    CHECK(adapter.verify_and_parse(n.headers, n.body, now_s()).error == CallbackError::malformed);
  }
}

TEST_CASE("wechatpay callback: the emulator's notifications (payment, refund) verify and read") {
  WECHATPAY_EMULATOR_OR_RETURN();
  WechatpayFixture f;
  payorch::test::WebhookReceiver receiver;
  receiver.answer_with(204);
  f.emulator().set_notify_url(receiver.url());
  const auto charge = payorch::test::wechatpay_charge("notified", 800);
  REQUIRE(f.submit(charge).outcome == VendorOutcome::pending);
  REQUIRE(f.emulator().pay(charge.client_key) == 200);
  REQUIRE(receiver.wait_for(1, std::chrono::seconds(5)));
  const auto deliveries = receiver.received();
  const auto c = f.adapter().verify_and_parse(deliveries[0].headers, deliveries[0].body, now_s());
  REQUIRE_MESSAGE(c.verified, c.detail);
  REQUIRE(c.events.size() == 1);
  CHECK(c.events[0].client_key == charge.client_key);
  CHECK(c.events[0].outcome == VendorOutcome::succeeded);
  CHECK(c.events[0].amount_minor == 800);
}
