// Each fault mode against the real payorch-vendor-sim, checked against its ledger.
#include <doctest/doctest.h>

#include <future>

#include "support/vendor_sim.h"

namespace {

using namespace payorch::test;
using namespace std::chrono_literals;

void queue_fault(const VendorSim& sim, const std::string& json) {
  const auto r = sim.control("POST", "/_sim/faults", json);
  REQUIRE_MESSAGE(r.status == 200, r.describe());
}

// True once the queued faults have all been taken by requests.
bool faults_consumed(const VendorSim& sim) {
  return eventually([&] {
    const auto r = sim.control("GET", "/_sim/faults");
    return r.status == 200 && r.json().at("faults").as_array().empty();
  });
}

std::string error_type(const HttpResponse& r) {
  return std::string(r.json().at("error").at("type").as_string());
}

}  // namespace

TEST_CASE("sim faults: fail_before_commit answers 500 and stores nothing") {
  VendorSim sim;
  queue_fault(sim, R"({"mode":"fail_before_commit"})");
  const auto r = sim.post_charge("ck_fbc", charge_body("ck_fbc"));
  CHECK(r.status == 500);
  CHECK(sim.count_charges("ck_fbc") == 0);
  CHECK(sim.get("/v1/charges?reference=ck_fbc").json().at("data").as_array().empty());
  const auto retry = sim.post_charge("ck_fbc", charge_body("ck_fbc"));
  CHECK(retry.status == 200);
  CHECK(retry.header("Idempotent-Replayed").empty());  // executed now, for the first time
  CHECK(sim.count_charges("ck_fbc") == 1);
}

TEST_CASE("sim faults: commit_then_5xx stores the charge and answers 502") {
  VendorSim sim;
  queue_fault(sim, R"({"mode":"commit_then_5xx"})");
  CHECK(sim.post_charge("ck_c5", charge_body("ck_c5")).status == 502);
  CHECK(sim.count_charges("ck_c5") == 1);
  const auto found = sim.get("/v1/charges?reference=ck_c5");
  CHECK(found.json().at("data").at(0).at("status").as_string() == "succeeded");
  const auto retry = sim.post_charge("ck_c5", charge_body("ck_c5"));
  CHECK(retry.status == 200);
  CHECK(retry.header("Idempotent-Replayed") == "true");
  CHECK(sim.count_charges("ck_c5") == 1);
}

TEST_CASE("sim faults: commit_then_hang stores the charge and closes without an answer") {
  VendorSim sim;
  queue_fault(sim, R"({"mode":"commit_then_hang","delay_ms":300})");
  const auto started = std::chrono::steady_clock::now();
  const auto r = sim.post_charge("ck_hang", charge_body("ck_hang"), 5s);
  const auto waited = std::chrono::steady_clock::now() - started;
  CHECK_MESSAGE(r.status == 0, r.describe());  // no answer at all
  CHECK(waited >= 250ms);
  CHECK(waited < 4s);  // closed by the sim, not by our timeout
  CHECK(sim.count_charges("ck_hang") == 1);
  CHECK(sim.post_charge("ck_hang", charge_body("ck_hang")).header("Idempotent-Replayed") == "true");
}

TEST_CASE("sim faults: a hang outlasting the client's timeout") {
  VendorSim sim;
  queue_fault(sim, R"({"mode":"commit_then_hang","delay_ms":5000})");
  const auto r = sim.post_charge("ck_hang2", charge_body("ck_hang2"), 300ms);
  CHECK(r.status == 0);
  CHECK(sim.count_charges("ck_hang2") == 1);
}

TEST_CASE("sim faults: delayed_commit answers 504 at once and commits later") {
  VendorSim sim;
  queue_fault(sim, R"({"mode":"delayed_commit","delay_ms":700})");
  const auto r = sim.post_charge("ck_dc", charge_body("ck_dc"));
  CHECK(r.status == 504);
  // An early lookup says "not found": the vendor has not committed yet.
  CHECK(sim.get("/v1/charges?reference=ck_dc").json().at("data").as_array().empty());
  CHECK(sim.count_charges("ck_dc") == 0);
  // The first request is still executing.
  const auto during = sim.post_charge("ck_dc", charge_body("ck_dc"));
  CHECK(during.status == 409);
  CHECK(error_type(during) == "in_progress");
  CHECK(eventually([&] { return sim.count_charges("ck_dc") == 1; }, 3s));
  CHECK(sim.get("/v1/charges?reference=ck_dc").json().at("data").as_array().size() == 1);
  CHECK(sim.post_charge("ck_dc", charge_body("ck_dc")).header("Idempotent-Replayed") == "true");
}

TEST_CASE("sim faults: latency holds the key executing; a concurrent same key gets in_progress") {
  VendorSim sim;
  queue_fault(sim, R"({"mode":"latency","delay_ms":800})");
  auto slow = std::async(std::launch::async,
                         [&] { return sim.post_charge("ck_lat", charge_body("ck_lat")); });
  REQUIRE(faults_consumed(sim));  // the slow request holds the key now
  const auto concurrent = sim.post_charge("ck_lat", charge_body("ck_lat"));
  CHECK(concurrent.status == 409);
  CHECK(error_type(concurrent) == "in_progress");
  // Another key is not held up.
  CHECK(sim.post_charge("ck_lat_other", charge_body("ck_lat_other")).status == 200);
  const auto first = slow.get();
  CHECK(first.status == 200);
  CHECK(first.header("Idempotent-Replayed").empty());
  CHECK(sim.post_charge("ck_lat", charge_body("ck_lat")).header("Idempotent-Replayed") == "true");
  CHECK(sim.count_charges("ck_lat") == 1);
}

TEST_CASE("sim faults: source filter, count and clearing") {
  VendorSim sim;
  queue_fault(sim, R"({"mode":"commit_then_5xx","count":2,"source":"tok_decline"})");
  CHECK(sim.post_charge("ck_f1", charge_body("ck_f1")).status == 200);  // tok_ok: untouched
  CHECK(sim.post_charge("ck_f2", charge_body("ck_f2", "tok_decline")).status == 502);
  CHECK(sim.post_charge("ck_f3", charge_body("ck_f3", "tok_decline")).status == 502);
  CHECK(sim.post_charge("ck_f4", charge_body("ck_f4", "tok_decline")).status == 200);  // used up
  queue_fault(sim, R"({"mode":"fail_before_commit","count":-1})");
  CHECK(sim.post_charge("ck_f5", charge_body("ck_f5")).status == 500);
  CHECK(sim.post_charge("ck_f5", charge_body("ck_f5")).status == 500);
  CHECK(sim.control("DELETE", "/_sim/faults").status == 200);
  CHECK(sim.post_charge("ck_f5", charge_body("ck_f5")).status == 200);
  CHECK(sim.count_charges("ck_f5") == 1);
}

TEST_CASE("sim faults: set by flag at start") {
  VendorSim sim({"--fault", "commit_then_5xx"});
  CHECK(sim.post_charge("ck_flag", charge_body("ck_flag")).status == 502);
  CHECK(sim.count_charges("ck_flag") == 1);
  CHECK(sim.post_charge("ck_flag", charge_body("ck_flag")).status == 200);
}

namespace {

// A charge to refund; its id.
std::string charged(const VendorSim& sim, const std::string& key) {
  const auto r = sim.post_charge(key, charge_body(key));
  REQUIRE_MESSAGE(r.status == 200, r.describe());
  return std::string(r.json().at("id").as_string());
}

}  // namespace

TEST_CASE("sim faults on refunds: fail_before_commit, commit_then_5xx, commit_then_hang") {
  VendorSim sim;
  const std::string ch = charged(sim, "ck_rf_faults");
  queue_fault(sim, R"({"mode":"fail_before_commit","operation":"refund"})");
  CHECK(sim.post_refund("rk_fbc", refund_body("rk_fbc", ch, 100)).status == 500);
  CHECK(sim.count_refunds("rk_fbc") == 0);
  const auto retry = sim.post_refund("rk_fbc", refund_body("rk_fbc", ch, 100));
  CHECK(retry.status == 200);
  CHECK(retry.header("Idempotent-Replayed").empty());

  queue_fault(sim, R"({"mode":"commit_then_5xx","operation":"refund"})");
  CHECK(sim.post_refund("rk_c5", refund_body("rk_c5", ch, 100)).status == 502);
  CHECK(sim.count_refunds("rk_c5") == 1);
  CHECK(sim.get("/v1/refunds?reference=rk_c5").json().at("data").at(0).at("status").as_string() == "succeeded");
  CHECK(sim.post_refund("rk_c5", refund_body("rk_c5", ch, 100)).header("Idempotent-Replayed") == "true");

  queue_fault(sim, R"({"mode":"commit_then_hang","delay_ms":300,"operation":"refund"})");
  const auto hung = sim.post_refund("rk_hang", refund_body("rk_hang", ch, 100), 5s);
  CHECK_MESSAGE(hung.status == 0, hung.describe());
  CHECK(sim.count_refunds("rk_hang") == 1);
  CHECK(sim.post_refund("rk_hang", refund_body("rk_hang", ch, 100)).header("Idempotent-Replayed") == "true");
  // The refunds that committed behind a fault count against the charge like any other.
  CHECK(sim.post_refund("rk_rest", refund_body("rk_rest", ch, 701)).json().at("decline_code").as_string() ==
        "exceeds_charge");
}

TEST_CASE("sim faults on refunds: delayed_commit and latency hold the key in_progress") {
  VendorSim sim;
  const std::string ch = charged(sim, "ck_rf_delay");
  queue_fault(sim, R"({"mode":"delayed_commit","delay_ms":700,"operation":"refund"})");
  CHECK(sim.post_refund("rk_dc", refund_body("rk_dc", ch, 100)).status == 504);
  CHECK(sim.get("/v1/refunds?reference=rk_dc").json().at("data").as_array().empty());
  const auto during = sim.post_refund("rk_dc", refund_body("rk_dc", ch, 100));
  CHECK(during.status == 409);
  CHECK(error_type(during) == "in_progress");
  CHECK(eventually([&] { return sim.count_refunds("rk_dc") == 1; }, 3s));
  CHECK(sim.post_refund("rk_dc", refund_body("rk_dc", ch, 100)).header("Idempotent-Replayed") == "true");

  queue_fault(sim, R"({"mode":"latency","delay_ms":800,"operation":"refund"})");
  auto slow = std::async(std::launch::async,
                         [&sim, &ch] { return sim.post_refund("rk_lat", refund_body("rk_lat", ch, 100)); });
  REQUIRE(faults_consumed(sim));
  const auto concurrent = sim.post_refund("rk_lat", refund_body("rk_lat", ch, 100));
  CHECK(concurrent.status == 409);
  CHECK(error_type(concurrent) == "in_progress");
  // The same key string on the charge route is another key: not held up.
  CHECK(sim.post_charge("rk_lat", charge_body("rk_lat")).status == 200);
  const auto first = slow.get();
  CHECK(first.status == 200);
  CHECK(first.header("Idempotent-Replayed").empty());
  CHECK(sim.count_refunds("rk_lat") == 1);
}

TEST_CASE("sim faults: unfiltered faults hit refunds too; filtered ones only their operation") {
  VendorSim sim;
  const std::string ch = charged(sim, "ck_rf_filter");
  queue_fault(sim, R"({"mode":"commit_then_5xx","operation":"charge"})");
  queue_fault(sim, R"({"mode":"fail_before_commit","source":"tok_ok"})");  // charges with tok_ok only
  CHECK(sim.post_refund("rk_f1", refund_body("rk_f1", ch, 100)).status == 200);  // passes both
  CHECK(sim.post_charge("ck_f_a", charge_body("ck_f_a")).status == 502);
  CHECK(sim.post_charge("ck_f_b", charge_body("ck_f_b")).status == 500);
  queue_fault(sim, R"({"mode":"fail_before_commit"})");
  CHECK(sim.post_refund("rk_f2", refund_body("rk_f2", ch, 100)).status == 500);
  CHECK(sim.count_refunds("rk_f2") == 0);
  VendorSim flagged({"--fault", "commit_then_5xx,operation=refund"});
  const std::string ch2 = charged(flagged, "ck_rf_flag");  // not taken by the charge
  CHECK(flagged.post_refund("rk_flag", refund_body("rk_flag", ch2, 10)).status == 502);
  CHECK(flagged.count_refunds("rk_flag") == 1);
}
