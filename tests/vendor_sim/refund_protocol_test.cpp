// Refunds in the sim protocol (docs/contract.md §8) against the real payorch-vendor-sim process.
#include <doctest/doctest.h>

#include <boost/json/value.hpp>

#include <future>
#include <vector>

#include "support/vendor_sim.h"

namespace {

using namespace payorch::test;
using namespace std::chrono_literals;

std::string error_type(const HttpResponse& r) {
  return std::string(r.json().at("error").at("type").as_string());
}

// A charge made for the test; its id.
std::string charged(const VendorSim& sim, const std::string& key, std::int64_t amount = 1000,
                    const std::string& source = "tok_ok") {
  const auto r = sim.post_charge(key, charge_body(key, source, amount));
  REQUIRE_MESSAGE(r.status == 200, r.describe());
  return std::string(r.json().at("id").as_string());
}

std::string status_of(const HttpResponse& r) { return std::string(r.json().at("status").as_string()); }

std::string decline_code_of(const HttpResponse& r) {
  const boost::json::value body = r.json();
  const auto& code = body.at("decline_code");
  return code.is_null() ? "" : std::string(code.as_string());
}

}  // namespace

TEST_CASE("sim refunds: success, replay, lookup, ledger") {
  VendorSim sim;
  const std::string ch = charged(sim, "ck_rf");
  const auto first = sim.post_refund("rk_ok", refund_body("rk_ok", ch, 400));
  REQUIRE_MESSAGE(first.status == 200, first.describe());
  CHECK(first.header("Idempotent-Replayed").empty());
  const auto refund = first.json().as_object();
  CHECK(std::string(refund.at("id").as_string()).starts_with("rf_"));
  CHECK(refund.at("reference").as_string() == "rk_ok");
  CHECK(refund.at("charge").as_string() == ch);
  CHECK(refund.at("status").as_string() == "succeeded");
  CHECK(refund.at("amount_minor").as_int64() == 400);
  CHECK(refund.at("currency").as_string() == "EUR");
  CHECK(refund.at("decline_code").is_null());
  CHECK(refund.size() == 7);

  const auto replay = sim.post_refund("rk_ok", refund_body("rk_ok", ch, 400));
  REQUIRE_MESSAGE(replay.status == 200, replay.describe());
  CHECK(replay.header("Idempotent-Replayed") == "true");
  CHECK(replay.json() == first.json());
  CHECK(sim.count_refunds("rk_ok") == 1);
  const auto rows = sim.refunds("rk_ok");
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].at("charge_id") == ch);
  CHECK(rows[0].at("status") == "succeeded");
  CHECK(rows[0].at("amount_minor") == "400");

  const auto by_ref = sim.get("/v1/refunds?reference=rk_ok");
  REQUIRE(by_ref.status == 200);
  REQUIRE(by_ref.json().at("data").as_array().size() == 1);
  CHECK(by_ref.json().at("data").at(0) == first.json());
  const auto none = sim.get("/v1/refunds?reference=rk_never");
  REQUIRE(none.status == 200);
  CHECK(none.json().at("data").as_array().empty());
  CHECK(sim.get("/v1/refunds?reference=ck_rf").json().at("data").as_array().empty());  // a charge's key
  const auto ledger = sim.control("GET", "/_sim/ledger");
  REQUIRE(ledger.json().at("refunds").as_array().size() == 1);
  CHECK(ledger.json().at("refunds").at(0).at("key_expires_at").is_int64());
  CHECK(sim.ledger().size() == 1);  // the charge

  // The refund and the charge survive kill -9 together.
  sim.restart();
  CHECK(sim.post_refund("rk_ok", refund_body("rk_ok", ch, 400)).json() == first.json());
}

TEST_CASE("sim refunds: same key, other body is 409 idempotency_mismatch") {
  VendorSim sim;
  const std::string ch = charged(sim, "ck_rmm");
  const std::string other = charged(sim, "ck_rmm2");
  REQUIRE(sim.post_refund("rk_mm", refund_body("rk_mm", ch, 100)).status == 200);
  for (const auto& body : {refund_body("rk_mm", ch, 101), refund_body("rk_mm", other, 100),
                           refund_body("rk_mm", ch, 100, "USD")}) {
    const auto r = sim.post_refund("rk_mm", body);
    CHECK(r.status == 409);
    CHECK(error_type(r) == "idempotency_mismatch");
  }
  CHECK(sim.count_refunds("rk_mm") == 1);
  CHECK(sim.refunds("rk_mm")[0].at("amount_minor") == "100");
}

TEST_CASE("sim refunds: invalid requests are 400 and change nothing") {
  VendorSim sim;
  const std::string ch = charged(sim, "ck_rinv");
  const auto no_key = sim.post_refund("", refund_body("rk_inv", ch));
  CHECK(no_key.status == 400);
  CHECK(error_type(no_key) == "invalid_request");
  for (const std::string& body :
       {refund_body("rk_other", ch), refund_body("rk_inv", ch, 0), std::string("not json"),
        std::string(R"({"charge":")") + ch + R"(","amount_minor":1.5,"currency":"EUR","reference":"rk_inv"})",
        std::string(R"({"amount_minor":10,"currency":"EUR","reference":"rk_inv"})"),
        refund_body("rk_inv", ch, 10, "eur")}) {
    const auto r = sim.post_refund("rk_inv", body);
    CHECK_MESSAGE(r.status == 400, body);
    CHECK(error_type(r) == "invalid_request");
  }
  // Another currency than the charge's: invalid, nothing stored.
  const auto currency = sim.post_refund("rk_inv", refund_body("rk_inv", ch, 10, "USD"));
  CHECK(currency.status == 400);
  CHECK(error_type(currency) == "invalid_request");
  CHECK(sim.count_refunds("rk_inv") == 0);
  // Nothing was done: the key is still free.
  const auto ok = sim.post_refund("rk_inv", refund_body("rk_inv", ch, 10));
  CHECK(ok.status == 200);
  CHECK(ok.header("Idempotent-Replayed").empty());
  // Authentication as for charges.
  CHECK(http_request(sim.port(), "POST", "/v1/refunds", {{"Idempotency-Key", "rk_auth"}},
                     refund_body("rk_auth", ch))
            .status == 401);
  CHECK(http_request(sim.port(), "GET", "/v1/refunds?reference=rk_inv").status == 401);
  CHECK(sim.count_refunds("rk_auth") == 0);
}

TEST_CASE("sim refunds: an unknown charge is 404 and stores nothing; a declined or pending one is not refundable") {
  VendorSim sim({"--pending-delay", "1h"});
  const auto unknown = sim.post_refund("rk_unk", refund_body("rk_unk", "ch_nowhere"));
  CHECK(unknown.status == 404);
  CHECK(error_type(unknown) == "not_found");
  CHECK(sim.count_refunds("rk_unk") == 0);
  // A missing charge is not a refusal of the refund: the key is still free.
  const std::string real = charged(sim, "ck_real");
  const auto later = sim.post_refund("rk_unk", refund_body("rk_unk", real, 10));
  CHECK(later.status == 200);
  CHECK(later.header("Idempotent-Replayed").empty());
  CHECK(status_of(later) == "succeeded");

  for (const char* source : {"tok_decline", "tok_pending"}) {
    CAPTURE(source);
    const std::string key = std::string("ck_nr_") + source;
    const std::string ch = charged(sim, key, 1000, source);
    const auto r = sim.post_refund("rk_" + key, refund_body("rk_" + key, ch, 10));
    REQUIRE_MESSAGE(r.status == 200, r.describe());
    CHECK(status_of(r) == "declined");
    CHECK(decline_code_of(r) == "charge_not_refundable");
    CHECK(sim.count_refunds("rk_" + key) == 1);
  }
}

TEST_CASE("sim refunds: exceeds_charge at its edges") {
  VendorSim sim;
  const std::string ch = charged(sim, "ck_edge", 1000);
  const auto part = sim.post_refund("rk_e1", refund_body("rk_e1", ch, 600));
  CHECK(status_of(part) == "succeeded");
  const auto over = sim.post_refund("rk_e2", refund_body("rk_e2", ch, 401));  // one over the 400 left
  REQUIRE(over.status == 200);
  CHECK(status_of(over) == "declined");
  CHECK(decline_code_of(over) == "exceeds_charge");
  // The declined refund freed nothing and took nothing: exactly the 400 left is accepted.
  const auto rest = sim.post_refund("rk_e3", refund_body("rk_e3", ch, 400));
  CHECK(status_of(rest) == "succeeded");
  const auto more = sim.post_refund("rk_e4", refund_body("rk_e4", ch, 1));
  CHECK(decline_code_of(more) == "exceeds_charge");
  // A replay of the declined one stays declined (its decision is stored).
  const auto replay = sim.post_refund("rk_e2", refund_body("rk_e2", ch, 401));
  CHECK(replay.header("Idempotent-Replayed") == "true");
  CHECK(decline_code_of(replay) == "exceeds_charge");

  const std::string whole = charged(sim, "ck_whole", 500);
  CHECK(status_of(sim.post_refund("rk_w1", refund_body("rk_w1", whole, 501))) == "declined");
  CHECK(status_of(sim.post_refund("rk_w2", refund_body("rk_w2", whole, 500))) == "succeeded");
}

TEST_CASE("sim refunds: pending refunds count against the charge, then settle") {
  VendorSim sim({"--pending-delay", "300ms"});
  const std::string ch = charged(sim, "ck_rp", 1000, "tok_pending");
  REQUIRE(eventually([&] {
    return status_of(sim.get("/v1/charges/" + ch)) == "succeeded";
  }, 3s));
  const auto pending = sim.post_refund("rk_p1", refund_body("rk_p1", ch, 700));
  REQUIRE(pending.status == 200);
  CHECK(status_of(pending) == "pending");
  CHECK(decline_code_of(sim.post_refund("rk_p2", refund_body("rk_p2", ch, 301))) == "exceeds_charge");
  CHECK(eventually(
      [&] {
        const auto r = sim.get("/v1/refunds?reference=rk_p1");
        return r.status == 200 && r.json().at("data").at(0).at("status").as_string() == "succeeded";
      },
      3s));
  const auto replay = sim.post_refund("rk_p1", refund_body("rk_p1", ch, 700));
  CHECK(status_of(replay) == "succeeded");  // the ledger as it is now
  CHECK(status_of(sim.post_refund("rk_p3", refund_body("rk_p3", ch, 300))) == "pending");
}

TEST_CASE("sim refunds: concurrent refunds over separate connections never exceed the charge") {
  VendorSim sim;
  const std::string ch = charged(sim, "ck_conc", 1000);
  constexpr int n = 12;
  std::vector<std::future<HttpResponse>> answers;
  for (int i = 0; i < n; ++i) {
    const std::string key = "rk_conc_" + std::to_string(i);
    answers.push_back(std::async(std::launch::async, [&sim, key, ch] {
      return sim.post_refund(key, refund_body(key, ch, 150));
    }));
  }
  int succeeded = 0;
  for (auto& a : answers) {
    const HttpResponse r = a.get();
    REQUIRE_MESSAGE(r.status == 200, r.describe());
    if (status_of(r) == "succeeded") ++succeeded;
    else CHECK(decline_code_of(r) == "exceeds_charge");
  }
  CHECK(succeeded == 6);  // 6 × 150 = 900; a seventh would make 1050
  std::int64_t refunded = 0;
  const auto rows = sim.refunds_of_charge(ch);
  CHECK(rows.size() == n);
  for (const auto& row : rows)
    if (row.at("status") == "succeeded" || row.at("status") == "pending")
      refunded += std::stoll(*row.at("amount_minor"));
  CHECK(refunded == 900);
}

TEST_CASE("sim refunds: lookup can be disabled like the charges'") {
  VendorSim sim({"--no-lookup"});
  const std::string ch = charged(sim, "ck_rlk");
  REQUIRE(sim.post_refund("rk_lk", refund_body("rk_lk", ch)).status == 200);
  const auto r = sim.get("/v1/refunds?reference=rk_lk");
  CHECK(r.status == 404);
  CHECK(error_type(r) == "not_supported");
  sim.set_config({{"lookup_enabled", true}});
  CHECK(sim.get("/v1/refunds?reference=rk_lk").json().at("data").as_array().size() == 1);
  CHECK(sim.get("/v1/refunds?reference=").status == 400);
  CHECK(http_request(sim.port(), "PUT", "/v1/refunds",
                     {{"Authorization", std::string("Bearer ") + vendor_sim_api_key}})
            .status == 405);
}
