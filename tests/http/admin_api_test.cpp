// http/admin_api: the admin routes of docs/contract.md §6 on a real Writer and ReadPool over a temp
// database, called through handle() without sockets.
#include <doctest/doctest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <filesystem>
#include <future>
#include <set>
#include <string>

#include "http/admin_api.h"
#include "store/database.h"
#include "store/intake.h"
#include "store/payments.h"
#include "store/transitions.h"
#include "store/cases.h"
#include "store/settlement.h"
#include "store/sqlite_store.h"
#include "support/store_fixture.h"

using namespace payorch;
using namespace std::chrono_literals;
namespace bhttp = boost::beast::http;

namespace {

constexpr UnixMillis t0 = 1'700'000'000'000;
constexpr const char* admin = "Bearer admin-secret";
using Headers = std::vector<std::pair<std::string, std::string>>;
using http::Response;

config::Config admin_config() {
  config::Config cfg;
  cfg.admin_token = "admin-secret";
  cfg.tenants.push_back({"acme", "acme-secret", std::nullopt});
  config::Provider sim;
  sim.name = "sim";
  sim.adapter = "sim";
  sim.contract.key_retention = 24h;
  sim.contract.request_timeout = 10s;
  cfg.providers.push_back(sim);
  cfg.default_provider = "sim";
  cfg.engine.lease = 30s;
  return cfg;
}

struct AdminFixture {
  AdminFixture() {
    writer = std::make_unique<store::Writer>(file.path(), store::WriterOptions{});
    writer->start();
    reads = std::make_unique<store::ReadPool>(file.path(), 2, 2000ms);
    store = std::make_unique<store::SqliteStore>(*writer, *reads);
    api = std::make_unique<http::AdminApi>(cfg, *store, clock, rng);
  }
  ~AdminFixture() {
    api.reset();
    writer->stop();
    writer.reset();
    reads.reset();
  }

  // A payment in UNKNOWN, first sent at `first_submit_at`, with an open retry_budget_exhausted
  // case. Written on the fixture's own connection (the writer is idle meanwhile).
  Payment unknown_with_case(UnixMillis first_submit_at = t0) {
    const store::IntakeRequest r = test::intake_request("order-" + std::to_string(++ops), 2500);
    store::Transaction tx(*file.db);
    Payment p = store::record_intake(*file.db, r, t0, rng).payment;
    file.db->prepare("UPDATE payments SET first_submit_at = ? WHERE id = ?").bind(1, first_submit_at).bind(2, p.id).run();
    for (Trigger trigger : {Trigger::submit_ambiguous, Trigger::give_up}) {
      auto current = store::find_payment_by_id(*file.db, p.id);
      auto t = transition(current->state, trigger);
      REQUIRE(store::apply_transition(*file.db, p.id, std::nullopt, *t, {}, t0, rng) == store::CasResult::applied);
    }
    tx.commit();
    return test::stored_payment(*file.db, p.id);
  }

  Response call(bhttp::verb method, const std::string& target, std::string body = {},
                std::string content_type = {}, Headers extra = {}, const char* token = admin) {
    http::Request req{method, target, 11};
    if (token) req.set(bhttp::field::authorization, token);
    if (!content_type.empty()) req.set(bhttp::field::content_type, content_type);
    for (const auto& [name, value] : extra) req.set(name, value);
    req.body() = std::move(body);
    req.prepare_payload();
    std::promise<Response> answer;
    auto got = answer.get_future();
    api->handle(std::move(req), [&answer](Response r) { answer.set_value(std::move(r)); });
    REQUIRE(got.wait_for(10s) == std::future_status::ready);
    return got.get();
  }

  Response resolve(const std::string& case_id, const std::string& body, Headers extra = {}) {
    return call(bhttp::verb::post, "/v1/reconciliation/" + case_id + "/resolve", body,
                "application/json", std::move(extra));
  }

  config::Config cfg = admin_config();
  ManualClock clock{t0 + 60'000};
  SeededRandom rng{11};
  test::TempDatabase file{"admin", t0};  // `db`: the fixture's own connection
  std::unique_ptr<store::Writer> writer;
  std::unique_ptr<store::ReadPool> reads;
  std::unique_ptr<store::SqliteStore> store;
  std::unique_ptr<http::AdminApi> api;
  int ops = 0;
};

boost::json::value json(const Response& r) { return boost::json::parse(r.body()); }

// The problem code at the end of `type`, "" when the response is not a problem.
std::string problem(const Response& r) {
  if (r[bhttp::field::content_type] != "application/problem+json") return "";
  std::string type(json(r).at("type").as_string());
  return type.substr(type.rfind('/') + 1);
}

std::set<std::string> keys(const boost::json::value& v) {
  std::set<std::string> out;
  for (const auto& kv : v.as_object()) out.insert(std::string(kv.key()));
  return out;
}

// The field names in a 422's errors[].
std::set<std::string> error_fields(const Response& r) {
  std::set<std::string> out;
  const boost::json::value body = json(r);
  for (const auto& e : body.at("errors").as_array()) out.insert(std::string(e.at("field").as_string()));
  return out;
}

}  // namespace

TEST_CASE("admin api: the admin token is required everywhere") {
  AdminFixture f;
  Payment p = f.unknown_with_case();
  for (const char* token : {static_cast<const char*>(nullptr), "Bearer acme-secret", "Bearer wrong"}) {
    for (const std::string& target : {std::string("/v1/reconciliation"), "/v1/admin/payments/" + p.id,
                                      std::string("/v1/reconciliation/rc_x"), std::string("/v1/admin/nothing")}) {
      auto r = f.call(bhttp::verb::get, target, {}, {}, {}, token);
      CHECK(r.result_int() == 401);
      CHECK(problem(r) == "unauthorized");
    }
  }
  CHECK(f.call(bhttp::verb::get, "/v1/admin/nothing").result_int() == 404);
  CHECK(f.call(bhttp::verb::delete_, "/v1/reconciliation").result_int() == 405);
  CHECK(http::AdminApi::owns("/v1/reconciliation"));
  CHECK(http::AdminApi::owns("/v1/reconciliation/import"));
  CHECK(http::AdminApi::owns("/v1/admin/payments/pay_1"));
  CHECK_FALSE(http::AdminApi::owns("/v1/payments"));
  CHECK_FALSE(http::AdminApi::owns("/v1/reconciliationx"));
}

TEST_CASE("admin api: case views, listing with paging and filters, payment view") {
  AdminFixture f;
  std::vector<Payment> payments;
  for (int i = 0; i < 3; ++i) payments.push_back(f.unknown_with_case());

  auto page1 = f.call(bhttp::verb::get, "/v1/reconciliation?status=open&limit=2");
  REQUIRE(page1.result_int() == 200);
  auto body1 = json(page1);
  REQUIRE(body1.at("data").as_array().size() == 2);
  REQUIRE(body1.at("next_cursor").is_string());
  auto page2 = f.call(bhttp::verb::get, "/v1/reconciliation?status=open&limit=2&cursor=" +
                                            std::string(body1.at("next_cursor").as_string()));
  REQUIRE(page2.result_int() == 200);
  CHECK(json(page2).at("data").as_array().size() == 1);
  CHECK(json(page2).at("next_cursor").is_null());
  CHECK(json(f.call(bhttp::verb::get, "/v1/reconciliation?status=resolved")).at("data").as_array().empty());

  const auto& view = body1.at("data").as_array()[0];
  CHECK(keys(view) == std::set<std::string>{"id", "payment_id", "refund_id", "operation_id", "tenant_id", "provider",
                                            "reason", "status", "opened_at", "resolved_at", "resolution",
                                            "evidence"});
  CHECK(view.at("refund_id").is_null());  // a payment's case
  CHECK(view.at("status").as_string() == "open");
  CHECK(view.at("reason").as_string() == "retry_budget_exhausted");
  CHECK(view.at("tenant_id").as_string() == "acme");
  CHECK(view.at("provider").as_string() == "sim");
  CHECK(view.at("resolution").is_null());
  CHECK(view.at("resolved_at").is_null());
  CHECK(view.at("evidence").is_array());

  const std::string case_id(view.at("id").as_string());
  auto one = f.call(bhttp::verb::get, "/v1/reconciliation/" + case_id);
  REQUIRE(one.result_int() == 200);
  // The case alone adds what a resolution may say now; the rest is the list's view.
  boost::json::object detail = json(one).as_object();
  CHECK(boost::json::serialize(detail.at("allowed_outcomes")) == R"(["succeeded","failed_final","retry"])");
  CHECK(detail.at("retry_refused").is_null());
  detail.erase("allowed_outcomes");
  detail.erase("retry_refused");
  CHECK(boost::json::value(detail) == view);
  CHECK(f.call(bhttp::verb::get, "/v1/reconciliation/rc_00000000000000000000000000").result_int() == 404);
  CHECK(f.call(bhttp::verb::get, "/v1/reconciliation/not-a-case").result_int() == 404);

  for (const char* bad : {"?status=closed", "?limit=0", "?limit=201", "?limit=x", "?cursor=pay_1", "?sort=id"}) {
    auto r = f.call(bhttp::verb::get, std::string("/v1/reconciliation") + bad);
    CHECK_MESSAGE(r.result_int() == 422, bad);
    CHECK(problem(r) == "invalid-request");
  }

  auto pay = f.call(bhttp::verb::get, "/v1/admin/payments/" + payments[0].id);
  REQUIRE(pay.result_int() == 200);
  CHECK(json(pay).at("tenant_id").as_string() == "acme");
  CHECK(json(pay).at("id").as_string() == payments[0].id);
  CHECK(json(pay).at("state").as_string() == "UNKNOWN");
  CHECK(json(pay).at("reconciliation").at("status").as_string() == "open");
  CHECK(f.call(bhttp::verb::get, "/v1/admin/payments/pay_00000000000000000000000000").result_int() == 404);
  CHECK(f.call(bhttp::verb::get, "/v1/admin/payments/x").result_int() == 404);
}

TEST_CASE("admin api: resolve validates the body and answers case and payment") {
  AdminFixture f;
  Payment p = f.unknown_with_case();
  const std::string case_id = test::stored_open_case(*f.file.db, p.id).id;

  auto bad = f.resolve(case_id, R"({"outcome":"succeeded","note":"ok","vendor_ref":"x"})");
  CHECK(bad.result_int() == 422);
  CHECK(error_fields(bad) == std::set<std::string>{"vendor_ref"});
  CHECK(error_fields(f.resolve(case_id, R"({"outcome":"succeeded"})")) == std::set<std::string>{"note"});
  CHECK(error_fields(f.resolve(case_id, R"({"outcome":"succeeded","note":"  "})")) == std::set<std::string>{"note"});
  CHECK(error_fields(f.resolve(case_id, R"({"outcome":"paid","note":"x"})")) == std::set<std::string>{"outcome"});
  CHECK(error_fields(f.resolve(case_id, R"({"note":"x"})")) == std::set<std::string>{"outcome"});
  // The author is the token's operator: a Payorch-Operator naming anyone else is refused.
  auto impostor = f.resolve(case_id, R"({"outcome":"retry","note":"x"})", {{"Payorch-Operator", "mallory"}});
  CHECK(impostor.result_int() == 403);
  CHECK(problem(impostor) == "operator-mismatch");
  CHECK(f.resolve(case_id, "{not json").result_int() == 400);
  CHECK(f.resolve(case_id, "[]").result_int() == 400);
  // One JSON reading policy: two outcomes are refused, never resolved with the last one.
  auto twice = f.resolve(case_id, R"({"outcome":"failed_final","note":"x","outcome":"succeeded"})");
  CHECK(twice.result_int() == 400);
  CHECK(problem(twice) == "invalid-json");
  CHECK(json(twice).at("detail").as_string() == "the body was refused: duplicate object key \"outcome\"");
  CHECK(f.call(bhttp::verb::post, "/v1/reconciliation/" + case_id + "/resolve",
               R"({"outcome":"succeeded","note":"x"})", "text/plain")
            .result_int() == 415);
  CHECK(f.resolve("rc_00000000000000000000000000", R"({"outcome":"succeeded","note":"x"})").result_int() == 404);
  CHECK(store::find_case(*f.file.db, case_id)->status == store::CaseStatus::open);

  std::vector<std::string> changed;  // written on the writer thread before the answer
  f.api->set_on_change([&changed](const std::string& id) { changed.push_back(id); });
  auto ok = f.resolve(case_id, R"({"outcome":"succeeded","note":"seen in the dashboard","vendor_reference":"ch_77"})",
                      {{"Payorch-Operator", "admin"}});
  REQUIRE_MESSAGE(ok.result_int() == 200, ok.body());
  auto body = json(ok);
  CHECK(keys(body) == std::set<std::string>{"case", "payment", "refund"});
  CHECK(body.at("refund").is_null());  // a payment's case
  const auto& resolution = body.at("case").at("resolution");
  CHECK(body.at("case").at("status").as_string() == "resolved");
  CHECK(body.at("case").at("resolved_at").as_string() == format_rfc3339(t0 + 60'000));
  CHECK(resolution.at("outcome").as_string() == "succeeded");
  CHECK(resolution.at("by").as_string() == "admin");
  CHECK(resolution.at("note").as_string() == "seen in the dashboard");
  CHECK(resolution.at("vendor_reference").as_string() == "ch_77");
  CHECK(body.at("payment").at("state").as_string() == "SUCCEEDED");
  CHECK(body.at("payment").at("vendor_reference").as_string() == "ch_77");
  CHECK(body.at("payment").at("tenant_id").as_string() == "acme");
  CHECK(changed == std::vector<std::string>{p.id});

  auto again = f.resolve(case_id, R"({"outcome":"failed_final","note":"changed my mind"})");
  CHECK(again.result_int() == 409);
  CHECK(problem(again) == "case-not-open");
  CHECK(changed.size() == 1);  // a refusal changed nothing

  // Without the header the resolver is "admin".
  Payment q = f.unknown_with_case();
  auto by_admin = f.resolve(test::stored_open_case(*f.file.db, q.id).id, R"({"outcome":"failed_final","note":"x"})");
  REQUIRE(by_admin.result_int() == 200);
  CHECK(json(by_admin).at("case").at("resolution").at("by").as_string() == "admin");
  CHECK(json(by_admin).at("payment").at("state").as_string() == "FAILED_FINAL");
}

TEST_CASE("admin api: retry inside the key's retention resumes, outside it is 409") {
  AdminFixture f;
  // Retention 24h, request timeout 10s, lease 30s: a retry must end by 0.9 × 24h after the
  // first submit.
  Payment fresh = f.unknown_with_case(t0);
  Payment old = f.unknown_with_case(t0 - 22 * 3'600'000);

  auto refused = f.resolve(test::stored_open_case(*f.file.db, old.id).id, R"({"outcome":"retry","note":"try again"})");
  CHECK(refused.result_int() == 409);
  CHECK(problem(refused) == "retry-not-allowed");
  CHECK(std::string(json(refused).at("detail").as_string()).find(old.client_key) != std::string::npos);

  auto ok = f.resolve(test::stored_open_case(*f.file.db, fresh.id).id, R"({"outcome":"retry","note":"try again"})");
  REQUIRE_MESSAGE(ok.result_int() == 200, ok.body());
  CHECK(json(ok).at("payment").at("state").as_string() == "UNKNOWN");
  auto stored = store::find_payment_by_id(*f.file.db, fresh.id);
  CHECK(stored->next_action == NextAction::query);
  CHECK(stored->budget_started_at == t0 + 60'000);
}

TEST_CASE("admin api: settlement import") {
  AdminFixture f;
  Payment p = f.unknown_with_case();
  const std::string csv = std::string(store::settlement_header) + "\n" + p.client_key +
                          ",succeeded,2500,EUR,ch_1\nck_unknown,succeeded,1,EUR,\nbroken\n";

  auto no_provider = f.call(bhttp::verb::post, "/v1/reconciliation/import", csv, "text/csv");
  CHECK(no_provider.result_int() == 422);
  CHECK(error_fields(no_provider) == std::set<std::string>{"provider"});
  CHECK(f.call(bhttp::verb::post, "/v1/reconciliation/import?provider=nope", csv, "text/csv").result_int() == 422);
  CHECK(f.call(bhttp::verb::post, "/v1/reconciliation/import?provider=sim", csv, "application/json").result_int() == 415);
  auto bad_header = f.call(bhttp::verb::post, "/v1/reconciliation/import?provider=sim", "a,b\n", "text/csv");
  CHECK(bad_header.result_int() == 422);
  CHECK(problem(bad_header) == "invalid-settlement-file");
  CHECK(f.call(bhttp::verb::get, "/v1/reconciliation/import?provider=sim").result_int() == 405);

  auto r = f.call(bhttp::verb::post, "/v1/reconciliation/import?provider=sim", csv, "text/csv; charset=utf-8");
  REQUIRE_MESSAGE(r.result_int() == 200, r.body());
  auto s = json(r);
  CHECK(s.at("rows").as_int64() == 3);
  CHECK(s.at("resolved").as_int64() == 1);
  CHECK(s.at("unmatched").as_int64() == 1);
  CHECK(s.at("unmatched_references") == boost::json::array{"ck_unknown"});
  CHECK(s.at("mismatched").as_int64() == 0);
  REQUIRE(s.at("errors").as_array().size() == 1);
  CHECK(s.at("errors").as_array()[0].at("line").as_int64() == 4);
  CHECK(test::stored_payment(*f.file.db, p.id).state == PaymentState::succeeded);
}

TEST_CASE("admin api: a case with no payment shows nulls and closes without a payment") {
  AdminFixture f;
  std::string case_id;
  {
    store::Transaction tx(*f.file.db);
    case_id = store::hold_unknown_reference(*f.file.db, "sim", "ck_NOBODY",
                                            boost::json::object{{"source", "callback"}}, t0, f.rng);
    tx.commit();
  }
  auto one = f.call(bhttp::verb::get, "/v1/reconciliation/" + case_id);
  REQUIRE(one.result_int() == 200);
  boost::json::object detail = json(one).as_object();
  CHECK(keys(detail) == std::set<std::string>{"id", "payment_id", "refund_id", "operation_id", "tenant_id", "provider",
                                              "reason", "status", "opened_at", "resolved_at", "resolution",
                                              "evidence", "allowed_outcomes", "retry_refused"});
  // No payment to retry: the form offers the two final outcomes and says why not retry.
  CHECK(boost::json::serialize(detail.at("allowed_outcomes")) == R"(["succeeded","failed_final"])");
  CHECK(std::string(detail.at("retry_refused").as_string()).find("no payment") != std::string::npos);
  detail.erase("allowed_outcomes");
  detail.erase("retry_refused");
  const boost::json::value view = detail;
  CHECK(view.at("payment_id").is_null());
  CHECK(view.at("refund_id").is_null());
  CHECK(view.at("operation_id").is_null());
  CHECK(view.at("tenant_id").is_null());
  CHECK(view.at("provider").as_string() == "sim");
  CHECK(view.at("reason").as_string() == "callback_mismatch");
  CHECK(json(f.call(bhttp::verb::get, "/v1/reconciliation?status=open")).at("data").as_array()[0] == view);

  auto retry = f.resolve(case_id, R"({"outcome":"retry","note":"again"})");
  CHECK(retry.result_int() == 409);
  CHECK(problem(retry) == "retry-not-allowed");

  std::vector<std::string> changed;
  f.api->set_on_change([&changed](const std::string& id) { changed.push_back(id); });
  auto ok = f.resolve(case_id, R"({"outcome":"failed_final","note":"not our charge; refunded by the vendor"})");
  REQUIRE_MESSAGE(ok.result_int() == 200, ok.body());
  auto body = json(ok);
  CHECK(body.at("payment").is_null());
  CHECK(body.at("case").at("status").as_string() == "resolved");
  CHECK(body.at("case").at("resolution").at("note").as_string() == "not our charge; refunded by the vendor");
  CHECK(changed.empty());  // no payment changed
}

TEST_CASE("admin api: tenant_id has the configured names' syntax on every route that takes it") {
  AdminFixture f;
  const Payment p = f.unknown_with_case();
  // Tenant ids are lower case in the configuration, so an upper-case one names no tenant: it is
  // refused as a bad parameter, not looked up and answered as if nothing matched.
  for (const std::string& bad : std::vector<std::string>{"ACME", "Acme", "acme!", "", std::string(65, 'a')}) {
    for (const std::string& target :
         {"/v1/admin/payments?operation_id=" + p.operation_id + "&tenant_id=" + bad,
          "/v1/admin/refunds/" + p.operation_id + "?tenant_id=" + bad,
          "/v1/admin/timeline?operation_id=" + p.operation_id + "&tenant_id=" + bad}) {
      const Response r = f.call(bhttp::verb::get, target);
      CHECK_MESSAGE(r.result_int() == 422, target);
      CHECK(problem(r) == "invalid-request");
      CHECK(error_fields(r) == std::set<std::string>{"tenant_id"});
    }
  }
  const Response found =
      f.call(bhttp::verb::get, "/v1/admin/payments?operation_id=" + p.operation_id + "&tenant_id=acme");
  REQUIRE(found.result_int() == 200);
  CHECK(json(found).at("payments").as_array().size() == 1);
}

TEST_CASE("admin api: a case view's retry_refused is the refusal a retry gets, word for word") {
  AdminFixture f;
  const auto refused_in_view = [&f](const std::string& case_id) {
    const Response one = f.call(bhttp::verb::get, "/v1/reconciliation/" + case_id);
    REQUIRE(one.result_int() == 200);
    CHECK(boost::json::serialize(json(one).at("allowed_outcomes")) == R"(["succeeded","failed_final"])");
    REQUIRE(json(one).at("retry_refused").is_string());
    return std::string(json(one).at("retry_refused").as_string());
  };
  const auto refused_by_resolve = [&f](const std::string& case_id) {
    const Response r = f.resolve(case_id, R"({"outcome":"retry","note":"again"})");
    CHECK(r.result_int() == 409);
    CHECK(problem(r) == "retry-not-allowed");
    return std::string(json(r).at("detail").as_string());
  };

  SUBCASE("a case no payment matched") {
    std::string case_id;
    {
      store::Transaction tx(*f.file.db);
      case_id = store::hold_unknown_reference(*f.file.db, "sim", "ck_NOBODY",
                                              boost::json::object{{"source", "callback"}}, t0, f.rng);
      tx.commit();
    }
    const std::string why = refused_in_view(case_id);
    CHECK(why.find("no payment") != std::string::npos);
    CHECK(refused_by_resolve(case_id) == why);
  }
  SUBCASE("a payment whose key the vendor no longer retains") {
    f.unknown_with_case(t0 - 48 * 3'600'000);  // first sent two days ago; retention is 24 h
    const std::string case_id(json(f.call(bhttp::verb::get, "/v1/reconciliation?status=open"))
                                  .at("data").as_array()[0].at("id").as_string());
    const std::string why = refused_in_view(case_id);
    CHECK(why.find("may no longer honour client_key") != std::string::npos);
    CHECK(refused_by_resolve(case_id) == why);
  }
  SUBCASE("a payment of a provider no longer configured") {
    f.unknown_with_case();
    const std::string case_id(json(f.call(bhttp::verb::get, "/v1/reconciliation?status=open"))
                                  .at("data").as_array()[0].at("id").as_string());
    f.cfg.providers[0].name = "sim-next";
    f.cfg.default_provider = "sim-next";
    f.api = std::make_unique<http::AdminApi>(f.cfg, *f.store, f.clock, f.rng);
    const std::string why = refused_in_view(case_id);
    CHECK(why.find("provider sim is not configured") != std::string::npos);
    CHECK(refused_by_resolve(case_id) == why);
  }
}
