// providers/alipay refunds against the Alipay emulator: alipay.trade.refund with out_request_no =
// the refund's client_key, and alipay.trade.fastpay.refund.query.
#include <doctest/doctest.h>

#include "providers/alipay_fixture.h"

namespace {

using payorch::VendorOutcome;
using payorch::test::alipay_charge;
using payorch::test::alipay_refund;
using payorch::test::AlipayFixture;

}  // namespace

TEST_CASE("alipay refund: refunded, repeated without effect, asked about, and refused beyond the charge") {
  PAYORCH_NEED_ALIPAY_EMULATOR();
  AlipayFixture f;
  const auto charge = alipay_charge();
  REQUIRE(f.submit(charge).outcome == VendorOutcome::succeeded);
  const auto refund = alipay_refund(charge, "ck_refund_1", 400);
  const auto done = f.refund(refund);
  CHECK_MESSAGE(done.outcome == VendorOutcome::succeeded, done.detail);
  CHECK(done.vendor_reference == "ck_refund_1");
  // A repeat answers 10000 with fund_change N: no money moved by it, so not taken as a refund
  // made; the refund query says it was.
  const auto repeated = f.refund(refund);
  CHECK_MESSAGE(repeated.outcome == VendorOutcome::pending, repeated.detail);
  CHECK(repeated.detail.find("fund_change N") != std::string::npos);
  const auto asked = f.query_refund(refund);
  CHECK(asked.outcome == VendorOutcome::succeeded);
  CHECK(asked.amount_minor == 400);
  CHECK(f.query_refund(alipay_refund(charge, "ck_refund_never", 100)).outcome == VendorOutcome::not_found);
  const auto over = f.refund(alipay_refund(charge, "ck_refund_2", 900));
  CHECK(over.outcome == VendorOutcome::declined);
  CHECK(over.decline_code == "ACQ.REASON_TRADE_REFUND_FEE_ERR");
  // A refund of an order Alipay does not know.
  const auto unknown = f.refund(alipay_refund(alipay_charge("ck_unknown"), "ck_refund_3", 100));
  CHECK(unknown.decline_code == "ACQ.TRADE_NOT_EXIST");
}

TEST_CASE("alipay refund: an answer lost after the refund is ambiguous, and the query finds it") {
  PAYORCH_NEED_ALIPAY_EMULATOR();
  AlipayFixture f;
  const auto charge = alipay_charge();
  REQUIRE(f.submit(charge).outcome == VendorOutcome::succeeded);
  const auto refund = alipay_refund(charge, "ck_refund_lost", 1234);
  f.emulator().set_fault("commit_then_5xx", 1, 0, "trade\\.refund$");
  CHECK(f.refund(refund).outcome == VendorOutcome::ambiguous);
  CHECK(f.query_refund(refund).outcome == VendorOutcome::succeeded);
  // Fully refunded: the trade is closed (TRADE_CLOSED), which a query reports as declined.
  CHECK(f.query(charge).decline_code == "TRADE_CLOSED");
}

TEST_CASE("alipay refund: 10000 with fund_change N and no refund made is not a refund") {
  PAYORCH_NEED_ALIPAY_EMULATOR();
  AlipayFixture f;
  const auto charge = alipay_charge();
  REQUIRE(f.submit(charge).outcome == VendorOutcome::succeeded);
  const auto refund = alipay_refund(charge, "ck_refund_not_done", 500);
  f.emulator().set_fault("refund_not_done", 1, 0, "trade\\.refund$");
  const auto taken = f.refund(refund);
  CHECK_MESSAGE(taken.outcome == VendorOutcome::pending, taken.detail);
  // The query finds no refund: nothing moved.
  CHECK(f.query_refund(refund).outcome == VendorOutcome::not_found);
  // Sent again (same out_request_no), it is made: fund_change Y.
  CHECK(f.refund(refund).outcome == VendorOutcome::succeeded);
  CHECK(f.query_refund(refund).outcome == VendorOutcome::succeeded);
}
