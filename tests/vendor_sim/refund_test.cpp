#include "vendor_sim/refund.h"

#include <doctest/doctest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "vendor_sim/signature.h"
#include "support/vendor_sim.h"

namespace {

using namespace payorch::vendor_sim;
using payorch::test::refund_body;

Charge charge(ChargeStatus status, std::int64_t amount = 1000, const std::string& source = "tok_ok") {
  Charge c;
  c.id = "ch_1";
  c.params = ChargeParams{"ck_1", amount, "EUR", "shop", source};
  c.status = status;
  return c;
}

}  // namespace

TEST_CASE("sim refund: a valid request parses") {
  std::string error;
  const auto p = parse_refund_request("rk_1", refund_body("rk_1", "ch_9", 250, "USD"), error);
  REQUIRE_MESSAGE(p, error);
  CHECK(p->reference == "rk_1");
  CHECK(p->charge == "ch_9");
  CHECK(p->amount_minor == 250);
  CHECK(p->currency == "USD");
}

TEST_CASE("sim refund: invalid requests are refused") {
  struct Case {
    std::string key;
    std::string body;
  };
  const Case cases[] = {
      {"", R"({"charge":"ch_1","amount_minor":1,"currency":"EUR","reference":""})"},
      {"k", R"({"charge":"ch_1","amount_minor":1,"currency":"EUR","reference":"other"})"},
      {"k", R"({"charge":"ch_1","amount_minor":1,"currency":"EUR"})"},
      {"k", R"({"amount_minor":1,"currency":"EUR","reference":"k"})"},
      {"k", R"({"charge":"","amount_minor":1,"currency":"EUR","reference":"k"})"},
      {"k", R"({"charge":7,"amount_minor":1,"currency":"EUR","reference":"k"})"},
      {"k", R"({"charge":"ch_1","amount_minor":0,"currency":"EUR","reference":"k"})"},
      {"k", R"({"charge":"ch_1","amount_minor":-5,"currency":"EUR","reference":"k"})"},
      {"k", R"({"charge":"ch_1","amount_minor":10.0,"currency":"EUR","reference":"k"})"},
      {"k", R"({"charge":"ch_1","amount_minor":"10","currency":"EUR","reference":"k"})"},
      {"k", R"({"charge":"ch_1","amount_minor":9007199254740992,"currency":"EUR","reference":"k"})"},
      {"k", R"({"charge":"ch_1","currency":"EUR","reference":"k"})"},
      {"k", R"({"charge":"ch_1","amount_minor":1,"currency":"eur","reference":"k"})"},
      {"k", R"({"charge":"ch_1","amount_minor":1,"reference":"k"})"},
      {"k", R"(["ch_1"])"},
      {"k", R"({"charge":)"},
      {"k y", R"({"charge":"ch_1","amount_minor":1,"currency":"EUR","reference":"k y"})"},
  };
  for (const Case& c : cases) {
    std::string error;
    CHECK_MESSAGE(!parse_refund_request(c.key, c.body, error), c.body);
    CHECK(!error.empty());
  }
  std::string error;
  CHECK_FALSE(parse_refund_request("k", refund_body("k", std::string(256, 'c')), error));
  CHECK(parse_refund_request("k", refund_body("k", std::string(255, 'c')), error));
}

TEST_CASE("sim refund: request_hash is the SHA-256 of the four fields' canonical form") {
  std::string error;
  const auto a = parse_refund_request("k", refund_body("k", "ch_1", 100), error);
  const auto b = parse_refund_request(
      "k", R"({"reference":"k","currency":"EUR","amount_minor":100,"charge":"ch_1","note":"x"})", error);
  REQUIRE(a);
  REQUIRE(b);
  CHECK(request_hash(*a) == request_hash(*b));
  CHECK(request_hash(*a) ==
        sha256_hex(R"({"amount_minor":100,"charge":"ch_1","currency":"EUR","reference":"k"})"));
  for (auto change : {+[](RefundParams& p) { p.amount_minor += 1; }, +[](RefundParams& p) { p.charge += "x"; },
                      +[](RefundParams& p) { p.currency = "USD"; }}) {
    RefundParams c = *a;
    change(c);
    CHECK(request_hash(c) != request_hash(*a));
  }
}

TEST_CASE("sim refund: the decision against the charge") {
  const Charge ok = charge(ChargeStatus::succeeded, 1000);
  CHECK(unrefunded_minor(ok, 300) == 700);
  CHECK(decide_refund(ok, 0, 1000).status == ChargeStatus::succeeded);
  CHECK_FALSE(decide_refund(ok, 0, 1000).decline_code);
  CHECK(decide_refund(ok, 300, 700).status == ChargeStatus::succeeded);  // exactly what is left
  CHECK(decide_refund(ok, 300, 701).status == ChargeStatus::declined);   // one over
  CHECK(decide_refund(ok, 300, 701).decline_code == "exceeds_charge");
  CHECK(decide_refund(ok, 1000, 1).decline_code == "exceeds_charge");
  for (ChargeStatus s : {ChargeStatus::declined, ChargeStatus::pending}) {
    const Outcome o = decide_refund(charge(s), 0, 1);
    CHECK(o.status == ChargeStatus::declined);
    CHECK(o.decline_code == "charge_not_refundable");
  }
  CHECK(decide_refund(charge(ChargeStatus::succeeded, 1000, "tok_pending"), 0, 10).status ==
        ChargeStatus::pending);
}

TEST_CASE("sim refund: the refund JSON shape and its event") {
  Refund r;
  r.id = "rf_1";
  r.params = RefundParams{"rk_1", "ch_1", 500, "EUR"};
  r.status = ChargeStatus::declined;
  r.decline_code = "exceeds_charge";
  const auto j = refund_json(r);
  CHECK(j.size() == 7);
  CHECK(j.at("id").as_string() == "rf_1");
  CHECK(j.at("reference").as_string() == "rk_1");
  CHECK(j.at("charge").as_string() == "ch_1");
  CHECK(j.at("status").as_string() == "declined");
  CHECK(j.at("amount_minor").as_int64() == 500);
  CHECK(j.at("currency").as_string() == "EUR");
  CHECK(j.at("decline_code").as_string() == "exceeds_charge");
  CHECK(refund_event_type(ChargeStatus::pending) == "refund.pending");
  const auto body = boost::json::parse(event_body("evt_1", "refund.declined", 1700000000, j)).as_object();
  CHECK(body.at("type").as_string() == "refund.declined");
  CHECK(body.at("data").as_object() == j);
}
