// providers/wechatpay refunds against the WeChat Pay emulator: the order's total is read
// first, the refund goes out with out_refund_no = the refund's client_key, and its lifecycle
// (PROCESSING → SUCCESS / CLOSED / ABNORMAL) is read as classify.h's refund table says.
#include <doctest/doctest.h>

#include <boost/json/serialize.hpp>

#include <chrono>
#include <string>
#include <thread>

#include "providers/wechatpay_fixture.h"

namespace {

using payorch::VendorOutcome;
using payorch::providers::ChargeRequest;
using payorch::providers::RefundRequest;
using payorch::providers::VendorResult;
using payorch::test::wechatpay_charge;
using payorch::test::WechatpayFixture;

ChargeRequest paid_order(WechatpayFixture& f, std::int64_t amount) {
  const auto charge = wechatpay_charge("rfo", amount);
  REQUIRE(f.submit(charge).outcome == VendorOutcome::pending);
  REQUIRE(f.emulator().pay(charge.client_key) == 200);
  return charge;
}

RefundRequest refund_of(const ChargeRequest& charge, const std::string& tag, std::int64_t amount) {
  return RefundRequest{wechatpay_charge(tag).client_key, "", charge.client_key, amount, "CNY"};
}

// Asks until the refund is no longer pending (the emulator settles it refund_delay_ms later).
VendorResult settled(WechatpayFixture& f, const RefundRequest& r) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (;;) {
    VendorResult result = f.query_refund(r);
    if (result.outcome != VendorOutcome::pending || std::chrono::steady_clock::now() > deadline) return result;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace

TEST_CASE("wechatpay refund: PROCESSING (pending), then SUCCESS; the order's query says REFUND (succeeded)") {
  WECHATPAY_EMULATOR_OR_RETURN();
  WechatpayFixture f;
  const auto charge = paid_order(f, 1000);
  const auto refund = refund_of(charge, "rf", 400);
  const auto sent = f.refund(refund);
  CHECK(sent.outcome == VendorOutcome::pending);
  REQUIRE(sent.vendor_reference.has_value());
  CHECK(sent.amount_minor == 400);
  const auto done = settled(f, refund);
  CHECK(done.outcome == VendorOutcome::succeeded);
  CHECK(done.vendor_reference == sent.vendor_reference);
  CHECK(f.query(charge).outcome == VendorOutcome::succeeded);  // trade_state REFUND: it was paid
  // The same refund again is answered with its state; more than is left is refused.
  CHECK(f.refund(refund).outcome == VendorOutcome::succeeded);
  const auto over = f.refund(refund_of(charge, "rf", 601));
  CHECK(over.outcome == VendorOutcome::declined);
  CHECK(over.decline_code == "INVALID_REQUEST");
  CHECK(f.query_refund(refund_of(charge, "none", 1)).outcome == VendorOutcome::not_found);
  const std::string problems = boost::json::serialize(f.emulator().schema_problems());
  CHECK_MESSAGE(problems == "[]", problems);
}

TEST_CASE("wechatpay refund: CLOSED → declined, ABNORMAL → ambiguous") {
  WECHATPAY_EMULATOR_OR_RETURN();
  WechatpayFixture f;
  f.emulator().settings(R"({"auto_refund_status": null})");
  const auto charge = paid_order(f, 1000);
  const auto closed = refund_of(charge, "rc", 100);
  REQUIRE(f.refund(closed).outcome == VendorOutcome::pending);
  f.emulator().refund_outcome(closed.client_key, "CLOSED");
  const auto declined = f.query_refund(closed);
  CHECK(declined.outcome == VendorOutcome::declined);
  CHECK(declined.decline_code == "CLOSED");
  const auto abnormal = refund_of(charge, "ra", 100);
  REQUIRE(f.refund(abnormal).outcome == VendorOutcome::pending);
  f.emulator().refund_outcome(abnormal.client_key, "ABNORMAL");
  CHECK(f.query_refund(abnormal).outcome == VendorOutcome::ambiguous);
}

TEST_CASE("wechatpay refund: of an unpaid or unknown order it is not sent; faults on the refund") {
  WECHATPAY_EMULATOR_OR_RETURN();
  WechatpayFixture f;
  const auto unpaid = wechatpay_charge("unpaid");
  REQUIRE(f.submit(unpaid).outcome == VendorOutcome::pending);
  CHECK(f.refund(refund_of(unpaid, "ru", 100)).outcome == VendorOutcome::not_sent);
  CHECK(f.refund(refund_of(wechatpay_charge("ghost"), "rg", 100)).outcome == VendorOutcome::not_sent);

  const auto charge = paid_order(f, 900);
  const auto lost = refund_of(charge, "rl", 100);
  f.emulator().set_fault("fail_before_commit", 1, 0, "/v3/refund/domestic/refunds$");
  CHECK(f.refund(lost).outcome == VendorOutcome::ambiguous);
  CHECK(f.query_refund(lost).outcome == VendorOutcome::not_found);
  const auto kept = refund_of(charge, "rk", 100);
  f.emulator().set_fault("commit_then_5xx", 1, 0, "/v3/refund/domestic/refunds$");
  CHECK(f.refund(kept).outcome == VendorOutcome::ambiguous);
  CHECK(settled(f, kept).outcome == VendorOutcome::succeeded);
  // A fault on the order's lookup: the refund was never sent.
  f.emulator().set_fault("fail_before_commit", 1, 0, "/out-trade-no/");
  CHECK(f.refund(refund_of(charge, "rq", 100)).outcome == VendorOutcome::not_sent);
}
