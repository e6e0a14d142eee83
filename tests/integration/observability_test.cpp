// What an operator sees (docs/contract.md §7): GET /metrics, GET /status and the daemon's log, after a mixed
// workload against the real payorchd and two real payorch-vendor-sims — successes, a decline, a
// pending charge settled by lookup, a lost answer recovered by lookup, a receipt-only vendor's
// lost answer left UNKNOWN in front of a human, a payment settled by a signed vendor callback, a
// callback naming no payment, forged signatures, webhooks delivered and refused.
//
// Checked against the records, not against expectations of timing: /status and the gauges
// equal counts read from the SQLite file; the transition counter equals the state changes in the
// outbox; vendor calls equal the attempt counts; request counts by route and status equal the
// requests this test sent; `promtool check metrics` accepts the exposition; neither /metrics nor
// /status shows tenant data, and the log shows no token, secret or full source token.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/daemon.h"
#include "support/engine_checks.h"
#include "support/payorch_api.h"
#include "support/prometheus.h"
#include "support/vendor_callbacks.h"
#include "support/vendor_sim.h"
#include "support/webhook_receiver.h"

using namespace payorch::test;
using namespace std::chrono_literals;

namespace {

constexpr const char* acme_webhook_secret = "acme-webhook-secret-obs-7f3a";
constexpr const char* globex_webhook_secret = "globex-webhook-secret-obs-91c2";
constexpr const char* receipt_api_key = "receipt-key-obs-5521";

std::string scrape(std::uint16_t port) {
  const HttpResponse r = http_request(port, "GET", "/metrics");
  REQUIRE_MESSAGE(r.status == 200, r.describe());
  CHECK(r.header("content-type").starts_with("text/plain; version=0.0.4"));
  return r.body;
}

// The first executable `name` on PATH, "" if none.
std::string find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "/usr/local/bin:/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

struct ToolResult {
  int status = -1;
  std::string output;
};

// Runs `promtool check metrics` on `text` (promtool reads the exposition from stdin).
ToolResult promtool_check(const std::string& promtool, const std::string& dir, const std::string& text) {
  const std::string file = dir + "/metrics.txt";
  std::ofstream(file) << text;
  ToolResult r;
  FILE* p = ::popen(("'" + promtool + "' check metrics < '" + file + "' 2>&1").c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) r.output.append(buf, n);
  r.status = ::pclose(p);
  return r;
}

Headers admin_headers() { return {{"Authorization", std::string("Bearer ") + admin_token}}; }

// How many requests of each (route, method, status) this test sent, as the series of
// payorch_http_requests_total names them.
class SentRequests {
public:
  explicit SentRequests(std::uint16_t port) : port_(port) {}
  HttpResponse send(const std::string& route, std::string_view method, std::string_view target,
                    const Headers& headers = {}, std::string body = {}) {
    HttpResponse r = http_request(port_, method, target, headers, std::move(body));
    ++counts_["payorch_http_requests_total{route=\"" + route + "\",method=\"" + std::string(method) +
              "\",status=\"" + std::to_string(r.status) + "\"}"];
    ++by_route_[route];
    return r;
  }
  void add(const std::string& route, std::string_view method, unsigned status) {
    ++counts_["payorch_http_requests_total{route=\"" + route + "\",method=\"" + std::string(method) +
              "\",status=\"" + std::to_string(status) + "\"}"];
    ++by_route_[route];
  }
  const std::map<std::string, int>& counts() const { return counts_; }
  const std::map<std::string, int>& by_route() const { return by_route_; }

private:
  std::uint16_t port_;
  std::map<std::string, int> counts_;
  std::map<std::string, int> by_route_;
};

// State changes recorded in the outbox, by "from>to": each event's payment view carries the
// state after it; payment.created starts at PROCESSING.
std::map<std::string, int> state_changes_in_outbox(DatabaseProbe& db) {
  std::map<std::string, int> out;
  std::map<std::string, std::string> state;
  for (const SqlRow& row : db.query("SELECT payment_id, type, payload FROM outbox ORDER BY seq")) {
    const std::string id = row.at("payment_id").value_or("");
    const auto payload = boost::json::parse(row.at("payload").value_or("{}"));
    const std::string now = json_string(payload.at("payment"), "state");
    if (row.at("type") == "payment.created") {
      state[id] = now;
      continue;
    }
    if (state[id] != now) ++out[state[id] + ">" + now];
    state[id] = now;
  }
  return out;
}

}  // namespace

TEST_CASE("observability: /metrics, /status and the log agree with the records after a mixed workload") {
  VendorSim sim({"--pending-delay", "1s"});
  VendorSim receipt({"--api-key", receipt_api_key});
  sim.add_fault("commit_then_5xx", 1, std::nullopt, "tok_ok");      // one lost answer, recovered by lookup
  receipt.add_fault("commit_then_5xx", 1, std::nullopt, "tok_ok");  // one lost answer nobody can recover
  receipt.set_config(boost::json::object{{"lookup_enabled", false}});
  WebhookReceiver acme_hook;
  acme_hook.answer_with(503);  // acme's events stay undelivered: the outbox backlog
  WebhookReceiver globex_hook;

  DaemonConfig config = engine_daemon_config(
      {{.name = "sim", .base_url = sim.base_url(), .retry = roomy_retry},
       {.name = "receipt",
        .base_url = receipt.base_url(),
        .api_key = receipt_api_key,
        .contract = "{key_retention: 24h, recovery: none, not_found_final_after: never}",
        .retry = roomy_retry}});
  config.tenants =
      "tenants:\n"
      "  - id: acme\n"
      "    token: \"acme-token-123\"\n"
      "    webhook: {url: \"" + acme_hook.url() + "\", secret: \"" + acme_webhook_secret +
      "\", timeout: 2s, initial_backoff: 200ms, max_backoff: 1s}\n"
      "  - id: globex\n"
      "    token: \"globex-token-123\"\n"
      "    webhook: {url: \"" + globex_hook.url() + "\", secret: \"" + globex_webhook_secret +
      "\", timeout: 2s, initial_backoff: 200ms, max_backoff: 1s}";
  Daemon daemon(config);
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail(8192));
  const std::uint16_t port = daemon.port();

  // ---- The workload ----
  struct Posted {
    std::string token;
    PaymentRequest req;
  };
  std::vector<Posted> posted{
      {acme_token, {.operation_id = unique_operation_id("obs-ok"), .payee = "payee-obs-a", .source = "tok_ok"}},
      {acme_token, {.operation_id = unique_operation_id("obs-ok"), .amount_minor = 2200, .currency = "USD",
                    .payee = "payee-obs-b", .source = "tok_ok"}},
      {acme_token, {.operation_id = unique_operation_id("obs-decline"), .amount_minor = 3300,
                    .payee = "payee-obs-c", .source = "tok_decline"}},
      {acme_token, {.operation_id = unique_operation_id("obs-pending"), .amount_minor = 4400,
                    .payee = "payee-obs-d", .source = "tok_pending"}},
      {acme_token, {.operation_id = unique_operation_id("obs-unknown"), .amount_minor = 5500,
                    .payee = "payee-obs-e", .source = "tok_ok", .provider = "receipt"}},
      {globex_token, {.operation_id = unique_operation_id("obs-g-ok"), .amount_minor = 6600,
                      .payee = "payee-obs-f", .source = "tok_ok"}},
      {globex_token, {.operation_id = unique_operation_id("obs-g-callback"), .amount_minor = 7700,
                      .payee = "payee-obs-g", .source = "tok_pending", .provider = "receipt"}},
  };
  for (const auto& p : posted) {
    const HttpResponse r = post_payment(port, p.token, p.req);
    REQUIRE_MESSAGE(r.status == 201, r.describe());
  }
  // The receipt-only vendor's pending charge: only a callback can settle it.
  const Posted& by_callback = posted.back();
  const auto waiting = wait_for_payment(
      port, globex_token, by_callback.req.operation_id,
      [](const boost::json::value& v) { return json_int(v, "attempt_count").value_or(0) >= 1; }, 10s);
  REQUIRE(json_int(waiting, "attempt_count") == 1);
  const HttpResponse applied =
      post_sim_callback(port, SimCallback::for_payment(waiting, "evt_obs_applied", "succeeded").body(),
                        std::string(sim_callback_secret), std::nullopt, "receipt");
  REQUIRE_MESSAGE(applied.status == 200, applied.describe());
  // A callback naming no payment (held in a callback_mismatch case) and two forged ones.
  SimCallback stranger;
  stranger.event_id = "evt_obs_stranger";
  stranger.reference = "ck_OBSNOSUCHKEY0000000000000";
  REQUIRE(post_sim_callback(port, stranger.body()).status == 200);
  REQUIRE(post_sim_callback(port, stranger.body(), std::string("not-the-secret")).status == 401);
  REQUIRE(post_sim_callback(port, stranger.body(), std::nullopt).status == 401);

  // Everything settles: terminal, or in front of a human.
  std::vector<boost::json::value> views;
  for (const auto& p : posted) {
    const auto view = wait_for_payment(port, p.token, p.req.operation_id, is_settled, 15s);
    REQUIRE_MESSAGE(is_settled(view), boost::json::serialize(view));
    views.push_back(view);
  }
  CHECK(json_string(views[2], "state") == "FAILED_FINAL");
  CHECK(json_string(views[3], "state") == "SUCCEEDED");
  CHECK(json_string(views[4], "state") == "UNKNOWN");
  CHECK(json_string(reconciliation_of(views[4]), "reason") == "unrecoverable_contract");
  CHECK(json_string(views[6], "state") == "SUCCEEDED");

  DatabaseProbe db(daemon);
  // Quiet: every vendor call recorded, globex's webhooks delivered (acme's keep failing).
  const auto attempts_sum = [&] { return db.count("SELECT COALESCE(SUM(attempt_count), 0) FROM payments"); };
  REQUIRE(eventually([&] {
    return sum_of(samples_of(scrape(port)), "payorch_vendor_calls_total") == static_cast<double>(attempts_sum());
  }, 10s));
  REQUIRE(eventually([&] {
    return db.count("SELECT COUNT(*) FROM outbox WHERE tenant_id = 'globex' AND delivered_at IS NULL") == 0;
  }, 10s));
  REQUIRE(acme_hook.wait_until([](const auto& got) { return !got.empty(); }));

  // ---- (b) /status equals the database ----
  const HttpResponse status = http_request(port, "GET", "/status");
  REQUIRE_MESSAGE(status.status == 200, status.describe());
  const auto st = status.json().as_object();
  for (const char* state : {"PROCESSING", "UNKNOWN", "SUCCEEDED", "FAILED_FINAL"})
    CHECK_MESSAGE(st.at("payments").as_object().at(state).as_int64() ==
                      db.count("SELECT COUNT(*) FROM payments WHERE state = ?", {state}),
                  state);
  const auto exposure_rows = db.query(
      "SELECT provider, currency, COUNT(*) AS n, SUM(amount_minor) AS amount FROM payments"
      " WHERE state = 'UNKNOWN' OR (state = 'PROCESSING' AND last_submit_started_at IS NOT NULL"
      "   AND (last_submit_ended_at IS NULL OR last_submit_started_at > last_submit_ended_at))"
      " GROUP BY provider, currency ORDER BY provider, currency");
  const auto& exposure = st.at("unknown_exposure").as_array();
  REQUIRE(exposure.size() == exposure_rows.size());
  REQUIRE(!exposure.empty());  // the receipt-only vendor's UNKNOWN payment
  for (std::size_t i = 0; i < exposure.size(); ++i) {
    CHECK(json_string(exposure[i], "provider") == exposure_rows[i].at("provider"));
    CHECK(json_string(exposure[i], "currency") == exposure_rows[i].at("currency"));
    CHECK(std::to_string(*json_int(exposure[i], "count")) == exposure_rows[i].at("n"));
    CHECK(std::to_string(*json_int(exposure[i], "amount_minor")) == exposure_rows[i].at("amount"));
  }
  const std::int64_t open_cases = db.count("SELECT COUNT(*) FROM reconciliation_cases WHERE status = 'open'");
  CHECK(open_cases == 2);  // unrecoverable_contract and the stranger's callback_mismatch
  CHECK(json_int(st.at("reconciliation"), "open") == open_cases);
  CHECK(json_int(st.at("reconciliation"), "oldest_open_age_s").value_or(-1) >= 0);
  const std::int64_t pending_events =
      db.count("SELECT COUNT(*) FROM outbox WHERE delivered_at IS NULL AND tenant_id IN ('acme', 'globex')");
  CHECK(pending_events == db.count("SELECT COUNT(*) FROM outbox WHERE tenant_id = 'acme'"));
  CHECK(json_int(st.at("outbox"), "pending") == pending_events);
  CHECK(json_int(st.at("outbox"), "oldest_pending_age_s").value_or(-1) >= 0);

  // ---- (c) the counters agree with what happened ----
  const std::string m1_text = scrape(port);
  const auto m1 = samples_of(m1_text);
  // Gauges: the same numbers as /status and the database.
  for (const char* state : {"PROCESSING", "UNKNOWN", "SUCCEEDED", "FAILED_FINAL"})
    CHECK(m1.at("payorch_payments{state=\"" + std::string(state) + "\"}") ==
          db.count("SELECT COUNT(*) FROM payments WHERE state = ?", {state}));
  for (const SqlRow& row : db.query("SELECT reason, COUNT(*) AS n FROM reconciliation_cases WHERE status = 'open' GROUP BY reason"))
    CHECK(std::to_string(static_cast<long long>(
              m1.at("payorch_reconciliation_open_cases{reason=\"" + row.at("reason").value_or("") + "\"}"))) == row.at("n"));
  CHECK(sum_of(m1, "payorch_reconciliation_open_cases") == open_cases);
  CHECK(m1.at("payorch_outbox_pending_events") == pending_events);
  for (const SqlRow& row : exposure_rows) {
    const std::string labels = "{provider=\"" + row.at("provider").value_or("") + "\",currency=\"" +
                               row.at("currency").value_or("") + "\"}";
    CHECK(std::to_string(static_cast<long long>(m1.at("payorch_unknown_exposure_payments" + labels))) == row.at("n"));
    CHECK(std::to_string(static_cast<long long>(m1.at("payorch_unknown_exposure_amount_minor" + labels))) == row.at("amount"));
  }

  // Transitions: exactly the state changes the outbox recorded, by from and to.
  const auto changes = state_changes_in_outbox(db);
  int change_total = 0;
  for (const auto& change : changes) {
    // Not a structured binding: clang before 16 cannot capture one in CHECK_MESSAGE's lambda.
    const auto& from_to = change.first;
    const auto n = change.second;
    const std::string from = from_to.substr(0, from_to.find('>'));
    const std::string to = from_to.substr(from_to.find('>') + 1);
    CHECK_MESSAGE(m1.count("payorch_transitions_total{from=\"" + from + "\",to=\"" + to + "\"}") == 1, from_to);
    if (m1.count("payorch_transitions_total{from=\"" + from + "\",to=\"" + to + "\"}"))
      CHECK_MESSAGE(m1.at("payorch_transitions_total{from=\"" + from + "\",to=\"" + to + "\"}") == n, from_to);
    change_total += n;
  }
  CHECK(sum_of(m1, "payorch_transitions_total") == change_total);
  CHECK(changes.count("PROCESSING>UNKNOWN"));   // both lost answers
  CHECK(changes.count("UNKNOWN>SUCCEEDED"));    // the one recovered by lookup
  CHECK(changes.count("PROCESSING>SUCCEEDED")); // successes and the callback
  CHECK(changes.count("PROCESSING>FAILED_FINAL"));

  // Vendor calls: the attempt counts, per provider; every call timed once.
  for (const char* provider : {"sim", "receipt"}) {
    const std::string label = "provider=\"" + std::string(provider) + "\"";
    const auto calls = db.count("SELECT COALESCE(SUM(attempt_count), 0) FROM payments WHERE provider = ?", {provider});
    CHECK_MESSAGE(sum_of(m1, "payorch_vendor_calls_total", {label}) == calls, provider);
    CHECK_MESSAGE(sum_of(m1, "payorch_vendor_call_duration_seconds_count", {label}) == calls, provider);
  }
  CHECK(sum_of(m1, "payorch_vendor_calls_total", {"call=\"query\""}) >= 2);  // the pending and the recovered
  CHECK(sum_of(m1, "payorch_vendor_calls_total", {"provider=\"sim\"", "outcome=\"ambiguous\""}) == 1);
  CHECK(sum_of(m1, "payorch_vendor_calls_total", {"provider=\"sim\"", "outcome=\"declined\""}) == 1);
  // Callbacks and webhooks.
  CHECK(m1.at("payorch_callbacks_total{provider=\"receipt\",result=\"applied\"}") == 1);
  CHECK(m1.at("payorch_callbacks_total{provider=\"sim\",result=\"unknown_reference\"}") == 1);
  CHECK(m1.at("payorch_callbacks_rejected_total{provider=\"sim\",reason=\"bad_signature\"}") == 2);
  CHECK(m1.at("payorch_webhook_deliveries_total{result=\"delivered\"}") ==
        db.count("SELECT COUNT(*) FROM outbox WHERE delivered_at IS NOT NULL"));

  // Requests: a known set now, compared by route, method and status with the next scrape.
  SentRequests sent(port);
  const Headers acme = tenant_headers(acme_token);
  const Posted& ok = posted[0];
  CHECK(sent.send("/v1/payments/{operation_id}", "GET", "/v1/payments/" + ok.req.operation_id, acme).status == 200);
  CHECK(sent.send("/v1/payments/{operation_id}", "GET", "/v1/payments/" + ok.req.operation_id, acme).status == 200);
  CHECK(sent.send("/v1/payments/{operation_id}", "GET", "/v1/payments/obs-no-such-op", acme).status == 404);
  CHECK(sent.send("/v1/payments", "POST", "/v1/payments", acme, ok.req.to_json()).status == 200);  // a replay
  PaymentRequest changed = ok.req;
  changed.amount_minor += 1;
  CHECK(sent.send("/v1/payments", "POST", "/v1/payments", acme, changed.to_json()).status == 422);
  CHECK(sent.send("/v1/payments", "POST", "/v1/payments", tenant_headers("wrong-token"), ok.req.to_json()).status == 401);
  CHECK(sent.send("/v1/payments", "DELETE", "/v1/payments", acme).status == 405);
  CHECK(sent.send("/v1/payments", "GET", "/v1/payments?limit=5", acme).status == 200);
  CHECK(sent.send("/v1/events", "GET", "/v1/events?limit=5", acme).status == 200);
  CHECK(sent.send("/healthz", "GET", "/healthz").status == 200);
  CHECK(sent.send("/readyz", "GET", "/readyz").status == 200);
  CHECK(sent.send("/status", "GET", "/status").status == 200);
  CHECK(sent.send("other", "GET", "/no/such/" + ok.req.operation_id).status == 404);
  const std::string case_id = json_string(reconciliation_of(views[4]), "case_id");
  CHECK(sent.send("/v1/reconciliation", "GET", "/v1/reconciliation?status=open", admin_headers()).status == 200);
  CHECK(sent.send("/v1/reconciliation/{case_id}", "GET", "/v1/reconciliation/" + case_id, admin_headers()).status == 200);
  CHECK(sent.send("/v1/admin/payments/{payment_id}", "GET", "/v1/admin/payments/" + json_string(views[0], "id"),
                  admin_headers()).status == 200);
  const std::string forged = SimCallback::for_payment(views[0], "evt_obs_forged").body();
  CHECK(sent.send("/v1/callbacks/{provider}", "POST", "/v1/callbacks/sim",
                  {{"Content-Type", "application/json"}, {"Sim-Signature", sim_signature("wrong", unix_now_s(), forged)}},
                  forged).status == 401);
  sent.add("/metrics", "GET", 200);  // the scrape that took m1, counted after it answered
  const std::string m2_text = scrape(port);
  const auto m2 = samples_of(m2_text);
  std::set<std::string> request_series;
  for (const auto& [series, v] : m1) if (series.starts_with("payorch_http_requests_total{")) request_series.insert(series);
  for (const auto& [series, v] : m2) if (series.starts_with("payorch_http_requests_total{")) request_series.insert(series);
  for (const auto& series : request_series) {
    const double before = m1.count(series) ? m1.at(series) : 0;
    const double after = m2.count(series) ? m2.at(series) : 0;
    const int expected = sent.counts().count(series) ? sent.counts().at(series) : 0;
    CHECK_MESSAGE(after - before == expected, series);
  }
  for (const auto& entry : sent.counts()) {
    const auto& series = entry.first;
    CHECK_MESSAGE(request_series.count(series) == 1, series);
  }
  for (const auto& entry : sent.by_route()) {
    const auto& route = entry.first;
    const auto n = entry.second;
    // Summed over the method label (the histogram is by route and method).
    const std::string label = "route=\"" + route + "\"";
    const std::string count = "payorch_http_request_duration_seconds_count";
    const double before = sum_of(m1, count, {label});
    CHECK_MESSAGE(sum_of(m2, count, {label}) - before == n, route);
    CHECK_MESSAGE(sum_of(m2, "payorch_http_request_duration_seconds_bucket", {label, "le=\"+Inf\""}) ==
                      sum_of(m2, count, {label}),
                  route);
  }
  CHECK(sum_of(m2, "payorch_callbacks_rejected_total", {"reason=\"bad_signature\""}) == 3);

  // ---- (a) promtool accepts the exposition ----
  const std::string promtool = find_on_path("promtool");
  const char* ci = std::getenv("CI");
  if (promtool.empty()) {
    // tools/deps and .ci/run install Debian's `prometheus` package, which ships promtool.
    if (ci && std::string(ci) == "true") FAIL_CHECK("promtool not found on PATH (CI=true): install the prometheus package");
    else MESSAGE("promtool not found on PATH: `promtool check metrics` skipped (tools/deps installs it)");
  } else {
    const ToolResult check = promtool_check(promtool, daemon.dir(), m2_text);
    CHECK_MESSAGE(check.status == 0, "promtool check metrics:\n" << check.output << "\n" << m2_text);
    CHECK_MESSAGE(check.output.empty(), check.output);
  }
  // Every family announces itself, and every sample belongs to an announced family.
  std::set<std::string> help, type;
  std::istringstream lines(m2_text);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("# HELP ")) help.insert(line.substr(7, line.find(' ', 7) - 7));
    if (line.starts_with("# TYPE ")) type.insert(line.substr(7, line.find(' ', 7) - 7));
  }
  CHECK(help == type);
  for (const char* family : {"payorch_http_requests_total", "payorch_http_request_duration_seconds",
                             "payorch_transitions_total", "payorch_vendor_calls_total",
                             "payorch_vendor_call_duration_seconds", "payorch_payments", "payorch_refunds",
                             "payorch_unknown_exposure_payments", "payorch_unknown_exposure_amount_minor",
                             "payorch_intake_paused", "payorch_reconciliation_open_cases",
                             "payorch_reconciliation_oldest_open_age_seconds", "payorch_outbox_pending_events",
                             "payorch_outbox_oldest_pending_age_seconds", "payorch_callbacks_rejected_total"})
    CHECK_MESSAGE(type.count(family) == 1, family);
  for (const auto& entry : m2) {
    const auto& series = entry.first;
    std::string family = series.substr(0, series.find('{'));
    for (const char* suffix : {"_bucket", "_sum", "_count"})
      if (!type.count(family) && family.ends_with(suffix)) family.resize(family.size() - std::string(suffix).size());
    CHECK_MESSAGE(type.count(family) == 1, series);
  }

  // ---- (d) no tenant data in /metrics or /status ----
  const std::string status_text = http_request(port, "GET", "/status").body;
  std::vector<std::string> tenant_data{acme_token, globex_token, admin_token, "acme", "globex",
                                       "payee-obs", "merchant-1", "tok_", stranger.reference,
                                       "evt_obs", acme_webhook_secret, globex_webhook_secret,
                                       vendor_sim_api_key, receipt_api_key, sim_callback_secret};
  for (const auto& view : views)
    for (const char* key : {"id", "operation_id", "client_key", "vendor_reference", "request_digest"})
      if (!json_string(view, key).empty()) tenant_data.push_back(json_string(view, key));
  tenant_data.push_back(case_id);
  for (const auto& secret : tenant_data) {
    CHECK_MESSAGE(m2_text.find(secret) == std::string::npos, "/metrics shows " << secret);
    CHECK_MESSAGE(status_text.find(secret) == std::string::npos, "/status shows " << secret);
  }

  // ---- The log: structured lines, the events that happened, no token or secret ----
  const std::string log = read_file(daemon.log_path());
  for (const std::string& secret : {std::string(acme_token), std::string(globex_token), std::string(admin_token),
                                   std::string(acme_webhook_secret), std::string(globex_webhook_secret),
                                   std::string(vendor_sim_api_key), std::string(receipt_api_key),
                                   std::string(sim_callback_secret), std::string("tok_ok"),
                                   std::string("tok_decline"), std::string("tok_pending")})
    CHECK_MESSAGE(log.find(secret) == std::string::npos, "the log shows " << secret);
  std::istringstream log_lines(log);
  int unstructured = 0;
  for (std::string line; std::getline(log_lines, line);)
    if (!line.empty() && !line.starts_with("==== harness") &&
        !(line.starts_with("payorchd ts=") && line.find(" level=") != std::string::npos &&
          line.find(" event=") != std::string::npos)) {
      ++unstructured;
      MESSAGE("not a structured log line: " << line);
    }
  CHECK(unstructured == 0);
  const std::string recovered_key = json_string(views[3], "client_key");
  CHECK(log.find("event=engine.vendor_call payment_id=" + json_string(views[3], "id") + " client_key=" +
                 recovered_key + " fence=") != std::string::npos);
  CHECK(log.find("event=callback.refused provider=sim reason=bad_signature") != std::string::npos);
  CHECK(log.find("event=callback.mismatch provider=sim vendor_event_id=evt_obs_stranger") != std::string::npos);
  CHECK(log.find("event=webhook.retry ") != std::string::npos);
  CHECK(log.find("event=callback.recorded provider=receipt vendor_event_id=evt_obs_applied") != std::string::npos);
  // One line per committed state change, the same number the counter shows.
  int state_lines = 0;
  for (std::size_t at = log.find(" event=payment.state_changed "); at != std::string::npos;
       at = log.find(" event=payment.state_changed ", at + 1))
    ++state_lines;
  CHECK(state_lines == change_total);
}

TEST_CASE("node: /status and every log line name the node; its lease owner id starts with it") {
  DaemonConfig config;
  config.engine = "engine: {node_id: node-a, workers: 2, lease: 30s, poll_interval: 500ms}";
  Daemon daemon(config);
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail());

  const HttpResponse status = http_request(daemon.port(), "GET", "/status");
  REQUIRE_MESSAGE(status.status == 200, status.describe());
  const boost::json::value body = status.json();
  const auto& node = body.as_object().at("node").as_object();
  CHECK(node.at("id").as_string() == "node-a");
  const std::string owner(node.at("lease_owner").as_string());
  CHECK(owner.rfind("node-a:" + std::to_string(daemon.pid()) + ":", 0) == 0);

  // A restart is the same node, and a new run of it: another lease owner id.
  daemon.restart();
  const HttpResponse again = http_request(daemon.port(), "GET", "/status");
  REQUIRE_MESSAGE(again.status == 200, again.describe());
  const boost::json::value body_again = again.json();
  const auto& node_again = body_again.as_object().at("node").as_object();
  CHECK(node_again.at("id").as_string() == "node-a");
  CHECK(std::string(node_again.at("lease_owner").as_string()) != owner);

  std::istringstream log(read_file(daemon.log_path()));
  int lines = 0;
  for (std::string line; std::getline(log, line);) {
    if (line.rfind("payorchd ts=", 0) != 0) continue;  // the harness's own lines
    ++lines;
    const std::size_t at = line.find(" node=node-a");
    const std::size_t after = at + std::string_view(" node=node-a").size();
    CHECK_MESSAGE((at != std::string::npos && (after == line.size() || line[after] == ' ')), line);
  }
  CHECK(lines > 4);
  CHECK(read_file(daemon.log_path()).find("event=engine.owner lease_owner=" + owner + " node=node-a ") != std::string::npos);
}

TEST_CASE("observability: /status and /metrics count refunds per state, DEFERRED apart, payments without them") {
  VendorSim sim({"--pending-delay", "30s"});
  // The decline is held back 1.5 s at the vendor, so a refund of that payment is DEFERRED first.
  sim.add_fault("latency", 1, 1500, std::string("tok_decline"));
  Daemon daemon(engine_daemon_config({{.base_url = sim.base_url(), .retry = roomy_retry}}));
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail(8192));
  const std::uint16_t port = daemon.port();
  auto refund_state = [port](const std::string& operation_id) {
    const HttpResponse r = get_refund(port, acme_token, operation_id);
    return r.status == 200 ? json_string(r.json(), "state") : r.describe();
  };

  const PaymentRequest paid{.operation_id = unique_operation_id("obs-rf-paid"), .amount_minor = 5000};
  const PaymentRequest pending{.operation_id = unique_operation_id("obs-rf-pending"), .source = "tok_pending"};
  const PaymentRequest declined{.operation_id = unique_operation_id("obs-rf-declined"), .source = "tok_decline"};
  for (const auto& p : {paid, pending, declined}) REQUIRE(post_payment(port, acme_token, p).status == 201);
  const std::string sent = unique_operation_id("obs-rf-sent");
  const std::string waiting = unique_operation_id("obs-rf-waiting");
  const std::string failed = unique_operation_id("obs-rf-failed");
  REQUIRE(post_refund(port, acme_token, declined.operation_id, failed, 100).status == 201);
  REQUIRE(json_string(wait_for_state(port, acme_token, paid.operation_id, "SUCCEEDED", 5s), "state") == "SUCCEEDED");
  REQUIRE(post_refund(port, acme_token, paid.operation_id, sent, 1200).status == 201);
  REQUIRE(post_refund(port, acme_token, pending.operation_id, waiting, 100).status == 201);
  CHECK(eventually([&] { return refund_state(sent) == "SUCCEEDED"; }, 10s));
  CHECK(eventually([&] { return refund_state(failed) == "FAILED_FINAL"; }, 10s));
  CHECK(refund_state(waiting) == "DEFERRED");

  DatabaseProbe db(daemon);
  const std::map<std::string, std::int64_t> expected{
      {"DEFERRED", db.count("SELECT COUNT(*) FROM payments WHERE refund_of IS NOT NULL AND CAST(deferred AS INTEGER) = 1")},
      {"PROCESSING", 0}, {"UNKNOWN", 0}, {"SUCCEEDED", 1}, {"FAILED_FINAL", 1}};
  CHECK(expected.at("DEFERRED") == 1);
  for (const char* state : {"PROCESSING", "UNKNOWN", "SUCCEEDED", "FAILED_FINAL"})
    CHECK_MESSAGE(db.count("SELECT COUNT(*) FROM payments WHERE refund_of IS NOT NULL AND state = ?"
                           " AND CAST(deferred AS INTEGER) = 0",
                           {state}) == expected.at(state),
                  state);

  const HttpResponse status = http_request(port, "GET", "/status");
  REQUIRE_MESSAGE(status.status == 200, status.describe());
  const boost::json::value body = status.json();
  const auto& refunds = body.as_object().at("refunds").as_object();
  const auto& payments = body.as_object().at("payments").as_object();
  CHECK(refunds.size() == expected.size());
  const auto metrics = samples_of(scrape(port));
  for (const auto& entry : expected) {
    CHECK_MESSAGE(refunds.at(entry.first).as_int64() == entry.second, entry.first);
    CHECK_MESSAGE(metrics.at("payorch_refunds{state=\"" + entry.first + "\"}") == static_cast<double>(entry.second),
                  entry.first);
  }
  // The payments' figures are the payments' alone.
  for (const char* state : {"PROCESSING", "UNKNOWN", "SUCCEEDED", "FAILED_FINAL"})
    CHECK_MESSAGE(payments.at(state).as_int64() ==
                      db.count("SELECT COUNT(*) FROM payments WHERE refund_of IS NULL AND state = ?", {state}),
                  state);
  CHECK(payments.at("SUCCEEDED").as_int64() == 1);
}
