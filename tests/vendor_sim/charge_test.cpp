#include "vendor_sim/charge.h"

#include <doctest/doctest.h>

#include <boost/json/parse.hpp>

#include "core/digest.h"
#include "core/intent.h"
#include "vendor_sim/signature.h"
#include "support/vendor_sim.h"

namespace {

using namespace payorch::vendor_sim;
using payorch::test::charge_body;

}  // namespace

TEST_CASE("sim charge: a valid request parses") {
  std::string error;
  const auto p = parse_charge_request("ck_1", charge_body("ck_1", "tok_ok", 1234, "USD", "shop"), error);
  REQUIRE_MESSAGE(p, error);
  CHECK(p->reference == "ck_1");
  CHECK(p->amount_minor == 1234);
  CHECK(p->currency == "USD");
  CHECK(p->payee == "shop");
  CHECK(p->source == "tok_ok");
}

TEST_CASE("sim charge: every payee and source payorch's intake accepts, the sim takes, and no longer one") {
  for (std::size_t n : {payorch::max_payee_source_bytes, payorch::max_payee_source_bytes + 1}) {
    CAPTURE(n);
    const std::string text(n, 'p');
    const std::string intent = R"({"operation_id":"op-1","amount_minor":100,"currency":"EUR","payee":")" +
                               text + R"(","source":"tok_ok)" + std::string(n - 6, 'k') + R"("})";
    const bool intake_accepts = std::holds_alternative<payorch::Intent>(payorch::parse_intent(intent, std::nullopt));
    std::string error;
    const bool sim_takes =
        parse_charge_request("ck_1", charge_body("ck_1", "tok_ok" + std::string(n - 6, 'k'), 100, "EUR", text), error)
            .has_value();
    CHECK(intake_accepts == (n <= payorch::max_payee_source_bytes));
    CHECK(sim_takes == intake_accepts);
  }
}

TEST_CASE("sim charge: invalid requests are refused") {
  struct Case {
    std::string key;
    std::string body;
  };
  const Case cases[] = {
      {"", R"({"amount_minor":1,"currency":"EUR","payee":"p","source":"tok_ok","reference":""})"},
      {"k", R"({"amount_minor":1,"currency":"EUR","payee":"p","source":"tok_ok","reference":"other"})"},
      {"k", R"({"amount_minor":1.5,"currency":"EUR","payee":"p","source":"tok_ok","reference":"k"})"},
      {"k", R"({"amount_minor":100.0,"currency":"EUR","payee":"p","source":"tok_ok","reference":"k"})"},
      {"k", R"({"amount_minor":"100","currency":"EUR","payee":"p","source":"tok_ok","reference":"k"})"},
      {"k", R"({"amount_minor":0,"currency":"EUR","payee":"p","source":"tok_ok","reference":"k"})"},
      {"k", R"({"amount_minor":9007199254740992,"currency":"EUR","payee":"p","source":"tok_ok","reference":"k"})"},
      {"k", R"({"currency":"EUR","payee":"p","source":"tok_ok","reference":"k"})"},
      {"k", R"({"amount_minor":1,"currency":"eur","payee":"p","source":"tok_ok","reference":"k"})"},
      {"k", R"({"amount_minor":1,"currency":"EUR","source":"tok_ok","reference":"k"})"},
      {"k", R"({"amount_minor":1,"currency":"EUR","payee":"p","reference":"k"})"},
      {"k", R"({"amount_minor":1,"currency":"EUR","payee":"p","source":"","reference":"k"})"},
      {"k", R"({"amount_minor":1,"currency":"EUR","payee":"p","source":"tok_ok"})"},
      {"k", R"([1,2])"},
      {"k", R"({"amount_minor":1,)"},
      {"k y", R"({"amount_minor":1,"currency":"EUR","payee":"p","source":"tok_ok","reference":"k y"})"},
  };
  for (const Case& c : cases) {
    std::string error;
    CHECK_MESSAGE(!parse_charge_request(c.key, c.body, error), c.body);
    CHECK(!error.empty());
  }
}

TEST_CASE("sim charge: request_hash covers exactly the five fields") {
  std::string error;
  const auto a = parse_charge_request("k", charge_body("k"), error);
  const auto b = parse_charge_request(
      "k", R"({"reference":"k","source":"tok_ok","payee":"merchant-1","currency":"EUR","amount_minor":1000,"extra":1})",
      error);
  REQUIRE(a);
  REQUIRE(b);
  CHECK(request_hash(*a) == request_hash(*b));  // member order and extra members do not matter
  auto c = *a;
  c.amount_minor = 1001;
  CHECK(request_hash(*a) != request_hash(c));
}

TEST_CASE("sim charge: request_hash is the SHA-256 of the five fields' RFC 8785 form") {
  // The sim writes the canonical form itself; payorch's JCS serialiser is the reference. The
  // strings cover every escape JCS knows, the controls it writes as \u00xx, DEL, and UTF-8.
  const std::string texts[] = {"merchant-1", "a\"b\\c", std::string("\b\f\n\r\t\x01\x1f\x7f", 8),
                               "/slash", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x92\xb3", "x"};
  for (const std::string& text : texts) {
    for (std::int64_t amount : {std::int64_t{1}, std::int64_t{1000}, (std::int64_t{1} << 53) - 1}) {
      CAPTURE(text);
      const ChargeParams p{"ck_" + std::to_string(amount), amount, "EUR", text, "tok_" + text};
      const boost::json::object fields{{"source", p.source}, {"reference", p.reference}, {"payee", p.payee},
                                       {"currency", p.currency}, {"amount_minor", p.amount_minor}};
      CHECK(request_hash(p) == payorch::sha256_hex(payorch::jcs_canonicalize(fields)));
    }
  }
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_CASE("sim charge: sources decide the outcome") {
  CHECK(decide_outcome("tok_ok").status == ChargeStatus::succeeded);
  CHECK_FALSE(decide_outcome("tok_ok").decline_code);
  CHECK(decide_outcome("tok_decline").status == ChargeStatus::declined);
  CHECK(decide_outcome("tok_decline").decline_code == "insufficient_funds");
  CHECK(decide_outcome("tok_pending").status == ChargeStatus::pending);
  CHECK(decide_outcome("tok_whatever").status == ChargeStatus::declined);
  CHECK(decide_outcome("tok_whatever").decline_code == "invalid_source");
}

TEST_CASE("sim charge: the charge and callback JSON shapes") {
  Charge c;
  c.id = "ch_1";
  c.params = ChargeParams{"ck_1", 500, "EUR", "shop", "tok_decline"};
  c.status = ChargeStatus::declined;
  c.decline_code = "insufficient_funds";
  const auto j = charge_json(c);
  CHECK(j.size() == 7);
  CHECK(j.at("decline_code").as_string() == "insufficient_funds");
  const auto body = boost::json::parse(callback_body("evt_1", c.status, 1700000000, c)).as_object();
  CHECK(body.at("id").as_string() == "evt_1");
  CHECK(body.at("type").as_string() == "charge.declined");
  CHECK(body.at("created").as_int64() == 1700000000);
  CHECK(body.at("data").as_object() == j);
}

TEST_CASE("sim signature: HMAC-SHA256 (RFC 4231 case 2) and the header format") {
  CHECK(hmac_sha256_hex("Jefe", "what do ya want for nothing?") ==
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  CHECK(sign_callback("Jefe", 1700000000, "{}") ==
        "t=1700000000,v1=" + hmac_sha256_hex("Jefe", "1700000000.{}"));
}
