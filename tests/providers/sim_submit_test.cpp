// providers/sim submit: every row of the classification table, end to end through the HTTP
// client against a fake vendor.
#include <doctest/doctest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "providers/sim/classify.h"
#include "providers/sim_fixture.h"

namespace {

namespace json = boost::json;
using payorch::VendorOutcome;
using payorch::to_string;
using payorch::test::answer_json;
using payorch::test::Reply;
using payorch::test::sample_charge;
using payorch::test::SimFixture;
using payorch::test::vendor_charge;
using payorch::test::vendor_error;

}  // namespace

TEST_CASE("sim submit sends the charge with the client_key as idempotency key and reference") {
  SimFixture f(answer_json(200, vendor_charge(sample_charge(), "succeeded")));
  const auto result = f.submit();
  CHECK(result.outcome == VendorOutcome::succeeded);
  CHECK(result.vendor_reference == "ch_777");
  CHECK(result.amount_minor == 1250);
  CHECK(result.currency == "EUR");
  CHECK(result.http_status == 200);
  const auto seen = f.server().requests();
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].method_string() == "POST");
  CHECK(seen[0].target() == "/v1/charges");
  CHECK(seen[0]["Authorization"] == "Bearer sk_test_123");
  CHECK(seen[0]["Idempotency-Key"] == sample_charge().client_key);
  CHECK(seen[0]["Content-Type"] == "application/json");
  const json::value body = json::parse(seen[0].body());
  CHECK(body == json::parse(R"({"amount_minor":1250,"currency":"EUR","payee":"acct_merchant_7",
                               "source":"tok_ok","reference":"ck_01HZX3K8Q2M4N6P8R0T2V4W6Y8"})"));
}

TEST_CASE("sim submit: classification of vendor answers") {
  struct Row {
    std::string name;
    unsigned status;
    json::value body;
    VendorOutcome expected;
  };
  const auto req = sample_charge();
  const Row rows[] = {
      {"200 succeeded", 200, vendor_charge(req, "succeeded"), VendorOutcome::succeeded},
      {"200 declined", 200, vendor_charge(req, "declined"), VendorOutcome::declined},
      {"200 pending", 200, vendor_charge(req, "pending"), VendorOutcome::pending},
      {"400 invalid_request", 400, vendor_error("invalid_request"), VendorOutcome::declined},
      {"400 other", 400, vendor_error("something_else"), VendorOutcome::ambiguous},
      {"401", 401, vendor_error("unauthorized"), VendorOutcome::auth_refused},
      {"403", 403, json::object{}, VendorOutcome::auth_refused},
      {"409 idempotency_mismatch", 409, vendor_error("idempotency_mismatch"), VendorOutcome::key_mismatch},
      {"409 in_progress", 409, vendor_error("in_progress"), VendorOutcome::ambiguous},
      {"409 other", 409, json::object{}, VendorOutcome::ambiguous},
      {"500", 500, vendor_error("internal"), VendorOutcome::ambiguous},
      {"503", 503, json::object{}, VendorOutcome::ambiguous},
      {"404", 404, vendor_error("not_found"), VendorOutcome::ambiguous},
      {"201", 201, vendor_charge(req, "succeeded"), VendorOutcome::ambiguous},
      {"200 unknown status", 200, vendor_charge(req, "refunded"), VendorOutcome::ambiguous},
      {"200 not a charge", 200, json::array{}, VendorOutcome::ambiguous},
  };
  for (const Row& row : rows) {
    CAPTURE(row.name);
    SimFixture f(answer_json(row.status, row.body));
    const auto result = f.submit();
    CHECK(to_string(result.outcome) == to_string(row.expected));
    CHECK(result.http_status == static_cast<int>(row.status));
    CHECK(f.server().request_count() == 1);
  }
}

TEST_CASE("sim submit: declines carry their code") {
  SimFixture declined(answer_json(200, vendor_charge(sample_charge(), "declined")));
  CHECK(declined.submit().decline_code == "insufficient_funds");
  SimFixture invalid(answer_json(400, vendor_error("invalid_request")));
  CHECK(invalid.submit().decline_code == "invalid_request");
}

TEST_CASE("sim submit: a 200 that is not JSON is ambiguous") {
  SimFixture f([](const payorch::http::Request&) {
    payorch::http::Response res{boost::beast::http::status::ok, 11};
    res.body() = "<html>charged?</html>";
    res.prepare_payload();
    return Reply::with(std::move(res));
  });
  CHECK(f.submit().outcome == VendorOutcome::ambiguous);
}

TEST_CASE("sim submit: a 200 naming its status twice is ambiguous, never read as the last one") {
  const std::string charge = json::serialize(vendor_charge(sample_charge(), "declined"));
  // {"id":…,"status":"declined",…,"status":"succeeded"}
  const std::string body = charge.substr(0, charge.size() - 1) + R"(,"status":"succeeded"})";
  SimFixture f([body](const payorch::http::Request&) {
    payorch::http::Response res{boost::beast::http::status::ok, 11};
    res.set(boost::beast::http::field::content_type, "application/json");
    res.body() = body;
    res.prepare_payload();
    return Reply::with(std::move(res));
  });
  const auto result = f.submit();
  CHECK(result.outcome == VendorOutcome::ambiguous);
}

TEST_CASE("sim submit: a success for another reference, amount, currency or payee is ambiguous") {
  const auto req = sample_charge();
  const std::pair<const char*, json::value> changes[] = {
      {"reference", "ck_someone_else"},
      {"amount_minor", 125000},
      {"currency", "USD"},
      {"payee", "acct_other"},
      {"amount_minor", "1250"},  // a string is not an amount
  };
  for (const auto& [field_ref, value] : changes) {
    const auto& field = field_ref;  // not a binding: CAPTURE captures it (clang < 16)
    CAPTURE(field);
    json::object charge = vendor_charge(req, "succeeded");
    charge[field] = value;
    SimFixture f(answer_json(200, charge));
    const auto result = f.submit(req);
    CHECK(result.outcome == VendorOutcome::ambiguous);
    CHECK(!result.detail.empty());
  }
}

TEST_CASE("sim submit: a vendor that reads the charge and never answers is ambiguous") {
  SimFixture f([](const payorch::http::Request&) { return Reply::never_answer(); });
  const auto start = std::chrono::steady_clock::now();
  const auto result = f.submit();
  CHECK(result.outcome == VendorOutcome::ambiguous);
  CHECK(result.http_status == 0);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
  CHECK(f.server().request_count() == 1);
}

TEST_CASE("sim submit: a vendor that closes the connection after reading is ambiguous, not resent") {
  SimFixture f([](const payorch::http::Request&) { return Reply::drop_connection(); });
  CHECK(f.submit().outcome == VendorOutcome::ambiguous);
  CHECK(f.server().request_count() == 1);
}

TEST_CASE("sim submit: no vendor listening is not_sent") {
  SimFixture f;
  const auto result = f.submit();
  CHECK(result.outcome == VendorOutcome::not_sent);
  CHECK(result.http_status == 0);
}

TEST_CASE("sim submit twice on a kept-alive connection: two requests, the same key") {
  SimFixture f(answer_json(200, vendor_charge(sample_charge(), "pending")));
  CHECK(f.submit().outcome == VendorOutcome::pending);
  CHECK(f.submit().outcome == VendorOutcome::pending);
  const auto seen = f.server().requests();
  REQUIRE(seen.size() == 2);
  CHECK(seen[0]["Idempotency-Key"] == seen[1]["Idempotency-Key"]);
}
