// providers/alipay against the Alipay emulator: submit (alipay.trade.pay and precreate), query,
// the close fence, signatures of requests and answers, and the faults; the rows of
// providers/alipay/classify.h end to end through the HTTP client.
#include <doctest/doctest.h>

#include <string>

#include "providers/alipay/classify.h"
#include "providers/alipay_fixture.h"

namespace {

using payorch::VendorOutcome;
using payorch::test::alipay_charge;
using payorch::test::AlipayFixture;
using payorch::test::AlipayFixtureOptions;

}  // namespace

TEST_CASE("alipay pay: a buyer who pays at once is succeeded; the paid order cannot be closed") {
  PAYORCH_NEED_ALIPAY_EMULATOR();
  AlipayFixture f;
  const auto req = alipay_charge();
  const auto paid = f.submit(req);
  CHECK_MESSAGE(paid.outcome == VendorOutcome::succeeded, paid.detail);
  REQUIRE(paid.vendor_reference.has_value());
  CHECK(paid.vendor_reference->size() == 28);
  CHECK(paid.amount_minor == 1234);
  CHECK(paid.currency == "CNY");
  const auto asked = f.query(req);
  CHECK(asked.outcome == VendorOutcome::succeeded);
  CHECK(asked.vendor_reference == paid.vendor_reference);
  const auto fenced = f.fence(req);
  CHECK(fenced.outcome == VendorOutcome::declined);
  CHECK(fenced.decline_code == "ACQ.TRADE_STATUS_ERROR");
  CHECK(fenced.detail.find("paid") != std::string::npos);
  // The same order again: Alipay says it is paid, payorch asks rather than guesses.
  CHECK(f.submit(req).outcome == VendorOutcome::ambiguous);
  auto other = req;
  other.amount_minor = 100;
  CHECK(f.submit(other).outcome == VendorOutcome::ambiguous);  // ACQ.CONTEXT_INCONSISTENT
}

TEST_CASE("alipay pay: WAIT_BUYER_PAY (10003) is pending until the buyer pays") {
  PAYORCH_NEED_ALIPAY_EMULATOR();
  AlipayFixture f;
  const auto req = alipay_charge("ck_later", "28763443825664392");
  CHECK(f.submit(req).outcome == VendorOutcome::pending);
  CHECK(f.query(req).outcome == VendorOutcome::pending);
  CHECK(f.emulator().pay(req.client_key) == 200);
  const auto asked = f.query(req);
  CHECK(asked.outcome == VendorOutcome::succeeded);
  CHECK(asked.amount_minor == 1234);
}

TEST_CASE("alipay fence: alipay.trade.close closes an unpaid order, after which the buyer cannot pay") {
  PAYORCH_NEED_ALIPAY_EMULATOR();
  AlipayFixture f;
  const auto req = alipay_charge("ck_fenced", "28763443825664392");
  CHECK(f.submit(req).outcome == VendorOutcome::pending);
  const auto fenced = f.fence(req);
  CHECK_MESSAGE(fenced.outcome == VendorOutcome::succeeded, fenced.detail);
  CHECK(f.emulator().pay(req.client_key) == 409);
  const auto asked = f.query(req);
  CHECK(asked.outcome == VendorOutcome::declined);
  CHECK(asked.decline_code == "TRADE_CLOSED");
  // Closing again: refused (ACQ.TRADE_STATUS_ERROR), and the query says already closed.
  const auto again = f.fence(req);
  CHECK_MESSAGE(again.outcome == VendorOutcome::succeeded, again.detail);
  CHECK(again.detail.find("already closed") != std::string::npos);
  // No such order at all.
  CHECK(f.fence(alipay_charge("ck_nothing")).outcome == VendorOutcome::not_found);
}

TEST_CASE("alipay fence: a close the vendor refuses as too early is ambiguous") {
  PAYORCH_NEED_ALIPAY_EMULATOR();
  AlipayFixture f({.emulator = {.min_close_delay_ms = 60000}});
  const auto req = alipay_charge("ck_early", "28763443825664392");
  CHECK(f.submit(req).outcome == VendorOutcome::pending);
  CHECK(f.fence(req).outcome == VendorOutcome::ambiguous);  // ACQ.SYSTEM_ERROR
  CHECK(f.query(req).outcome == VendorOutcome::pending);
}

TEST_CASE("alipay pay: documented refusals are declined with the sub_code; unknown orders not_found") {
  PAYORCH_NEED_ALIPAY_EMULATOR();
  AlipayFixture f;
  const auto poor = f.submit(alipay_charge("ck_poor", "28763443825664393"));
  CHECK(poor.outcome == VendorOutcome::declined);
  CHECK(poor.decline_code == "ACQ.BUYER_BALANCE_NOT_ENOUGH");
  const auto bad = f.submit(alipay_charge("ck_bad_code", "1234"));
  CHECK(bad.decline_code == "ACQ.PAYMENT_AUTH_CODE_INVALID");
  CHECK(f.query(alipay_charge("ck_poor")).outcome == VendorOutcome::not_found);
  auto euros = alipay_charge("ck_euros");
  euros.currency = "EUR";
  const auto refused = f.submit(euros);
  CHECK(refused.outcome == VendorOutcome::declined);
  CHECK(refused.decline_code == "currency_not_supported");
  CHECK(f.emulator().ledger().at("trades").as_array().empty());
}

TEST_CASE("alipay precreate: pending; the order exists for query and close only once scanned") {
  PAYORCH_NEED_ALIPAY_EMULATOR();
  AlipayFixture f({.product = "precreate"});
  const auto req = alipay_charge("ck_qr");
  CHECK(f.submit(req).outcome == VendorOutcome::pending);
  // The QR code and its order expire: two hours unless the provider says otherwise.
  const boost::json::value ledger = f.emulator().ledger();
  const auto& trade = ledger.at("trades").as_array().at(0);
  CHECK(trade.at("qr_code_timeout_express").as_string() == "120m");
  CHECK(trade.at("timeout_express").as_string() == "120m");
  CHECK(f.query(req).outcome == VendorOutcome::not_found);
  CHECK(f.fence(req).outcome == VendorOutcome::not_found);
  CHECK(f.emulator().scan(req.client_key) == 200);
  CHECK(f.query(req).outcome == VendorOutcome::pending);
  CHECK(f.emulator().pay(req.client_key) == 200);
  CHECK(f.query(req).outcome == VendorOutcome::succeeded);
  CHECK(f.fence(req).outcome == VendorOutcome::declined);
}

TEST_CASE("alipay signatures: a request signed with another key is auth_refused; an answer that "
          "does not verify is ambiguous") {
  PAYORCH_NEED_ALIPAY_EMULATOR();
  {
    AlipayFixture f({.app_private_key = "alipay_private.pem"});
    const auto r = f.submit(alipay_charge());
    CHECK_MESSAGE(r.outcome == VendorOutcome::auth_refused, r.detail);
    CHECK(f.emulator().ledger().at("trades").as_array().empty());
  }
  {
    // The right request, checked with a key that is not Alipay's: the payment happened, but
    // the answer proves nothing.
    AlipayFixture f({.alipay_public_key = "app_public.pem"});
    const auto r = f.submit(alipay_charge());
    CHECK(r.outcome == VendorOutcome::ambiguous);
    CHECK(r.detail.find("signature") != std::string::npos);
    CHECK(f.emulator().ledger().at("trades").as_array().size() == 1);
  }
}

TEST_CASE("alipay faults: each leaves the outcome to the query") {
  PAYORCH_NEED_ALIPAY_EMULATOR();
  AlipayFixture f;
  f.emulator().set_fault("fail_before_commit", 1, 0, "trade\\.pay$");
  const auto lost = alipay_charge("ck_lost");
  CHECK(f.submit(lost).outcome == VendorOutcome::ambiguous);
  CHECK(f.query(lost).outcome == VendorOutcome::not_found);

  f.emulator().set_fault("commit_then_5xx", 1, 0, "trade\\.pay$");
  const auto five = alipay_charge("ck_5xx");
  CHECK(f.submit(five).outcome == VendorOutcome::ambiguous);
  CHECK(f.query(five).outcome == VendorOutcome::succeeded);

  f.emulator().set_fault("commit_then_hang", 1, 0, "trade\\.pay$");
  const auto hung = alipay_charge("ck_hang");
  CHECK(f.submit(hung).outcome == VendorOutcome::ambiguous);
  CHECK(f.query(hung).outcome == VendorOutcome::succeeded);

  f.emulator().set_fault("latency", 1, 200, "trade\\.pay$");
  CHECK(f.submit(alipay_charge("ck_slow")).outcome == VendorOutcome::succeeded);

  f.emulator().set_fault("delayed_commit", 1, 200, "trade\\.query$");
  CHECK(f.query(alipay_charge("ck_slow")).outcome == VendorOutcome::succeeded);
}

TEST_CASE("alipay: no vendor listening is not_sent") {
  PAYORCH_NEED_ALIPAY_EMULATOR();
  AlipayFixture f({.no_vendor = true});
  CHECK(f.submit(alipay_charge()).outcome == VendorOutcome::not_sent);
}

TEST_CASE("alipay fence: a refused close followed by a query that proves neither paid nor closed is ambiguous") {
  using payorch::providers::VendorResult;
  VendorResult closed{VendorOutcome::declined, {}, "ACQ.TRADE_STATUS_ERROR", {}, {}, 200, "close refused"};
  const VendorResult pending{VendorOutcome::pending, {}, {}, {}, {}, 200, "WAIT_BUYER_PAY"};
  const VendorResult lost{VendorOutcome::ambiguous, {}, {}, {}, {}, 0, "no answer"};
  CHECK(payorch::providers::alipay::fence_after_refusal(closed, pending).outcome == VendorOutcome::ambiguous);
  const auto r = payorch::providers::alipay::fence_after_refusal(closed, lost);
  CHECK(r.outcome == VendorOutcome::ambiguous);
  CHECK(r.detail == "close refused; then alipay.trade.query: no answer");
}
