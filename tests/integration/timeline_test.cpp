// GET /v1/admin/timeline against the real payorchd and payorch-vendor-sim (docs/api.md,
// "Reading"; docs/contract.md §6, "History"): a payment's whole history by id, operation_id and
// client_key — every transition with its time, fence and cause, the intake's request id — a
// refund's by its re_ id, a given-up payment's case opened and resolved beside the resolution's
// transition, and the query's refusals.
#include <doctest/doctest.h>

#include <boost/json/serialize.hpp>
#include <string>
#include <vector>

#include "support/daemon.h"
#include "support/engine_checks.h"
#include "support/http_client.h"
#include "support/payorch_api.h"
#include "support/ports.h"
#include "support/vendor_sim.h"

using namespace payorch::test;
using namespace std::chrono_literals;

namespace {

const Headers admin_headers{{"Authorization", std::string("Bearer ") + admin_token},
                            {"Content-Type", "application/json"}};

boost::json::array matches_of(Daemon& daemon, const std::string& query) {
  const HttpResponse r = http_request(daemon.port(), "GET", "/v1/admin/timeline?" + query, admin_headers);
  REQUIRE_MESSAGE(r.status == 200, r.describe());
  return r.json().at("matches").as_array();
}

// The one match of `query`.
boost::json::object match_of(Daemon& daemon, const std::string& query) {
  const boost::json::array matches = matches_of(daemon, query);
  REQUIRE_MESSAGE(matches.size() == 1, boost::json::serialize(matches));
  return matches[0].as_object();
}

std::vector<boost::json::object> entries(const boost::json::object& match, const std::string& kind) {
  std::vector<boost::json::object> out;
  for (const auto& e : match.at("timeline").as_array())
    if (json_string(e, "kind") == kind) out.push_back(e.as_object());
  return out;
}

// "from>to/cause" per transition, in timeline order.
std::vector<std::string> steps(const boost::json::object& match) {
  std::vector<std::string> out;
  for (const auto& e : entries(match, "transition")) {
    const std::string from = e.at("from").is_null() ? "-" : json_string(e, "from");
    out.push_back(from + ">" + json_string(e, "to") + "/" + json_string(e, "cause"));
  }
  return out;
}

bool is_invalid_query(const HttpResponse& r, const std::string& field, const std::string& code) {
  if (!is_problem(r, 422, "invalid-request")) return false;
  const boost::json::value body = r.json();
  for (const auto& e : body.at("errors").as_array())
    if (json_string(e, "field") == field && json_string(e, "code") == code) return true;
  return false;
}

}  // namespace

TEST_CASE("timeline: a pending payment that succeeds, and its refund, by id, operation_id and client_key") {
  VendorSim sim({"--pending-delay", "500ms"});
  Daemon daemon(engine_daemon_config({{.base_url = sim.base_url(), .retry = roomy_retry}}));
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail() << "\nsim log:\n" << sim.log_tail());

  const PaymentRequest req{.operation_id = unique_operation_id("tl-paid"), .source = "tok_pending"};
  const HttpResponse created = post_payment(daemon.port(), acme_token, req, {{"X-Request-Id", "tl-intake-1"}});
  REQUIRE_MESSAGE(created.status == 201, created.describe());
  const auto view = wait_for_state(daemon.port(), acme_token, req.operation_id, "SUCCEEDED", 10s);
  REQUIRE(json_string(view, "state") == "SUCCEEDED");
  const std::string id = json_string(view, "id");

  const boost::json::object by_id = match_of(daemon, "id=" + id);
  INFO("timeline: " << boost::json::serialize(by_id));
  CHECK(json_string(by_id, "kind") == "payment");
  CHECK(json_string(by_id, "tenant_id") == "acme");
  CHECK(by_id.at("refund").is_null());
  CHECK(json_string(by_id.at("payment"), "id") == id);
  CHECK(json_string(by_id.at("payment"), "state") == "SUCCEEDED");
  CHECK(by_id.at("cases").as_array().empty());
  // Created, one or more pending answers (PROCESSING, next action query), then the lookup that
  // found it succeeded.
  const std::vector<std::string> s = steps(by_id);
  REQUIRE(s.size() >= 3);
  CHECK(s.front() == "->PROCESSING/intake");
  CHECK(s[1] == "PROCESSING>PROCESSING/submit_pending");
  CHECK(s.back() == "PROCESSING>SUCCEEDED/recovery_succeeded");
  const auto transitions = entries(by_id, "transition");
  CHECK(json_string(transitions.front(), "request_id") == "tl-intake-1");
  CHECK(json_string(transitions.front(), "event_type") == "payment.created");
  CHECK(json_int(transitions.front(), "fence") == 0);
  CHECK(json_string(transitions[1], "next_action") == "query");
  CHECK(transitions[1].at("event_type").is_null());
  CHECK(json_int(transitions[1], "fence").value_or(0) >= 1);  // the engine's lease
  CHECK(json_string(transitions.back(), "event_type") == "payment.succeeded");
  CHECK(json_string(transitions.back(), "event_id").starts_with("evt_"));
  CHECK(transitions.back().at("request_id").is_null());  // the engine's own
  std::string previous_at;
  std::int64_t previous_fence = 0;
  for (const auto& t : transitions) {
    CHECK(json_string(t, "at") >= previous_at);
    CHECK(json_int(t, "fence").value_or(-1) >= previous_fence);
    previous_at = json_string(t, "at");
    previous_fence = json_int(t, "fence").value_or(-1);
  }

  // The same row, by its operation_id (every tenant's, or acme's) and by its client_key.
  CHECK(match_of(daemon, "operation_id=" + req.operation_id) == by_id);
  CHECK(match_of(daemon, "operation_id=" + req.operation_id + "&tenant_id=acme") == by_id);
  CHECK(matches_of(daemon, "operation_id=" + req.operation_id + "&tenant_id=globex").empty());
  CHECK(match_of(daemon, "client_key=" + json_string(view, "client_key")) == by_id);

  // Its refund, by its re_ id: a row of its own, with the payment listing it.
  const HttpResponse refund = post_refund(daemon.port(), acme_token, req.operation_id, "tl-refund", 400);
  REQUIRE_MESSAGE(refund.status == 201, refund.describe());
  const std::string refund_id = json_string(refund.json(), "id");
  REQUIRE(eventually([&] { return json_string(match_of(daemon, "id=" + refund_id).at("refund"), "state") == "SUCCEEDED"; }, 10s));
  const boost::json::object r = match_of(daemon, "id=" + refund_id);
  CHECK(json_string(r, "kind") == "refund");
  CHECK(r.at("payment").is_null());
  CHECK(json_string(r.at("refund"), "payment_id") == id);
  const std::vector<std::string> rs = steps(r);
  REQUIRE(rs.size() >= 2);
  CHECK(rs.front() == "->PROCESSING/intake");
  CHECK(json_string(entries(r, "transition").front(), "event_type") == "refund.created");
  CHECK(rs.back().starts_with("PROCESSING>SUCCEEDED/"));
  CHECK(match_of(daemon, "id=" + id).at("payment").at("refunds").as_array().size() == 1);
  // The operation_id of both a payment and a refund names each: a refund's operation_id is its own.
  CHECK(json_string(match_of(daemon, "operation_id=tl-refund&tenant_id=acme"), "kind") == "refund");

  // Unknown rows: no match, not an error.
  CHECK(matches_of(daemon, "id=pay_01HZZZZZZZZZZZZZZZZZZZZZZZ").empty());
  CHECK(matches_of(daemon, "id=re_01HZZZZZZZZZZZZZZZZZZZZZZZ").empty());
  // A pay_ id names a payment only: a refund's id with the other prefix finds nothing.
  CHECK(matches_of(daemon, "id=pay_" + refund_id.substr(3)).empty());
}

TEST_CASE("timeline: a payment whose retries run out, its case opened and resolved; the refusals") {
  RefusingPort nowhere;
  Daemon daemon(engine_daemon_config(
      {{.base_url = "http://127.0.0.1:" + std::to_string(nowhere.port()),
        .retry = "{max_attempts: 2, initial_backoff: 100ms, max_backoff: 200ms, give_up_after: 1h}"}}));
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail());

  const PaymentRequest req{.operation_id = unique_operation_id("tl-budget")};
  REQUIRE(post_payment(daemon.port(), acme_token, req).status == 201);
  const auto view = wait_for_case(daemon.port(), acme_token, req.operation_id, 10s);
  const auto recon = reconciliation_of(view);
  REQUIRE(!recon.is_null());
  const std::string id = json_string(view, "id");
  const std::string case_id = json_string(recon, "case_id");

  const boost::json::object open = match_of(daemon, "id=" + id);
  INFO("timeline: " << boost::json::serialize(open));
  const auto opened = entries(open, "case_opened");
  REQUIRE(opened.size() == 1);
  CHECK(json_string(opened[0], "case_id") == case_id);
  CHECK(json_string(opened[0], "reason") == "retry_budget_exhausted");
  const auto given_up = entries(open, "transition").back();
  CHECK(json_string(given_up, "cause") == "give_up");
  CHECK(json_string(given_up, "case_reason") == "retry_budget_exhausted");
  CHECK(json_string(given_up, "event_type") == "payment.escalated");
  // Connection refused is certainly not sent: the submits that failed leave it PROCESSING.
  for (const auto& t : entries(open, "transition")) CHECK(json_string(t, "to") == "PROCESSING");
  REQUIRE(open.at("cases").as_array().size() == 1);
  CHECK(json_string(open.at("cases").as_array()[0], "status") == "open");

  const HttpResponse resolved = http_request(
      daemon.port(), "POST", "/v1/reconciliation/" + case_id + "/resolve",
      Headers{admin_headers[0], admin_headers[1], {"X-Request-Id", "tl-resolve-1"}},
      R"({"outcome":"failed_final","note":"the vendor never saw it <b>(ticket 7)</b>"})");
  REQUIRE_MESSAGE(resolved.status == 200, resolved.describe());

  const boost::json::object after = match_of(daemon, "id=" + id);
  const auto closed = entries(after, "case_resolved");
  REQUIRE(closed.size() == 1);
  CHECK(json_string(closed[0], "case_id") == case_id);
  CHECK(json_string(closed[0], "outcome") == "failed_final");
  CHECK(json_string(closed[0], "by") == "admin");
  CHECK(json_string(closed[0], "note") == "the vendor never saw it <b>(ticket 7)</b>");  // as stored
  CHECK(closed[0].at("vendor_reference").is_null());
  const auto last = entries(after, "transition").back();
  CHECK(json_string(last, "from") == "PROCESSING");
  CHECK(json_string(last, "to") == "FAILED_FINAL");
  CHECK(json_string(last, "cause") == "resolve_failed_final");
  CHECK(json_string(last, "event_type") == "payment.failed");
  CHECK(json_string(last, "request_id") == "tl-resolve-1");
  CHECK(json_int(last, "fence").value_or(0) > json_int(given_up, "fence").value_or(0));
  // Sorted by time: the resolution after the opening.
  const auto& timeline = after.at("timeline").as_array();
  CHECK(json_string(timeline.back(), "at") >= json_string(opened[0], "at"));
  CHECK(json_string(timeline.front(), "cause") == "intake");

  // Refusals: no token, tenant token, none / two selectors, an unknown parameter, a malformed
  // value, tenant_id without operation_id, another method.
  CHECK(is_problem(http_request(daemon.port(), "GET", "/v1/admin/timeline?id=" + id, {}), 401, "unauthorized"));
  CHECK(is_problem(http_request(daemon.port(), "GET", "/v1/admin/timeline?id=" + id,
                                {{"Authorization", std::string("Bearer ") + acme_token}}),
                   401, "unauthorized"));
  auto get = [&](const std::string& query) {
    return http_request(daemon.port(), "GET", "/v1/admin/timeline" + query, admin_headers);
  };
  CHECK(is_invalid_query(get(""), "id", "required"));
  CHECK(is_invalid_query(get("?id=" + id + "&operation_id=" + req.operation_id), "id", "invalid_format"));
  CHECK(is_invalid_query(get("?id=" + id + "&colour=red"), "colour", "unknown_field"));
  CHECK(is_invalid_query(get("?id=rc_123"), "id", "invalid_format"));
  CHECK(is_invalid_query(get("?client_key=pay_123"), "client_key", "invalid_format"));
  CHECK(is_invalid_query(get("?id=" + id + "&tenant_id=acme"), "tenant_id", "invalid_format"));
  CHECK(http_request(daemon.port(), "POST", "/v1/admin/timeline?id=" + id, admin_headers).status == 405);
}
