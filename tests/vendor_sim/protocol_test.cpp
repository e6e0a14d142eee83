// The sim protocol (docs/contract.md §5) against the real payorch-vendor-sim process.
#include <doctest/doctest.h>

#include <boost/json/value.hpp>

#include "support/vendor_sim.h"

namespace {

using namespace payorch::test;
using namespace std::chrono_literals;

std::string error_type(const HttpResponse& r) {
  const auto v = r.json();
  return std::string(v.at("error").at("type").as_string());
}

}  // namespace

TEST_CASE("sim process: happy path, replay header, lookups") {
  VendorSim sim;
  const auto first = sim.post_charge("ck_happy", charge_body("ck_happy"));
  REQUIRE_MESSAGE(first.status == 200, first.describe());
  CHECK(first.header("Idempotent-Replayed").empty());
  const auto charge = first.json().as_object();
  const std::string id(charge.at("id").as_string());
  CHECK(id.starts_with("ch_"));
  CHECK(charge.at("reference").as_string() == "ck_happy");
  CHECK(charge.at("status").as_string() == "succeeded");
  CHECK(charge.at("amount_minor").as_int64() == 1000);
  CHECK(charge.at("currency").as_string() == "EUR");
  CHECK(charge.at("payee").as_string() == "merchant-1");
  CHECK(charge.at("decline_code").is_null());
  CHECK(charge.size() == 7);

  const auto replay = sim.post_charge("ck_happy", charge_body("ck_happy"));
  REQUIRE_MESSAGE(replay.status == 200, replay.describe());
  CHECK(replay.header("Idempotent-Replayed") == "true");
  CHECK(replay.json() == first.json());
  CHECK(sim.count_charges("ck_happy") == 1);

  const auto by_ref = sim.get("/v1/charges?reference=ck_happy");
  REQUIRE(by_ref.status == 200);
  REQUIRE(by_ref.json().at("data").as_array().size() == 1);
  CHECK(by_ref.json().at("data").at(0) == first.json());
  const auto none = sim.get("/v1/charges?reference=ck_never");
  REQUIRE(none.status == 200);
  CHECK(none.json().at("data").as_array().empty());
  const auto by_id = sim.get("/v1/charges/" + id);
  REQUIRE(by_id.status == 200);
  CHECK(by_id.json() == first.json());
  CHECK(sim.get("/v1/charges/ch_missing").status == 404);
}

TEST_CASE("sim process: declines, unknown sources, pending that settles") {
  VendorSim sim({"--pending-delay", "300ms"});
  const auto declined = sim.post_charge("ck_dec", charge_body("ck_dec", "tok_decline"));
  REQUIRE(declined.status == 200);
  CHECK(declined.json().at("status").as_string() == "declined");
  CHECK(declined.json().at("decline_code").as_string() == "insufficient_funds");
  const auto unknown = sim.post_charge("ck_unk", charge_body("ck_unk", "tok_mystery"));
  REQUIRE(unknown.status == 200);
  CHECK(unknown.json().at("decline_code").as_string() == "invalid_source");

  const auto pending = sim.post_charge("ck_pen", charge_body("ck_pen", "tok_pending"));
  REQUIRE(pending.status == 200);
  CHECK(pending.json().at("status").as_string() == "pending");
  CHECK(eventually(
      [&] {
        const auto r = sim.get("/v1/charges?reference=ck_pen");
        return r.status == 200 && r.json().at("data").at(0).at("status").as_string() == "succeeded";
      },
      3s));
  const auto replay = sim.post_charge("ck_pen", charge_body("ck_pen", "tok_pending"));
  CHECK(replay.json().at("status").as_string() == "succeeded");  // the ledger as it is now
}

TEST_CASE("sim process: authentication") {
  VendorSim sim;
  for (const std::string auth : {"", "Bearer wrong", "Bearer sim-key-12345", "sim-key-1234"}) {
    Headers h{{"Idempotency-Key", "ck_auth"}};
    if (!auth.empty()) h.emplace_back("Authorization", auth);
    const auto r = http_request(sim.port(), "POST", "/v1/charges", h, charge_body("ck_auth"));
    CHECK(r.status == 401);
    CHECK(error_type(r) == "unauthorized");
  }
  CHECK(http_request(sim.port(), "GET", "/v1/charges?reference=ck_auth").status == 401);
  CHECK(sim.count_charges("ck_auth") == 0);
}

TEST_CASE("sim process: invalid requests are 400 and change nothing") {
  VendorSim sim;
  const auto no_key = sim.post_charge("", charge_body("ck_inv"));
  CHECK(no_key.status == 400);
  CHECK(error_type(no_key) == "invalid_request");
  CHECK(sim.post_charge("ck_inv", charge_body("ck_other")).status == 400);
  CHECK(sim.post_charge("ck_inv", R"({"amount_minor":10.5,"currency":"EUR","payee":"p","source":"tok_ok","reference":"ck_inv"})").status == 400);
  CHECK(sim.post_charge("ck_inv", R"({"currency":"EUR","payee":"p","source":"tok_ok","reference":"ck_inv"})").status == 400);
  CHECK(sim.post_charge("ck_inv", "not json").status == 400);
  CHECK(sim.count_charges("ck_inv") == 0);
  CHECK(sim.count_charges("ck_other") == 0);
  // Nothing was done: the key is still free.
  const auto ok = sim.post_charge("ck_inv", charge_body("ck_inv"));
  CHECK(ok.status == 200);
  CHECK(ok.header("Idempotent-Replayed").empty());
}

TEST_CASE("sim process: same key, other body is 409 idempotency_mismatch") {
  VendorSim sim;
  REQUIRE(sim.post_charge("ck_mm", charge_body("ck_mm")).status == 200);
  for (const auto& body : {charge_body("ck_mm", "tok_ok", 1001), charge_body("ck_mm", "tok_decline"),
                           charge_body("ck_mm", "tok_ok", 1000, "USD"),
                           charge_body("ck_mm", "tok_ok", 1000, "EUR", "someone-else")}) {
    const auto r = sim.post_charge("ck_mm", body);
    CHECK(r.status == 409);
    CHECK(error_type(r) == "idempotency_mismatch");
  }
  CHECK(sim.count_charges("ck_mm") == 1);
  CHECK(sim.get("/v1/charges?reference=ck_mm").json().at("data").at(0).at("amount_minor").as_int64() ==
        1000);
}

TEST_CASE("sim process: lookup can be disabled (a receipt-only vendor)") {
  VendorSim sim({"--no-lookup"});
  const auto created = sim.post_charge("ck_lk", charge_body("ck_lk"));
  REQUIRE(created.status == 200);
  const auto r = sim.get("/v1/charges?reference=ck_lk");
  CHECK(r.status == 404);
  CHECK(error_type(r) == "not_supported");
  // By id still works: only an answer gives the id.
  CHECK(sim.get("/v1/charges/" + std::string(created.json().at("id").as_string())).status == 200);
  REQUIRE(sim.control("POST", "/_sim/config", R"({"lookup_enabled":true})").status == 200);
  CHECK(sim.get("/v1/charges?reference=ck_lk").status == 200);
  REQUIRE(sim.control("POST", "/_sim/config", R"({"lookup_enabled":false})").status == 200);
  CHECK(sim.get("/v1/charges?reference=ck_lk").status == 404);
}

TEST_CASE("sim process: after key retention (sim clock moved) the same key charges again") {
  VendorSim sim({"--key-retention", "1h"});
  const auto first = sim.post_charge("ck_exp", charge_body("ck_exp"));
  REQUIRE(first.status == 200);
  REQUIRE(sim.control("POST", "/_sim/config", R"({"clock_offset_ms":3599000})").status == 200);
  const auto still = sim.post_charge("ck_exp", charge_body("ck_exp"));
  CHECK(still.header("Idempotent-Replayed") == "true");
  REQUIRE(sim.control("POST", "/_sim/config", R"({"clock_offset_ms":3600000})").status == 200);
  const auto second = sim.post_charge("ck_exp", charge_body("ck_exp"));
  REQUIRE(second.status == 200);
  CHECK(second.header("Idempotent-Replayed").empty());
  CHECK(second.json().at("id") != first.json().at("id"));
  CHECK(sim.count_charges("ck_exp") == 2);  // the late retry double-charged
  CHECK(sim.get("/v1/charges?reference=ck_exp").json().at("data").as_array().size() == 2);
}

TEST_CASE("sim process: the ledger survives kill -9") {
  VendorSim sim;
  const auto first = sim.post_charge("ck_k9", charge_body("ck_k9"));
  REQUIRE(first.status == 200);
  sim.restart();
  const auto replay = sim.post_charge("ck_k9", charge_body("ck_k9"));
  CHECK(replay.header("Idempotent-Replayed") == "true");
  CHECK(replay.json() == first.json());
  CHECK(sim.count_charges("ck_k9") == 1);
}

TEST_CASE("sim process: control API validation and SIGTERM") {
  VendorSim sim;
  CHECK(sim.control("POST", "/_sim/faults", R"({"mode":"nope"})").status == 400);
  CHECK(sim.control("POST", "/_sim/config", R"({"lookup_enabled":"no"})").status == 400);
  CHECK(sim.control("POST", "/_sim/config", R"({"typo":true})").status == 400);
  CHECK(sim.control("GET", "/_sim/config").json().at("lookup_enabled").as_bool());  // unchanged
  CHECK(sim.control("GET", "/_sim/nothing").status == 404);
  const auto ledger = sim.control("GET", "/_sim/ledger");
  REQUIRE(ledger.status == 200);
  CHECK(ledger.json().at("charges").as_array().empty());
  const ExitStatus exit = sim.terminate();
  CHECK_MESSAGE(exit.exited, exit.describe());
  CHECK(exit.code == 0);
}

TEST_CASE("sim process: bad flags print the usage and exit 2") {
  const auto r = run_sim_command({"--listen", "nowhere"});
  CHECK(r.status.exited);
  CHECK(r.status.code == 2);
  CHECK(r.output.find("--listen") != std::string::npos);
  CHECK(r.output.find("usage: payorch-vendor-sim") != std::string::npos);
  const auto help = run_sim_command({"--help"});
  CHECK(help.status.code == 0);
  CHECK(help.output.find("--callback-url") != std::string::npos);
}
