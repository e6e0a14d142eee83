// providers/sim refunds (docs/contract.md §8): refund and query_refund against the real
// payorch-vendor-sim, and every row of the classification table against a fake vendor.
#include <doctest/doctest.h>

#include <boost/json/parse.hpp>

#include <string>

#include "providers/sim_fixture.h"
#include "support/vendor_sim.h"

namespace {

namespace json = boost::json;
using payorch::VendorOutcome;
using payorch::to_string;
using payorch::providers::ChargeRequest;
using payorch::providers::RefundRequest;
using payorch::test::answer_json;
using payorch::test::Reply;
using payorch::test::sample_refund;
using payorch::test::SimFixture;
using payorch::test::vendor_error;
using payorch::test::vendor_refund;
using payorch::test::VendorSim;
using payorch::test::vendor_sim_api_key;

json::object list(json::array data) { return json::object{{"data", std::move(data)}}; }

// A charge made through the adapter; the vendor's id of it.
std::string charged(SimFixture& f, const std::string& key, std::int64_t amount = 1000,
                    const std::string& source = "tok_ok") {
  const auto r = f.submit(ChargeRequest{key, amount, "EUR", "merchant-1", source});
  REQUIRE_MESSAGE(r.vendor_reference.has_value(), r.detail);
  return *r.vendor_reference;
}

RefundRequest refund_of(const std::string& charge_id, const std::string& key,
                        std::int64_t amount, const std::string& currency = "EUR") {
  return RefundRequest{key, charge_id, "ck_charge", amount, currency};
}

}  // namespace

TEST_CASE("sim refund against the vendor sim: succeeded, replayed, looked up") {
  VendorSim sim;
  SimFixture f(sim.base_url(), vendor_sim_api_key);
  CHECK(f.adapter().supports_refunds());
  const std::string ch = charged(f, "ck_charge", 1000);

  const RefundRequest req = refund_of(ch, "ck_refund_1", 400);
  const auto first = f.refund(req);
  CHECK_MESSAGE(first.outcome == VendorOutcome::succeeded, first.detail);
  REQUIRE(first.vendor_reference.has_value());
  CHECK(first.vendor_reference->starts_with("rf_"));
  CHECK(first.amount_minor == 400);
  CHECK(first.currency == "EUR");
  CHECK(first.http_status == 200);

  // The same key and body: the vendor's stored refund, not a second one.
  const auto replay = f.refund(req);
  CHECK(replay.outcome == VendorOutcome::succeeded);
  CHECK(replay.vendor_reference == first.vendor_reference);
  CHECK(sim.count_refunds("ck_refund_1") == 1);

  const auto found = f.query_refund(req);
  CHECK_MESSAGE(found.outcome == VendorOutcome::succeeded, found.detail);
  CHECK(found.vendor_reference == first.vendor_reference);
  CHECK(f.query_refund(refund_of(ch, "ck_refund_unknown", 400)).outcome ==
        VendorOutcome::not_found);
}

TEST_CASE("sim refund against the vendor sim: the same key with another amount is key_mismatch") {
  VendorSim sim;
  SimFixture f(sim.base_url(), vendor_sim_api_key);
  const std::string ch = charged(f, "ck_charge", 1000);
  REQUIRE(f.refund(refund_of(ch, "ck_refund_1", 400)).outcome == VendorOutcome::succeeded);
  const auto other = f.refund(refund_of(ch, "ck_refund_1", 500));
  CHECK_MESSAGE(other.outcome == VendorOutcome::key_mismatch, other.detail);
  CHECK(other.http_status == 409);
  CHECK(sim.count_refunds("ck_refund_1") == 1);
}

TEST_CASE("sim refund against the vendor sim: the vendor's refusals are declines with a code") {
  VendorSim sim;
  SimFixture f(sim.base_url(), vendor_sim_api_key);
  const std::string ch = charged(f, "ck_charge", 1000);
  REQUIRE(f.refund(refund_of(ch, "ck_refund_1", 400)).outcome == VendorOutcome::succeeded);

  // 600 are left of the charge.
  const auto above = f.refund(refund_of(ch, "ck_refund_2", 601));
  CHECK_MESSAGE(above.outcome == VendorOutcome::declined, above.detail);
  CHECK(above.decline_code == "exceeds_charge");
  CHECK(above.vendor_reference.has_value());
  CHECK(f.query_refund(refund_of(ch, "ck_refund_2", 601)).outcome == VendorOutcome::declined);
  CHECK(f.refund(refund_of(ch, "ck_refund_3", 600)).outcome == VendorOutcome::succeeded);

  const std::string pending = charged(f, "ck_charge_pending", 1000, "tok_pending");
  const auto not_refundable = f.refund(refund_of(pending, "ck_refund_4", 100));
  CHECK(not_refundable.outcome == VendorOutcome::declined);
  CHECK(not_refundable.decline_code == "charge_not_refundable");

  // Another currency than the charge's: nothing is stored, the same request is refused again.
  const auto usd = f.refund(refund_of(ch, "ck_refund_5", 100, "USD"));
  CHECK(usd.outcome == VendorOutcome::declined);
  CHECK(usd.decline_code == "invalid_request");
  CHECK(sim.count_refunds("ck_refund_5") == 0);
}

TEST_CASE("sim refund against the vendor sim: a 5xx after the commit is ambiguous, the lookup "
          "finds the refund") {
  VendorSim sim({"--fault", "commit_then_5xx,operation=refund"});
  SimFixture f(sim.base_url(), vendor_sim_api_key);
  // The fault is the refund's: the charge goes through.
  const std::string ch = charged(f, "ck_charge", 1000);
  const RefundRequest req = refund_of(ch, "ck_refund_1", 400);
  const auto answered = f.refund(req);
  CHECK_MESSAGE(answered.outcome == VendorOutcome::ambiguous, answered.detail);
  CHECK(answered.http_status == 502);
  const auto found = f.query_refund(req);
  CHECK_MESSAGE(found.outcome == VendorOutcome::succeeded, found.detail);
  CHECK(found.vendor_reference.has_value());
  CHECK(sim.count_refunds("ck_refund_1") == 1);
}

TEST_CASE("sim refund against the vendor sim: a failure before the commit is ambiguous, the "
          "lookup finds nothing") {
  VendorSim sim({"--fault", "fail_before_commit,operation=refund"});
  SimFixture f(sim.base_url(), vendor_sim_api_key);
  const std::string ch = charged(f, "ck_charge", 1000);
  const RefundRequest req = refund_of(ch, "ck_refund_1", 400);
  CHECK(f.refund(req).outcome == VendorOutcome::ambiguous);
  CHECK(f.query_refund(req).outcome == VendorOutcome::not_found);
  // The retry with the same key refunds once.
  CHECK(f.refund(req).outcome == VendorOutcome::succeeded);
  CHECK(sim.count_refunds("ck_refund_1") == 1);
}

TEST_CASE("sim refund sends the refund with its client_key as idempotency key and reference") {
  SimFixture f(answer_json(200, vendor_refund(sample_refund(), "succeeded")));
  const auto result = f.refund();
  CHECK(result.outcome == VendorOutcome::succeeded);
  CHECK(result.vendor_reference == "rf_888");
  CHECK(result.amount_minor == 500);
  CHECK(result.currency == "EUR");
  const auto seen = f.server().requests();
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].method_string() == "POST");
  CHECK(seen[0].target() == "/v1/refunds");
  CHECK(seen[0]["Authorization"] == "Bearer sk_test_123");
  CHECK(seen[0]["Idempotency-Key"] == sample_refund().client_key);
  CHECK(seen[0]["Content-Type"] == "application/json");
  CHECK(json::parse(seen[0].body()) ==
        json::parse(R"({"charge":"ch_777","amount_minor":500,"currency":"EUR",
                        "reference":"ck_01HZX3K8Q2M4N6P8R0T2V4W6RF"})"));
}

TEST_CASE("sim refund: classification of vendor answers") {
  struct Row {
    std::string name;
    unsigned status;
    json::value body;
    VendorOutcome expected;
  };
  const auto req = sample_refund();
  const auto changed = [&req](const char* field, json::value value) {
    json::object refund = vendor_refund(req, "succeeded");
    refund[field] = std::move(value);
    return refund;
  };
  json::object no_charge = vendor_refund(req, "succeeded");
  no_charge.erase("charge");
  const Row rows[] = {
      {"200 succeeded", 200, vendor_refund(req, "succeeded"), VendorOutcome::succeeded},
      {"200 declined", 200, vendor_refund(req, "declined"), VendorOutcome::declined},
      {"200 pending", 200, vendor_refund(req, "pending"), VendorOutcome::pending},
      {"200 another reference", 200, changed("reference", "ck_someone_else"), VendorOutcome::ambiguous},
      {"200 another charge", 200, changed("charge", "ch_other"), VendorOutcome::ambiguous},
      {"200 another amount", 200, changed("amount_minor", 5000), VendorOutcome::ambiguous},
      {"200 another currency", 200, changed("currency", "USD"), VendorOutcome::ambiguous},
      {"200 without charge", 200, no_charge, VendorOutcome::ambiguous},
      {"200 unknown status", 200, vendor_refund(req, "reversed"), VendorOutcome::ambiguous},
      {"400 invalid_request", 400, vendor_error("invalid_request"), VendorOutcome::declined},
      {"401", 401, vendor_error("unauthorized"), VendorOutcome::auth_refused},
      {"403", 403, json::object{}, VendorOutcome::auth_refused},
      {"409 idempotency_mismatch", 409, vendor_error("idempotency_mismatch"), VendorOutcome::key_mismatch},
      {"409 in_progress", 409, vendor_error("in_progress"), VendorOutcome::ambiguous},
      {"404 not_found", 404, vendor_error("not_found"), VendorOutcome::ambiguous},
      {"500", 500, vendor_error("internal_error"), VendorOutcome::ambiguous},
      {"502", 502, vendor_error("bad_gateway"), VendorOutcome::ambiguous},
  };
  for (const Row& row : rows) {
    CAPTURE(row.name);
    SimFixture f(answer_json(row.status, row.body));
    const auto result = f.refund(req);
    CHECK(to_string(result.outcome) == to_string(row.expected));
    CHECK(result.http_status == static_cast<int>(row.status));
    CHECK(f.server().request_count() == 1);
  }
}

TEST_CASE("sim refund: declines carry their code, a mismatch says what differs") {
  SimFixture declined(answer_json(200, vendor_refund(sample_refund(), "declined")));
  CHECK(declined.refund().decline_code == "exceeds_charge");
  SimFixture invalid(answer_json(400, vendor_error("invalid_request")));
  CHECK(invalid.refund().decline_code == "invalid_request");
  json::object other_charge = vendor_refund(sample_refund(), "succeeded");
  other_charge["charge"] = "ch_other";
  SimFixture mismatched(answer_json(200, other_charge));
  const auto result = mismatched.refund();
  CHECK(result.outcome == VendorOutcome::ambiguous);
  CHECK(result.detail.find("charge ch_other != ch_777") != std::string::npos);
}

TEST_CASE("sim refund: no answer is ambiguous, no vendor is not_sent") {
  SimFixture silent([](const payorch::http::Request&) { return Reply::never_answer(); });
  CHECK(silent.refund().outcome == VendorOutcome::ambiguous);
  CHECK(silent.server().request_count() == 1);
  SimFixture dropped([](const payorch::http::Request&) { return Reply::drop_connection(); });
  CHECK(dropped.refund().outcome == VendorOutcome::ambiguous);
  SimFixture absent;
  const auto result = absent.refund();
  CHECK(result.outcome == VendorOutcome::not_sent);
  CHECK(result.http_status == 0);
}

TEST_CASE("sim query_refund asks by the refund's reference") {
  SimFixture f(answer_json(200, list({})));
  CHECK(f.query_refund().outcome == VendorOutcome::not_found);
  const auto seen = f.server().requests();
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].method_string() == "GET");
  CHECK(seen[0].target() == "/v1/refunds?reference=ck_01HZX3K8Q2M4N6P8R0T2V4W6RF");
  CHECK(seen[0]["Authorization"] == "Bearer sk_test_123");
}

TEST_CASE("sim query_refund: classification of vendor answers") {
  struct Row {
    std::string name;
    unsigned status;
    json::value body;
    VendorOutcome expected;
  };
  const auto req = sample_refund();
  json::object other_charge = vendor_refund(req, "succeeded");
  other_charge["charge"] = "ch_other";
  const Row rows[] = {
      {"empty list", 200, list({}), VendorOutcome::not_found},
      {"succeeded", 200, list({vendor_refund(req, "succeeded")}), VendorOutcome::succeeded},
      {"declined", 200, list({vendor_refund(req, "declined")}), VendorOutcome::declined},
      {"pending", 200, list({vendor_refund(req, "pending")}), VendorOutcome::pending},
      {"two refunds", 200, list({vendor_refund(req, "succeeded"), vendor_refund(req, "succeeded")}),
       VendorOutcome::ambiguous},
      {"another charge", 200, list({other_charge}), VendorOutcome::ambiguous},
      {"no data", 200, json::object{}, VendorOutcome::ambiguous},
      {"404 not_supported", 404, vendor_error("not_supported"), VendorOutcome::unsupported},
      {"404 other", 404, vendor_error("not_found"), VendorOutcome::ambiguous},
      {"500", 500, json::object{}, VendorOutcome::ambiguous},
  };
  for (const Row& row : rows) {
    CAPTURE(row.name);
    SimFixture f(answer_json(row.status, row.body));
    const auto result = f.query_refund(req);
    CHECK(to_string(result.outcome) == to_string(row.expected));
  }
}

TEST_CASE("sim query_refund: a found refund carries the vendor's fields") {
  SimFixture f(answer_json(200, list({vendor_refund(sample_refund(), "declined")})));
  const auto result = f.query_refund();
  CHECK(result.outcome == VendorOutcome::declined);
  CHECK(result.vendor_reference == "rf_888");
  CHECK(result.decline_code == "exceeds_charge");
  CHECK(result.amount_minor == 500);
  CHECK(result.currency == "EUR");
}
