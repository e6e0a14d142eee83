// docs/openapi.yaml against the running daemon. One payorchd (beside the demo vendor) is driven
// through a scenario for every documented (route, method, status); each answer must be one the
// document describes — its status, its media type, its required headers, a body that matches the
// schema (required fields and their JSON types, enums such as the problem types) — and every
// documented answer must have been provoked. So the document and the daemon cannot drift apart.
#include <doctest/doctest.h>
#include <signal.h>
#include <yaml-cpp/yaml.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <utility>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "support/daemon.h"
#include "support/http_client.h"
#include "support/payorch_api.h"
#include "support/database_probe.h"
#include "support/postgres_cluster.h"
#include "support/slowdown.h"
#include "support/vendor_callbacks.h"
#include "support/vendor_sim.h"

using namespace payorch::test;
using namespace std::chrono_literals;

namespace {

// The path of a route not bound to one path ("x-any-route"), and the method of a path's
// "x-other-methods".
constexpr const char* any_route = "*";
constexpr const char* other_method = "other";

struct Answer {
  std::string path;    // as documented: "/v1/payments/{operation_id}"
  std::string method;  // lower case, as the document keys it
  unsigned status = 0;
  auto operator<=>(const Answer&) const = default;
};

std::string describe(const Answer& a) {
  return a.method + " " + a.path + " " + std::to_string(a.status);
}

std::string lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

std::string media_type(const std::string& content_type) {
  std::string media = content_type.substr(0, content_type.find(';'));
  while (!media.empty() && media.back() == ' ') media.pop_back();
  return lower(media);
}

// The document, and the checks of an answer against it.
class OpenApi {
public:
  explicit OpenApi(const std::string& file) : root_(YAML::LoadFile(file)) {
    for (const auto& path : root_["paths"]) {
      const std::string name = path.first.as<std::string>();
      for (const auto& item : path.second) {
        const std::string key = item.first.as<std::string>();
        if (key == "x-other-methods") {
          documented_[{name, other_method, 405}] = root_["components"]["responses"]["MethodNotAllowed"];
          allow_[name] = item.second["allow"].as<std::string>();
          continue;
        }
        if (key.starts_with("x-") || key == "parameters" || key == "summary" || key == "description")
          continue;
        for (const auto& response : item.second["responses"])
          documented_[{name, key, response.first.as<unsigned>()}] = response.second;
      }
    }
    for (const auto& response : root_["x-any-route"])
      documented_[{any_route, any_route, response.first.as<unsigned>()}] = response.second;
  }

  // Checks one answer of the daemon to a request for a documented (path, method), and counts
  // it as provoked. `scenario` names the request in failure messages.
  void check(const std::string& path, const std::string& method, const std::string& scenario,
             const HttpResponse& r) {
    const Answer answer{path, method, r.status};
    INFO(scenario << ": " << describe(answer) << "\n" << r.describe());
    const auto it = documented_.find(answer);
    if (it == documented_.end()) {
      FAIL_CHECK("the daemon answered " << describe(answer) << ", which docs/openapi.yaml does not document");
      return;
    }
    provoked_.insert(answer);
    const YAML::Node response = resolve(it->second);

    for (const auto& header : response["headers"]) {
      const YAML::Node h = resolve(header.second);
      if (h["required"] && h["required"].as<bool>())
        CHECK_MESSAGE(!r.header(header.first.as<std::string>()).empty(),
                      "required header " << header.first.as<std::string>() << " is missing");
    }
    if (method == other_method) CHECK(r.header("Allow") == allow_.at(path));

    const std::string media = media_type(r.header("Content-Type"));
    const YAML::Node content = response["content"][media];
    if (!content) {
      FAIL_CHECK("Content-Type " << media << " is not documented for " << describe(answer));
      return;
    }
    if (media == "application/problem+json")
      CHECK_MESSAGE(!problem_type(r).starts_with("not a problem"), problem_type(r));
    if (media != "application/json" && media != "application/problem+json") return;
    boost::json::value body;
    try {
      body = boost::json::parse(r.body);
    } catch (const std::exception& e) {
      FAIL_CHECK("the body is not JSON: " << e.what());
      return;
    }
    std::vector<std::string> errors;
    check_schema(content["schema"], body, "body", errors);
    for (const std::string& e : errors) FAIL_CHECK(e);
  }

  // Documented answers no scenario provoked.
  std::vector<Answer> unprovoked() const {
    std::vector<Answer> out;
    for (const auto& [answer, node] : documented_)
      if (!provoked_.contains(answer)) out.push_back(answer);
    return out;
  }
  std::size_t documented_count() const { return documented_.size(); }

private:
  // Follows a "$ref: '#/a/b/c'" within the document.
  YAML::Node resolve(YAML::Node node) const {
    while (node.IsMap() && node["$ref"]) {
      const std::string ref = node["$ref"].as<std::string>();
      REQUIRE_MESSAGE(ref.starts_with("#/"), ref);
      // reset(), not `=`: assigning a yaml-cpp node writes through to the node it refers to.
      YAML::Node at;
      at.reset(root_);
      std::size_t from = 2;
      while (from <= ref.size()) {
        const std::size_t slash = std::min(ref.find('/', from), ref.size());
        at.reset(std::as_const(at)[ref.substr(from, slash - from)]);
        REQUIRE_MESSAGE(at.IsDefined(), "unresolved " << ref);
        from = slash + 1;
      }
      node.reset(at);
    }
    return node;
  }

  static bool has_type(const boost::json::value& v, const std::string& type) {
    if (type == "object") return v.is_object();
    if (type == "array") return v.is_array();
    if (type == "string") return v.is_string();
    if (type == "integer") return v.is_int64() || v.is_uint64();
    if (type == "number") return v.is_number();
    if (type == "boolean") return v.is_bool();
    if (type == "null") return v.is_null();
    FAIL_CHECK("unknown schema type " << type);
    return false;
  }

  static std::string scalar_of(const boost::json::value& v) {
    if (v.is_string()) return std::string(v.as_string());
    if (v.is_bool()) return v.as_bool() ? "true" : "false";
    if (v.is_int64()) return std::to_string(v.as_int64());
    if (v.is_uint64()) return std::to_string(v.as_uint64());
    return "(not a scalar)";
  }

  // The subset of JSON Schema the document uses: $ref, allOf, oneOf (as anyOf), type (one or a
  // list), enum, required, properties, additionalProperties (a schema), items.
  void check_schema(YAML::Node schema, const boost::json::value& v, const std::string& where,
                    std::vector<std::string>& errors) const {
    schema.reset(resolve(schema));
    if (!schema || !schema.IsMap()) return;
    for (const auto& part : schema["allOf"]) check_schema(part, v, where, errors);
    if (const YAML::Node one_of = schema["oneOf"]) {
      bool any = false;
      std::vector<std::string> all;
      for (const auto& option : one_of) {
        std::vector<std::string> e;
        check_schema(option, v, where, e);
        if (e.empty()) any = true;
        all.insert(all.end(), e.begin(), e.end());
      }
      if (!any) errors.push_back(where + ": matches none of oneOf (" + (all.empty() ? "" : all.front()) + ")");
    }
    if (const YAML::Node type = schema["type"]) {
      std::vector<std::string> types;
      if (type.IsSequence())
        for (const auto& t : type) types.push_back(t.as<std::string>());
      else
        types.push_back(type.as<std::string>());
      bool ok = false;
      for (const std::string& t : types) ok = ok || has_type(v, t);
      if (!ok) {
        errors.push_back(where + ": " + boost::json::serialize(v) + " is not of type " + YAML::Dump(type));
        return;
      }
    }
    if (const YAML::Node values = schema["enum"]) {
      bool found = false;
      for (const auto& e : values) found = found || e.as<std::string>() == scalar_of(v);
      if (!found) errors.push_back(where + ": " + boost::json::serialize(v) + " is not one of " + YAML::Dump(values));
    }
    if (v.is_object()) {
      const boost::json::object& o = v.as_object();
      for (const auto& name : schema["required"])
        if (!o.contains(name.as<std::string>()))
          errors.push_back(where + ": required field " + name.as<std::string>() + " is missing");
      const YAML::Node properties = schema["properties"];
      for (const auto& [key, value] : o) {
        const std::string k(key);
        if (properties && properties[k]) check_schema(properties[k], value, where + "." + k, errors);
        else if (schema["additionalProperties"] && schema["additionalProperties"].IsMap())
          check_schema(schema["additionalProperties"], value, where + "." + k, errors);
      }
    }
    if (v.is_array() && schema["items"]) {
      const boost::json::array& a = v.as_array();
      for (std::size_t i = 0; i < a.size(); ++i)
        check_schema(schema["items"], a[i], where + "[" + std::to_string(i) + "]", errors);
    }
  }

  YAML::Node root_;
  std::map<Answer, YAML::Node> documented_;
  std::map<std::string, std::string> allow_;
  std::set<Answer> provoked_;
};

Headers bearer(std::string_view token) { return {{"Authorization", "Bearer " + std::string(token)}}; }

Headers admin_json() { return {{"Authorization", std::string("Bearer ") + admin_token}, {"Content-Type", "application/json"}}; }

// The one response to raw request bytes (for what a well-behaved client cannot send).
HttpResponse raw_answer(std::uint16_t port, const std::string& bytes) {
  const std::vector<HttpResponse> answers = raw_responses(send_and_read(port, bytes));
  REQUIRE_MESSAGE(answers.size() == 1, "expected one response to:\n" << bytes);
  return answers.front();
}

DaemonConfig conformance_config(const VendorSim& sim) {
  DaemonConfig config;
  // read_timeout short, so that the 408 scenario is quick; few connections, so that the
  // reserved ones are reached with a handful; one short busy retry, for the storage-busy one.
  config.server = R"(server: {listen: "127.0.0.1:0", max_body_bytes: 65536, read_timeout: 2s,
                             max_connections: 20, reserved_connections: 3})";
  if (test_driver() == TestDriver::sqlite)
    config.database = R"(database: {driver: sqlite, path: "{dir}/payorch.db", busy_retries: 1, busy_timeout: 50ms})";
  SimProviderConfig charging{.name = "sim", .base_url = sim.base_url()};
  // Unreachable with a budget of one call: its payments go to a retry_budget_exhausted case.
  SimProviderConfig down{.name = "down", .base_url = "http://127.0.0.1:9",
                         .retry = "{max_attempts: 1, initial_backoff: 100ms, max_backoff: 200ms, give_up_after: 1h}"};
  // A cap of zero: always at it, so every new intent is refused 503 intake-paused.
  SimProviderConfig paused{.name = "paused", .base_url = sim.base_url(),
                           .risk = "{max_unknown_count: 0, max_unknown_amount_minor: 0}"};
  config.providers = providers_yaml({charging, down, paused});
  config.routing = "routing: {default_provider: sim}";
  config.engine = fast_engine_yaml;
  return config;
}

}  // namespace

TEST_CASE("openapi: every documented route, method and status is what the running daemon answers") {
  OpenApi doc(std::string(PAYORCH_SOURCE_DIR) + "/docs/openapi.yaml");
  REQUIRE(doc.documented_count() > 0);

  VendorSim sim;
  Daemon daemon(conformance_config(sim));
  // The first callback that reaches the database fails before its commit: the 503 scenario.
  daemon.set_env("PAYORCH_FAILPOINTS", "callback.before_commit=error:1");
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail(8000));
  const std::uint16_t port = daemon.port();
  auto request = [port](std::string_view method, std::string_view target, const Headers& headers = {},
                        std::string body = {}) { return http_request(port, method, target, headers, std::move(body)); };
  const std::string acme = acme_token;
  const std::string admin = admin_token;

  // ---- health ----
  doc.check("/healthz", "get", "alive", request("GET", "/healthz"));
  doc.check("/healthz", other_method, "DELETE", request("DELETE", "/healthz"));
  HttpResponse ready;
  CHECK(eventually([&] { return (ready = request("GET", "/readyz")).status == 200; }));
  doc.check("/readyz", "get", "ready", ready);
  doc.check("/readyz", other_method, "POST", request("POST", "/readyz"));
  doc.check("/status", "get", "figures", request("GET", "/status"));
  doc.check("/status", other_method, "PUT", request("PUT", "/status"));
  doc.check("/metrics", "get", "prometheus text", request("GET", "/metrics"));
  doc.check("/metrics", other_method, "POST", request("POST", "/metrics"));

  // ---- the operator console's page ----
  doc.check("/console", "get", "the page", request("GET", "/console"));
  doc.check("/console", other_method, "POST", request("POST", "/console"));
  doc.check("/console/{asset}", "get", "the script", request("GET", "/console/console.js"));
  doc.check("/console/{asset}", "get", "the stylesheet", request("GET", "/console/console.css"));
  doc.check("/console/{asset}", "get", "no such file", request("GET", "/console/missing.js"));
  doc.check("/console/{asset}", other_method, "DELETE", request("DELETE", "/console/console.js"));

  // ---- POST /v1/payments ----
  const std::string payments = "/v1/payments";
  const PaymentRequest paid{.operation_id = "oa-paid", .amount_minor = 1250};
  doc.check(payments, "post", "no token", request("POST", payments, {{"Content-Type", "application/json"}}, paid.to_json()));
  doc.check(payments, "post", "text/plain",
            request("POST", payments, {{"Authorization", "Bearer " + acme}, {"Content-Type", "text/plain"}}, paid.to_json()));
  doc.check(payments, "post", "unparseable JSON", request("POST", payments, tenant_headers(acme), "{"));
  doc.check(payments, "post", "header and body disagree",
            post_payment(port, acme, paid, {{"Idempotency-Key", "oa-other"}}));
  doc.check(payments, "post", "invalid field",
            request("POST", payments, tenant_headers(acme),
                    R"({"operation_id":"oa-bad","amount_minor":"12","currency":"EUR","payee":"m","source":"tok_ok"})"));
  doc.check(payments, "post", "card number as source",
            post_payment(port, acme, PaymentRequest{.operation_id = "oa-card", .source = "4111 1111 1111 1111"}));
  const HttpResponse created = post_payment(port, acme, paid, {{"Prefer", "wait=5"}});
  doc.check(payments, "post", "new intent, Prefer wait", created);
  REQUIRE(created.status == 201);
  CHECK(created.header("Preference-Applied") == "wait=5");
  const boost::json::value paid_view = created.json();
  doc.check(payments, "post", "replay", post_payment(port, acme, paid));
  PaymentRequest reused = paid;
  reused.amount_minor = 999;
  doc.check(payments, "post", "key reused", post_payment(port, acme, reused));
  HttpResponse refused;
  int attempt = 0;
  CHECK(eventually([&] {
    refused = post_payment(port, acme, PaymentRequest{.operation_id = "oa-paused-" + std::to_string(attempt++),
                                                      .provider = "paused"});
    return refused.status == 503;
  }));
  doc.check(payments, "post", "provider at its risk cap", refused);
  CHECK(is_problem(refused, 503, "intake-paused"));
  doc.check(payments, other_method, "DELETE", request("DELETE", payments, bearer(acme)));

  // ---- GET /v1/payments, /v1/payments/{operation_id}, /v1/events ----
  doc.check(payments, "get", "list", request("GET", payments + "?limit=10", bearer(acme)));
  doc.check(payments, "get", "no token", request("GET", payments));
  doc.check(payments, "get", "limit out of range", request("GET", payments + "?limit=0", bearer(acme)));
  const std::string payment = "/v1/payments/{operation_id}";
  doc.check(payment, "get", "found", request("GET", payments + "/oa-paid", bearer(acme)));
  doc.check(payment, "get", "no token", request("GET", payments + "/oa-paid"));
  doc.check(payment, "get", "another tenant's", request("GET", payments + "/oa-paid", bearer(globex_token)));
  doc.check(payment, other_method, "PUT", request("PUT", payments + "/oa-paid", bearer(acme)));
  doc.check("/v1/events", "get", "feed", request("GET", "/v1/events?limit=50", bearer(acme)));
  doc.check("/v1/events", "get", "no token", request("GET", "/v1/events"));
  doc.check("/v1/events", "get", "bad limit", request("GET", "/v1/events?limit=abc", bearer(acme)));
  doc.check("/v1/events", other_method, "POST", request("POST", "/v1/events", bearer(acme)));

  // ---- vendor callbacks ----
  const std::string callback = "/v1/callbacks/{provider}";
  const std::string signed_body = SimCallback::for_payment(paid_view, "evt_oa_1").body();
  doc.check(callback, "post", "unknown provider", post_sim_callback(port, signed_body, sim_callback_secret, std::nullopt, "nope"));
  doc.check(callback, other_method, "GET", request("GET", "/v1/callbacks/sim"));
  doc.check(callback, "post", "unsigned", post_sim_callback(port, signed_body, std::nullopt));
  doc.check(callback, "post", "signed, unreadable", post_sim_callback(port, "not json"));
  const HttpResponse not_recorded = post_sim_callback(port, signed_body);
  doc.check(callback, "post", "storage failure before the commit", not_recorded);
  doc.check(callback, "post", "recorded", post_sim_callback(port, signed_body));
  doc.check(callback, "post", "duplicate", post_sim_callback(port, signed_body));

  // ---- reconciliation and admin ----
  const HttpResponse stuck = post_payment(port, acme, PaymentRequest{.operation_id = "oa-stuck", .provider = "down"});
  REQUIRE_MESSAGE(stuck.status == 201, stuck.describe());
  std::string case_id;
  CHECK(eventually(
      [&] {
        const HttpResponse r = request("GET", payments + "/oa-stuck", bearer(acme));
        const auto view = r.json();
        if (view.at("reconciliation").is_null()) return false;
        case_id = json_string(view.at("reconciliation"), "case_id");
        return true;
      },
      10s));
  REQUIRE(!case_id.empty());
  const std::string cases = "/v1/reconciliation";
  doc.check(cases, "get", "open cases", request("GET", cases + "?status=open", bearer(admin)));
  doc.check(cases, "get", "tenant token", request("GET", cases, bearer(acme)));
  doc.check(cases, "get", "bad status", request("GET", cases + "?status=bogus", bearer(admin)));
  doc.check(cases, other_method, "DELETE", request("DELETE", cases, bearer(admin)));
  const std::string one_case = "/v1/reconciliation/{case_id}";
  doc.check(one_case, "get", "the case", request("GET", cases + "/" + case_id, bearer(admin)));
  doc.check(one_case, "get", "no token", request("GET", cases + "/" + case_id));
  doc.check(one_case, "get", "no such case", request("GET", cases + "/rc_missing", bearer(admin)));
  doc.check(one_case, other_method, "DELETE", request("DELETE", cases + "/" + case_id, bearer(admin)));
  const std::string resolve = "/v1/reconciliation/{case_id}/resolve";
  const std::string resolve_target = cases + "/" + case_id + "/resolve";
  const std::string resolution = R"({"outcome":"failed_final","note":"the vendor never saw it"})";
  doc.check(resolve, "post", "no token", request("POST", resolve_target, {{"Content-Type", "application/json"}}, resolution));
  doc.check(resolve, "post", "text/plain",
            request("POST", resolve_target, {{"Authorization", "Bearer " + admin}, {"Content-Type", "text/plain"}}, resolution));
  doc.check(resolve, "post", "unparseable JSON", request("POST", resolve_target, admin_json(), "{"));
  doc.check(resolve, "post", "invalid outcome", request("POST", resolve_target, admin_json(), R"({"outcome":"maybe","note":"x"})"));
  Headers claimed = admin_json();
  claimed.emplace_back("Payorch-Operator", "someone-else");
  doc.check(resolve, "post", "another operator claimed", request("POST", resolve_target, claimed, resolution));
  doc.check(resolve, "post", "no such case", request("POST", cases + "/rc_missing/resolve", admin_json(), resolution));
  doc.check(resolve, "post", "resolved", request("POST", resolve_target, admin_json(), resolution));
  doc.check(resolve, "post", "resolved again", request("POST", resolve_target, admin_json(), resolution));
  doc.check(resolve, other_method, "GET", request("GET", resolve_target, bearer(admin)));
  const std::string import = "/v1/reconciliation/import";
  const Headers csv{{"Authorization", "Bearer " + admin}, {"Content-Type", "text/csv"}};
  const std::string header_only = "reference,status,amount_minor,currency,vendor_reference\n";
  doc.check(import, "post", "no token", request("POST", import + "?provider=sim", {{"Content-Type", "text/csv"}}, header_only));
  doc.check(import, "post", "no provider", request("POST", import, csv, header_only));
  doc.check(import, "post", "not text/csv", request("POST", import + "?provider=sim", admin_json(), header_only));
  doc.check(import, "post", "no header", request("POST", import + "?provider=sim", csv, "garbage\n"));
  doc.check(import, "post", "applied", request("POST", import + "?provider=sim", csv, header_only));
  doc.check(import, other_method, "GET", request("GET", import, bearer(admin)));
  const std::string any_payment = "/v1/admin/payments/{payment_id}";
  const std::string paid_target = "/v1/admin/payments/" + json_string(paid_view, "id");
  doc.check(any_payment, "get", "found", request("GET", paid_target, bearer(admin)));
  doc.check(any_payment, "get", "no token", request("GET", paid_target));
  doc.check(any_payment, "get", "no such payment", request("GET", "/v1/admin/payments/pay_missing", bearer(admin)));
  doc.check(any_payment, other_method, "POST", request("POST", paid_target, bearer(admin)));
  const std::string find_payments = "/v1/admin/payments";
  doc.check(find_payments, "get", "by operation_id", request("GET", find_payments + "?operation_id=oa-paid", bearer(admin)));
  doc.check(find_payments, "get", "no token", request("GET", find_payments + "?operation_id=oa-paid"));
  doc.check(find_payments, "get", "no operation_id", request("GET", find_payments, bearer(admin)));
  doc.check(find_payments, other_method, "POST", request("POST", find_payments, bearer(admin)));

  // ---- refunds: POST and GET /v1/payments/{payment_operation_id}/refunds, /v1/refunds/{operation_id},
  // the admin's view, refund events in the feed ----
  const std::string refunds = "/v1/payments/{payment_operation_id}/refunds";
  const std::string paid_refunds = payments + "/oa-paid/refunds";
  const std::string refund_body = R"({"operation_id":"oa-refund","amount_minor":500,"reason":"customer asked"})";
  doc.check(refunds, "post", "no token",
            request("POST", paid_refunds, {{"Content-Type", "application/json"}}, refund_body));
  doc.check(refunds, "post", "text/plain",
            request("POST", paid_refunds, {{"Authorization", "Bearer " + acme}, {"Content-Type", "text/plain"}},
                    refund_body));
  doc.check(refunds, "post", "unparseable JSON", request("POST", paid_refunds, tenant_headers(acme), "{"));
  doc.check(refunds, "post", "invalid field",
            request("POST", paid_refunds, tenant_headers(acme), R"({"operation_id":"oa-refund-bad","amount_minor":"5"})"));
  doc.check(refunds, "post", "no such payment",
            request("POST", payments + "/oa-missing/refunds", tenant_headers(acme), refund_body));
  const HttpResponse refund_created = request("POST", paid_refunds, tenant_headers(acme), refund_body);
  doc.check(refunds, "post", "new refund", refund_created);
  REQUIRE_MESSAGE(refund_created.status == 201, refund_created.describe());
  const boost::json::value created_refund = refund_created.json();
  doc.check(refunds, "post", "replay", request("POST", paid_refunds, tenant_headers(acme), refund_body));
  doc.check(refunds, "post", "key reused",
            request("POST", paid_refunds, tenant_headers(acme), R"({"operation_id":"oa-refund","amount_minor":600})"));
  const HttpResponse too_much =
      request("POST", paid_refunds, tenant_headers(acme), R"({"operation_id":"oa-refund-big","amount_minor":1000})");
  doc.check(refunds, "post", "more than the payment has left", too_much);
  CHECK(is_problem(too_much, 422, "refund-exceeds-payment"));
  const HttpResponse failed_payment = request("POST", payments + "/oa-stuck/refunds", tenant_headers(acme),
                                              R"({"operation_id":"oa-refund-stuck","amount_minor":1})");
  doc.check(refunds, "post", "a FAILED_FINAL payment", failed_payment);
  CHECK(is_problem(failed_payment, 409, "payment-not-refundable"));
  doc.check(refunds, other_method, "DELETE", request("DELETE", paid_refunds, bearer(acme)));
  doc.check(refunds, "get", "list", request("GET", paid_refunds, bearer(acme)));
  doc.check(refunds, "get", "no token", request("GET", paid_refunds));
  doc.check(refunds, "get", "another tenant's payment", request("GET", paid_refunds, bearer(globex_token)));
  const std::string one_refund = "/v1/refunds/{operation_id}";
  HttpResponse refund_read;
  CHECK(eventually([&] {
    refund_read = request("GET", "/v1/refunds/oa-refund", bearer(acme));
    return refund_read.status == 200 && json_string(refund_read.json(), "state") == "SUCCEEDED";
  }, 10s));
  doc.check(one_refund, "get", "found, SUCCEEDED", refund_read);
  doc.check(one_refund, "get", "no token", request("GET", "/v1/refunds/oa-refund"));
  doc.check(one_refund, "get", "another tenant's", request("GET", "/v1/refunds/oa-refund", bearer(globex_token)));
  doc.check(one_refund, other_method, "PUT", request("PUT", "/v1/refunds/oa-refund", bearer(acme)));
  const HttpResponse feed = request("GET", "/v1/events?limit=200", bearer(acme));
  doc.check("/v1/events", "get", "feed with refund events", feed);
  CHECK(feed.body.find("\"refund.succeeded\"") != std::string::npos);
  doc.check(any_payment, "get", "found, with its refund", request("GET", paid_target, bearer(admin)));
  const std::string any_refund = "/v1/admin/refunds/{refund_id}";
  const std::string refund_target = "/v1/admin/refunds/" + json_string(created_refund, "id");
  doc.check(any_refund, "get", "by id", request("GET", refund_target, bearer(admin)));
  doc.check(any_refund, "get", "by operation_id and tenant",
            request("GET", "/v1/admin/refunds/oa-refund?tenant_id=acme", bearer(admin)));
  doc.check(any_refund, "get", "tenant token", request("GET", refund_target, bearer(acme)));
  doc.check(any_refund, "get", "no such refund", request("GET", "/v1/admin/refunds/re_missing", bearer(admin)));
  doc.check(any_refund, "get", "unknown query parameter", request("GET", refund_target + "?colour=red", bearer(admin)));
  doc.check(any_refund, other_method, "POST", request("POST", refund_target, bearer(admin)));
  const std::string timeline = "/v1/admin/timeline";
  doc.check(timeline, "get", "a payment with its refund",
            request("GET", timeline + "?id=" + json_string(paid_view, "id"), bearer(admin)));
  doc.check(timeline, "get", "a refund", request("GET", timeline + "?operation_id=oa-refund", bearer(admin)));
  doc.check(timeline, "get", "no token", request("GET", timeline + "?operation_id=oa-paid"));
  doc.check(timeline, "get", "no selector", request("GET", timeline, bearer(admin)));
  doc.check(timeline, other_method, "POST", request("POST", timeline + "?operation_id=oa-paid", bearer(admin)));

  // ---- writes while another process holds the database's write lock (SQLite), or while the
  // database server is down (PostgreSQL) ----
  if (!daemon.database_url().empty()) {
    PostgresCluster* cluster = shared_postgres();
    REQUIRE(cluster != nullptr);
    cluster->stop_server();
    const HttpResponse down = post_payment(port, acme, PaymentRequest{.operation_id = "oa-down"});
    doc.check(payments, "post", "database down", down);
    CHECK(is_problem(down, 503, "storage-unavailable"));
    doc.check(resolve, "post", "database down", request("POST", resolve_target, admin_json(), resolution));
    doc.check(import, "post", "database down", request("POST", import + "?provider=sim", csv, header_only));
    doc.check(refunds, "post", "database down",
              request("POST", paid_refunds, tenant_headers(acme), R"({"operation_id":"oa-refund-down","amount_minor":1})"));
    doc.check("/readyz", "get", "database down", request("GET", "/readyz"));
    cluster->start_server();
    CHECK(eventually([&] { return request("GET", "/readyz").status == 200; }, scaled(15s)));
  } else {
    DatabaseProbe lock(daemon, SqliteProbe::Mode::for_writing);
    REQUIRE(eventually([&] {
      try {
        lock.exec("BEGIN IMMEDIATE");
        return true;
      } catch (const std::exception&) {
        return false;  // payorchd is mid-commit
      }
    }));
    const HttpResponse busy = post_payment(port, acme, PaymentRequest{.operation_id = "oa-busy"});
    doc.check(payments, "post", "database locked", busy);
    CHECK(is_problem(busy, 503, "storage-busy"));
    doc.check(resolve, "post", "database locked", request("POST", resolve_target, admin_json(), resolution));
    doc.check(import, "post", "database locked", request("POST", import + "?provider=sim", csv, header_only));
    doc.check(refunds, "post", "database locked",
              request("POST", paid_refunds, tenant_headers(acme), R"({"operation_id":"oa-refund-busy","amount_minor":1})"));
    lock.exec("ROLLBACK");
  }

  // ---- answers of any route ----
  doc.check(any_route, any_route, "unknown path", request("GET", "/v1/nowhere"));
  doc.check(any_route, any_route, "HTTP/1.1 without Host", raw_answer(port, "GET /healthz HTTP/1.1\r\n\r\n"));
  doc.check(any_route, any_route, "gzip, chunked",
            raw_answer(port, "POST /v1/payments HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"));
  doc.check(any_route, any_route, "headers over the limit",
            request("GET", "/healthz", {{"X-Filler", std::string(17 * 1024, 'a')}}));
  doc.check(any_route, any_route, "body over the limit",
            request("POST", payments, tenant_headers(acme), std::string(70 * 1024, ' ')));
  {
    RawConnection silent(port);
    REQUIRE(silent.send("GET /healthz HTTP/1.1\r\nHost: x\r\n"));  // and never the blank line
    doc.check(any_route, any_route, "request not complete within read_timeout", silent.read_response(6s));
  }

  // payorchd's open files once the connections of earlier scenarios are let go (the same count
  // for 200 ms, at most 2 s).
  auto settled_fds = [&daemon] {
    std::size_t last = open_fds(daemon.pid());
    int same = 0;
    for (int i = 0; i < 40 && same < 4; ++i) {
      std::this_thread::sleep_for(50ms);
      const std::size_t now = open_fds(daemon.pid());
      same = now == last ? same + 1 : 0;
      last = now;
    }
    return last;
  };
  const std::size_t quiet = settled_fds();
  {
    // Every ordinary connection is busy mid-request; a tenant request on a reserved one is
    // turned away.
    const std::size_t baseline = quiet;
    std::vector<std::unique_ptr<RawConnection>> busy;
    for (int i = 0; i < 17; ++i) {
      busy.push_back(std::make_unique<RawConnection>(port));
      REQUIRE(busy.back()->send("GET /healthz HTTP/1.1\r\nHost: x\r\n"));
    }
    // All accepted (within read_timeout, 2 s, after which they are answered 408).
    CHECK(eventually([&] { return open_fds(daemon.pid()) >= baseline + busy.size(); }, 1s));
    HttpResponse turned_away;
    CHECK(eventually(
        [&] {
          RawConnection tenant(port);
          REQUIRE(tenant.send(raw_request("GET", payments, bearer(acme), "")));
          turned_away = tenant.read_response(1s);
          return turned_away.status == 503;
        },
        1s));
    doc.check(any_route, any_route, "a tenant request on a reserved connection", turned_away);
  }

  // ---- the drain: requests still arriving at SIGTERM are refused ----
  const std::string late_body = PaymentRequest{.operation_id = "oa-late"}.to_json();
  const std::string late_post = raw_request("POST", payments, tenant_headers(acme), late_body);
  const std::string late_ready = raw_request("GET", "/readyz", {{"Content-Type", "text/plain"}}, "..");
  const std::size_t baseline = settled_fds();  // the busy connections let go
  RawConnection posting(port);
  RawConnection probing(port);
  REQUIRE(posting.send(late_post.substr(0, late_post.size() - 5)));
  REQUIRE(probing.send(late_ready.substr(0, late_ready.size() - 1)));
  // Both accepted before the drain stops accepting, and read up to the missing bytes.
  CHECK(eventually([&] { return open_fds(daemon.pid()) >= baseline + 2; }));
  std::this_thread::sleep_for(100ms);
  REQUIRE(::kill(daemon.pid(), SIGTERM) == 0);
  REQUIRE(eventually([&] { return read_file(daemon.log_path()).find("event=shutdown.draining") != std::string::npos; }));
  REQUIRE(posting.send(late_post.substr(late_post.size() - 5)));
  REQUIRE(probing.send(late_ready.substr(late_ready.size() - 1)));
  const HttpResponse drained_post = posting.read_response(5s);
  const HttpResponse drained_ready = probing.read_response(5s);
  doc.check(payments, "post", "draining", drained_post);
  CHECK(is_problem(drained_post, 503, "shutting-down"));
  doc.check("/readyz", "get", "draining", drained_ready);
  CHECK(is_problem(drained_ready, 503, "shutting-down"));

  for (const Answer& a : doc.unprovoked())
    FAIL_CHECK("docs/openapi.yaml documents " << describe(a) << ", and no scenario provoked it");
}
