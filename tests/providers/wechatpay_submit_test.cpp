// providers/wechatpay against the WeChat Pay emulator: orders (native, jsapi, codepay), the
// query, the close as the fence, faults, request signatures and answer verification — the
// tables of providers/wechatpay/classify.h. Every request the adapter sends is also checked
// against the community OpenAPI description by the emulator (strict: no undocumented field).
#include <doctest/doctest.h>

#include <boost/json/serialize.hpp>

#include <string>

#include "providers/wechatpay_fixture.h"

namespace {

using payorch::VendorOutcome;
using payorch::test::wechatpay_charge;
using payorch::test::WechatpayEmulatorOptions;
using payorch::test::WechatpayFixture;

void check_no_schema_problems(WechatpayFixture& f) {
  const std::string problems = boost::json::serialize(f.emulator().schema_problems());
  CHECK_MESSAGE(problems == "[]", problems);
}

}  // namespace

TEST_CASE("wechatpay native: the order waits for the user (pending); the query follows NOTPAY → SUCCESS") {
  WECHATPAY_EMULATOR_OR_RETURN();
  WechatpayFixture f;
  const auto charge = wechatpay_charge("native");
  const auto created = f.submit(charge);
  CHECK(created.outcome == VendorOutcome::pending);
  CHECK(created.http_status == 200);
  // Re-sending the same order is answered as before (the same code_url).
  CHECK(f.submit(charge).outcome == VendorOutcome::pending);
  const auto waiting = f.query(charge);
  CHECK(waiting.outcome == VendorOutcome::pending);
  CHECK(waiting.detail == "trade_state NOTPAY");
  CHECK(f.emulator().pay(charge.client_key) == 200);
  const auto paid = f.query(charge);
  CHECK(paid.outcome == VendorOutcome::succeeded);
  REQUIRE(paid.vendor_reference.has_value());
  CHECK(paid.amount_minor == 1200);
  CHECK(paid.currency == "CNY");
  // An answer about another amount than the one sent proves nothing.
  auto other = charge;
  other.amount_minor = 1300;
  CHECK(f.query(other).outcome == VendorOutcome::ambiguous);
  // Another order under the same out_trade_no: OUT_TRADE_NO_USED, ambiguous.
  CHECK(f.submit(other).outcome == VendorOutcome::ambiguous);
  CHECK(f.query(wechatpay_charge("never")).outcome == VendorOutcome::not_found);
  check_no_schema_problems(f);
}

TEST_CASE("wechatpay jsapi and codepay orders") {
  WECHATPAY_EMULATOR_OR_RETURN();
  {
    WechatpayFixture f({}, "jsapi");
    CHECK(f.submit(wechatpay_charge("jsapi")).outcome == VendorOutcome::pending);
    CHECK(f.adapter().supports_fence());
    check_no_schema_problems(f);
  }
  WechatpayFixture f({}, "codepay");
  CHECK_FALSE(f.adapter().supports_fence());
  const auto paid = f.submit(wechatpay_charge("code", 500, "130061098828009406"));
  CHECK(paid.outcome == VendorOutcome::succeeded);
  CHECK(paid.amount_minor == 500);
  CHECK(paid.vendor_reference.has_value());
  const auto waiting_charge = wechatpay_charge("code", 500, "USERPAYING0001");
  CHECK(f.submit(waiting_charge).outcome == VendorOutcome::pending);
  CHECK(f.emulator().pay(waiting_charge.client_key) == 200);
  CHECK(f.query(waiting_charge).outcome == VendorOutcome::succeeded);
  const auto failed = f.submit(wechatpay_charge("code", 500, "PAYERROR0001"));
  CHECK(failed.outcome == VendorOutcome::declined);
  CHECK(failed.decline_code == "PAYERROR");
  CHECK(f.fence(waiting_charge).outcome == VendorOutcome::unsupported);
  check_no_schema_problems(f);
}

TEST_CASE("wechatpay fence: close unpaid → succeeded (twice), then the query says CLOSED; paid → ORDERPAID") {
  WECHATPAY_EMULATOR_OR_RETURN();
  WechatpayFixture f;
  const auto charge = wechatpay_charge("close");
  REQUIRE(f.submit(charge).outcome == VendorOutcome::pending);
  const auto closed = f.fence(charge);
  CHECK(closed.outcome == VendorOutcome::succeeded);
  CHECK(closed.http_status == 204);
  const auto again = f.fence(charge);
  CHECK(again.outcome == VendorOutcome::succeeded);  // ORDER_CLOSED: already closed, unpaid
  CHECK(again.http_status == 400);
  const auto after = f.query(charge);
  CHECK(after.outcome == VendorOutcome::declined);
  CHECK(after.decline_code == "CLOSED");
  CHECK(f.emulator().pay(charge.client_key) == 409);  // a late payment is impossible

  const auto paid_charge = wechatpay_charge("paid");
  REQUIRE(f.submit(paid_charge).outcome == VendorOutcome::pending);
  REQUIRE(f.emulator().pay(paid_charge.client_key) == 200);
  const auto refused = f.fence(paid_charge);
  CHECK(refused.outcome == VendorOutcome::declined);
  CHECK(refused.decline_code == "ORDERPAID");
  CHECK(f.fence(wechatpay_charge("none")).outcome == VendorOutcome::not_found);
  check_no_schema_problems(f);
}

TEST_CASE("wechatpay fence: a close before the vendor's minimum delay is refused: ambiguous") {
  WECHATPAY_EMULATOR_OR_RETURN();
  WechatpayEmulatorOptions options;
  options.close_min_delay_ms = 300000;
  WechatpayFixture f(options);
  const auto charge = wechatpay_charge("early");
  REQUIRE(f.submit(charge).outcome == VendorOutcome::pending);
  const auto early = f.fence(charge);
  CHECK(early.outcome == VendorOutcome::ambiguous);
  CHECK(early.http_status == 403);
  CHECK(f.query(charge).outcome == VendorOutcome::pending);
}

TEST_CASE("wechatpay faults: each fault's outcome, and the query tells what happened") {
  WECHATPAY_EMULATOR_OR_RETURN();
  WechatpayFixture f;
  const auto lost = wechatpay_charge("f1");
  f.emulator().set_fault("fail_before_commit", 1);
  CHECK(f.submit(lost).outcome == VendorOutcome::ambiguous);
  CHECK(f.query(lost).outcome == VendorOutcome::not_found);

  const auto kept = wechatpay_charge("f2");
  f.emulator().set_fault("commit_then_5xx", 1);
  CHECK(f.submit(kept).outcome == VendorOutcome::ambiguous);
  CHECK(f.query(kept).outcome == VendorOutcome::pending);

  const auto hung = wechatpay_charge("f3");
  f.emulator().set_fault("commit_then_hang", 1);
  const auto no_answer = f.submit(hung);
  CHECK(no_answer.outcome == VendorOutcome::ambiguous);
  CHECK(no_answer.http_status == 0);
  CHECK(f.query(hung).outcome == VendorOutcome::pending);

  const auto late = wechatpay_charge("f4");
  f.emulator().set_fault("latency", 1, 100);
  CHECK(f.submit(late).outcome == VendorOutcome::pending);
}

TEST_CASE("wechatpay: nothing listening → not_sent; an invalid out_trade_no is never sent") {
  WECHATPAY_EMULATOR_OR_RETURN();
  WechatpayFixture f({}, "native", [](payorch::config::Provider& p) { p.base_url = "http://127.0.0.1:1"; });
  CHECK(f.submit(wechatpay_charge("down")).outcome == VendorOutcome::not_sent);
  auto bad = wechatpay_charge("bad");
  bad.client_key = "has space";
  const auto refused = f.submit(bad);
  CHECK(refused.outcome == VendorOutcome::declined);
  CHECK(refused.decline_code == "invalid_out_trade_no");
}

TEST_CASE("wechatpay signatures: a request signed with another key is refused (auth_refused); answers signed "
          "for another platform serial or key are not believed (ambiguous)") {
  WECHATPAY_EMULATOR_OR_RETURN();
  {
    WechatpayFixture f({}, "native", [](payorch::config::Provider& p) {
      p.options.private_key = payorch::test::wechatpay_key("other_private.pem");
    });
    CHECK(f.submit(wechatpay_charge("forged")).outcome == VendorOutcome::auth_refused);
  }
  {
    WechatpayFixture f({}, "native", [](payorch::config::Provider& p) { p.options.platform_serial = "ANOTHER"; });
    const auto r = f.submit(wechatpay_charge("serial"));
    CHECK(r.outcome == VendorOutcome::ambiguous);
    CHECK(r.detail.find("Wechatpay-Serial") != std::string::npos);
  }
  {
    WechatpayFixture f({}, "native", [](payorch::config::Provider& p) {
      p.options.platform_public_key = payorch::test::wechatpay_key("merchant_public.pem");
    });
    const auto r = f.query(wechatpay_charge("key"));
    CHECK(r.outcome == VendorOutcome::ambiguous);  // the 404 is not believed either
    CHECK(r.detail.find("does not verify") != std::string::npos);
  }
}
