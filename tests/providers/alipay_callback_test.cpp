// providers/alipay notifications: signed by the emulator's Alipay key and accepted by alipay-sdk's
// checkNotifySignV2 (sign_notification.js), then judged by payorch; tampered, foreign and
// malformed ones refused.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "providers/alipay_fixture.h"
#include "support/webhook_receiver.h"

namespace {

using payorch::VendorOutcome;
using payorch::providers::CallbackError;
using payorch::providers::OperationKind;
using payorch::test::AlipayFixture;
using payorch::test::AlipayFixtureOptions;
using payorch::test::sign_with_alipay_sdk;

std::string notification(const std::string& extra) {
  return sign_with_alipay_sdk(
      R"({"notify_time":"2026-12-02 18:00:00","notify_type":"trade_status_sync","notify_id":"ntf_1",)"
      R"("app_id":"2021000000000001","charset":"utf-8","version":"1.0","sign_type":"RSA2",)"
      R"("trade_no":"2026120222001000000000000001","out_trade_no":"ck_cb_1","total_amount":"12.34",)" +
      extra + "}");
}

}  // namespace

TEST_CASE("alipay callback: a TRADE_SUCCESS notification alipay-sdk accepts is a charge success, acked \"success\"") {
  PAYORCH_NEED_ALIPAY_EMULATOR();
  AlipayFixture f;
  const std::string body = notification(R"("trade_status":"TRADE_SUCCESS","subject":"payorch 测试 order")");
  const auto check = f.adapter().verify_and_parse({}, body, 0);
  REQUIRE_MESSAGE(check.verified, check.detail);
  CHECK(check.ack_body == "success");
  REQUIRE(check.events.size() == 1);
  const auto& e = check.events[0];
  CHECK(e.kind == OperationKind::charge);
  CHECK(e.event_id == "ntf_1");
  CHECK(e.client_key == "ck_cb_1");
  CHECK(e.outcome == VendorOutcome::succeeded);
  CHECK(e.vendor_reference == "2026120222001000000000000001");
  CHECK(e.amount_minor == 1234);
  CHECK(e.currency == "CNY");

  // Tampered: another amount under the same signature.
  std::string tampered = body;
  const auto at = tampered.find("total_amount=12.34");
  REQUIRE(at != std::string::npos);
  tampered.replace(at, 18, "total_amount=99.99");
  const auto refused = f.adapter().verify_and_parse({}, tampered, 0);
  CHECK_FALSE(refused.verified);
  CHECK(refused.error == CallbackError::bad_signature);
  // Without its signature.
  const auto unsigned_body = body.substr(0, body.find("&sign="));
  CHECK(f.adapter().verify_and_parse({}, unsigned_body, 0).error == CallbackError::bad_signature);
  // Not a form.
  CHECK(f.adapter().verify_and_parse({}, "a=%zz&sign=x", 0).error == CallbackError::malformed);
}

TEST_CASE("alipay callback: an empty parameter signed as alipay-sdk reads it (\"body=\") is accepted") {
  PAYORCH_NEED_ALIPAY_EMULATOR();
  AlipayFixture f;
  const std::string body = notification(R"("trade_status":"TRADE_SUCCESS","body":"")");
  REQUIRE(body.find("body=&") != std::string::npos);
  const auto check = f.adapter().verify_and_parse({}, body, 0);
  CHECK_MESSAGE(check.verified, check.detail);
}

TEST_CASE("alipay callback: checked with a key that is not Alipay's, or for another app, refused") {
  PAYORCH_NEED_ALIPAY_EMULATOR();
  AlipayFixture f({.alipay_public_key = "app_public.pem"});
  const auto check = f.adapter().verify_and_parse({}, notification(R"("trade_status":"TRADE_SUCCESS")"), 0);
  CHECK_FALSE(check.verified);
  CHECK(check.error == CallbackError::bad_signature);

  AlipayFixture g;
  const std::string foreign = sign_with_alipay_sdk(
      R"({"notify_id":"ntf_2","app_id":"2021999999999999","out_trade_no":"ck_cb_1","trade_status":"TRADE_SUCCESS","sign_type":"RSA2"})");
  CHECK_FALSE(g.adapter().verify_and_parse({}, foreign, 0).verified);
}

TEST_CASE("alipay callback: TRADE_CLOSED, WAIT_BUYER_PAY, refunds, and statuses payorch does not track") {
  PAYORCH_NEED_ALIPAY_EMULATOR();
  AlipayFixture f;
  const auto closed = f.adapter().verify_and_parse({}, notification(R"("trade_status":"TRADE_CLOSED")"), 0);
  REQUIRE(closed.events.size() == 1);
  CHECK(closed.events[0].outcome == VendorOutcome::declined);
  CHECK(closed.events[0].decline_code == "TRADE_CLOSED");

  const auto waiting = f.adapter().verify_and_parse({}, notification(R"("trade_status":"WAIT_BUYER_PAY")"), 0);
  REQUIRE(waiting.events.size() == 1);
  CHECK(waiting.events[0].outcome == VendorOutcome::pending);

  const auto refunded = f.adapter().verify_and_parse(
      {}, notification(R"("trade_status":"TRADE_SUCCESS","out_biz_no":"ck_refund_1","refund_fee":"4.00","gmt_refund":"2026-12-02 18:01:00")"), 0);
  REQUIRE(refunded.events.size() == 1);
  CHECK(refunded.events[0].kind == OperationKind::refund);
  CHECK(refunded.events[0].client_key == "ck_refund_1");
  CHECK(refunded.events[0].outcome == VendorOutcome::succeeded);

  const auto other = f.adapter().verify_and_parse({}, notification(R"("trade_status":"SOMETHING_NEW")"), 0);
  CHECK(other.verified);
  CHECK(other.events.empty());
  CHECK(other.ack_body == "success");
}

TEST_CASE("alipay callback: the emulator's own notifications (payment, refund, close) are accepted") {
  PAYORCH_NEED_ALIPAY_EMULATOR();
  AlipayFixture f;
  payorch::test::WebhookReceiver receiver;
  f.emulator().set_notify_url(receiver.url("/v1/callbacks/alipay"));
  const auto charge = payorch::test::alipay_charge("ck_notified");
  const auto paid = f.submit(charge);
  REQUIRE(paid.outcome == VendorOutcome::succeeded);
  REQUIRE(f.refund(payorch::test::alipay_refund(charge, "ck_notified_refund", 234)).outcome ==
          VendorOutcome::succeeded);
  const auto waiting = payorch::test::alipay_charge("ck_notified_closed", "28763443825664392");
  REQUIRE(f.submit(waiting).outcome == VendorOutcome::pending);
  REQUIRE(f.fence(waiting).outcome == VendorOutcome::succeeded);
  REQUIRE(receiver.wait_for(3));
  const auto got = receiver.received();
  std::vector<payorch::providers::CallbackEvent> events;
  for (const auto& delivery : got) {
    CHECK(delivery.header("content-type").find("application/x-www-form-urlencoded") == 0);
    const auto check = f.adapter().verify_and_parse(delivery.headers, delivery.body, 0);
    REQUIRE_MESSAGE(check.verified, check.detail);
    CHECK(check.ack_body == "success");
    REQUIRE(check.events.size() == 1);
    events.push_back(check.events[0]);
  }
  std::sort(events.begin(), events.end(), [](const auto& a, const auto& b) { return a.client_key < b.client_key; });
  CHECK(events[0].client_key == "ck_notified");
  CHECK(events[0].outcome == VendorOutcome::succeeded);
  CHECK(events[0].vendor_reference == paid.vendor_reference);
  CHECK(events[0].amount_minor == 1234);
  CHECK(events[1].client_key == "ck_notified_closed");
  CHECK(events[1].outcome == VendorOutcome::declined);
  CHECK(events[2].kind == OperationKind::refund);
  CHECK(events[2].client_key == "ck_notified_refund");
  CHECK(events[2].outcome == VendorOutcome::succeeded);
}
