// Vendor callbacks over HTTP against the real payorchd (docs/contract.md §6, invariants 6 and 7). The
// incident of seed 003 is the first case: a vendor retried one payment callback six times and
// six coupons went out. Here six identical signed callbacks, some concurrent, must make one
// state change, one event and six 2xx answers. Then: forged and stale signatures change
// nothing, late and contradicting answers go to a human, mismatching callbacks are kept and
// escalated, and callbacks racing the engine's own vendor calls are decided by the same CAS.
#include <doctest/doctest.h>


#include <atomic>
#include <sstream>
#include <thread>

#include "support/daemon.h"
#include "support/engine_checks.h"
#include "support/payorch_api.h"
#include "support/ports.h"
#include "support/vendor_callbacks.h"
#include "support/vendor_sim.h"
#include "support/webhook_receiver.h"

using namespace payorch::test;
using namespace std::chrono_literals;

namespace {

// A payment accepted by a daemon whose vendor is unreachable (the default DaemonConfig): it
// stays PROCESSING, so whatever decides it is the callback.
boost::json::value accepted_payment(const Daemon& daemon, const PaymentRequest& req) {
  const HttpResponse r = post_payment(daemon.port(), acme_token, req);
  REQUIRE_MESSAGE(r.status == 201, r.describe());
  return r.json();
}

// The value of one series in GET /metrics ("name{labels}"), 0 when absent.
std::int64_t metric(std::uint16_t port, const std::string& series) {
  const HttpResponse r = http_request(port, "GET", "/metrics");
  REQUIRE_MESSAGE(r.status == 200, r.describe());
  std::istringstream in(r.body);
  std::string line;
  while (std::getline(in, line))
    if (line.starts_with(series + " ")) return std::stoll(line.substr(series.size() + 1));
  return 0;
}

// The tenant's events feed, every page, as (type, payment id) pairs.
std::vector<std::pair<std::string, std::string>> feed(std::uint16_t port, std::string_view token) {
  std::vector<std::pair<std::string, std::string>> out;
  std::string cursor;
  for (int page = 0; page < 100; ++page) {
    const std::string target = "/v1/events?limit=50" + (cursor.empty() ? "" : "&after=" + cursor);
    const HttpResponse r = http_request(port, "GET", target, tenant_headers(token));
    REQUIRE_MESSAGE(r.status == 200, r.describe());
    const auto body = r.json();
    for (const auto& e : body.at("data").as_array())
      out.emplace_back(json_string(e, "type"), json_string(e.at("payment"), "id"));
    if (body.at("next_cursor").is_null()) break;
    cursor = std::string(body.at("next_cursor").as_string());
  }
  return out;
}

int count_feed(const std::vector<std::pair<std::string, std::string>>& events, std::string_view type,
               const std::string& payment_id) {
  int n = 0;
  for (const auto& [t, id] : events) n += t == type && id == payment_id;
  return n;
}

std::int64_t table_count(PayorchRecords& records, const std::string& sql, const std::vector<std::string>& params = {}) {
  return records.probe().count(sql, params);
}

}  // namespace

TEST_CASE("callbacks: the coupon incident — six identical signed callbacks, one transition, one event") {
  // The tenant's webhook stands for the coupon service: it must hear of the success once.
  WebhookReceiver coupons;
  DaemonConfig cfg;
  cfg.tenants = "tenants:\n"
                "  - id: acme\n"
                "    token: \"acme-token-123\"\n"
                "    webhook: {url: \"" + coupons.url() + "\", secret: \"acme-webhook-secret\", "
                "initial_backoff: 100ms, max_backoff: 500ms}\n"
                "  - {id: globex, token: \"globex-token-123\"}";
  cfg.engine = "engine: {workers: 2, lease: 30s, poll_interval: 100ms}";
  Daemon daemon(cfg);
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail());
  const PaymentRequest req{.operation_id = unique_operation_id("coupon")};
  const auto view = accepted_payment(daemon, req);
  const std::string payment_id = json_string(view, "id");
  const std::string body = SimCallback::for_payment(view, "evt_coupon_1").body();

  // Two one after another, then four at once (the vendor's retries overlapping).
  std::vector<unsigned> statuses;
  for (int i = 0; i < 2; ++i) statuses.push_back(post_sim_callback(daemon.port(), body).status);
  std::vector<unsigned> concurrent(4, 0);
  {
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; ++i)
      threads.emplace_back([&, i] { concurrent[i] = post_sim_callback(daemon.port(), body).status; });
    for (auto& t : threads) t.join();
  }
  statuses.insert(statuses.end(), concurrent.begin(), concurrent.end());
  for (unsigned s : statuses) CHECK(s == 200);

  const auto after = fetch_payment(daemon.port(), acme_token, req.operation_id);
  CHECK(json_string(after, "state") == "SUCCEEDED");
  CHECK(json_string(after, "vendor_reference") == SimCallback::for_payment(view, "x").charge_id);

  PayorchRecords records(daemon);
  CHECK(records.event_types(payment_id) == "payment.created, payment.succeeded");
  const auto events = feed(daemon.port(), acme_token);
  CHECK(count_feed(events, "payment.succeeded", payment_id) == 1);
  CHECK(table_count(records, "SELECT COUNT(*) FROM callback_inbox WHERE event_id = 'evt_coupon_1'") == 1);
  CHECK(metric(daemon.port(), R"(payorch_callbacks_total{provider="sim",result="applied"})") == 1);
  CHECK(metric(daemon.port(), R"(payorch_callbacks_total{provider="sim",result="duplicate"})") == 5);
  // Each redelivery's log line names the payment, though it changed nothing.
  {
    const std::string log = daemon.log_tail(1 << 22);
    const std::string line = "vendor_event_id=evt_coupon_1 payment_id=" + payment_id;
    int duplicates = 0;
    for (std::size_t at = log.find(line); at != std::string::npos; at = log.find(line, at + 1)) {
      const std::size_t end = log.find('\n', at);
      duplicates += log.substr(at, end - at).find("result=duplicate") != std::string::npos;
    }
    CHECK(duplicates == 5);
  }
  auto succeeded_pushes = [&](const std::vector<ReceivedWebhook>& got) {
    int n = 0;
    for (const auto& w : got)
      n += w.header("payorch-event-type") == "payment.succeeded" && w.body.find(payment_id) != std::string::npos;
    return n;
  };
  CHECK(coupons.wait_until([&](const auto& got) { return succeeded_pushes(got) >= 1; }, 10s));

  // The vendor may also retry under new delivery ids: still no second effect.
  for (int i = 0; i < 3; ++i) {
    const HttpResponse r =
        post_sim_callback(daemon.port(), SimCallback::for_payment(view, "evt_coupon_retry_" + std::to_string(i)).body());
    CHECK_MESSAGE(r.status == 200, r.describe());
    CHECK(json_string(r.json(), "result") == "confirmed");
  }
  CHECK(records.event_types(payment_id) == "payment.created, payment.succeeded");
  CHECK(records.repeated_events().empty());
  // A few delivery rounds later the coupon service still heard of the success exactly once.
  std::this_thread::sleep_for(500ms);
  CHECK(succeeded_pushes(coupons.received()) == 1);
}

TEST_CASE("callbacks: forged, tampered, stale or unsigned callbacks get 401 and change nothing") {
  Daemon daemon;
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail());
  const PaymentRequest req{.operation_id = unique_operation_id("forged")};
  const auto view = accepted_payment(daemon, req);
  const std::string body = SimCallback::for_payment(view, "evt_forged").body();
  const std::int64_t now = unix_now_s();

  SUBCASE("refusals") {
    // Tampered: signed for one body, another sent (amount changed after signing).
    std::string tampered = body;
    tampered.replace(tampered.find("\"amount_minor\":1000"), 19, "\"amount_minor\":1001");
    const Headers signed_for_original{{"Content-Type", "application/json"},
                                      {"Sim-Signature", sim_signature(sim_callback_secret, now, body)}};
    const HttpResponse cases[] = {
        http_request(daemon.port(), "POST", "/v1/callbacks/sim", signed_for_original, tampered),
        post_sim_callback(daemon.port(), body, std::string("not-the-secret")),
        post_sim_callback(daemon.port(), body, std::string(sim_callback_secret), now - 3600),  // stale
        post_sim_callback(daemon.port(), body, std::string(sim_callback_secret), now + 3600),  // future
        post_sim_callback(daemon.port(), body, std::nullopt),                                  // no header
        http_request(daemon.port(), "POST", "/v1/callbacks/sim",
                     {{"Content-Type", "application/json"}, {"Sim-Signature", "t=abc,v1=zz"}}, body),
    };
    for (const HttpResponse& r : cases) CHECK_MESSAGE(is_problem(r, 401, "callback-signature-invalid"), r.describe());

    PayorchRecords records(daemon);
    CHECK(json_string(fetch_payment(daemon.port(), acme_token, req.operation_id), "state") == "PROCESSING");
    CHECK(table_count(records, "SELECT COUNT(*) FROM callback_inbox") == 0);
    CHECK(records.event_types(json_string(view, "id")) == "payment.created");
    CHECK(metric(daemon.port(), R"(payorch_callbacks_rejected_total{provider="sim",reason="bad_signature"})") == 4);
    CHECK(metric(daemon.port(), R"(payorch_callbacks_rejected_total{provider="sim",reason="stale_timestamp"})") == 2);

    // The genuine one still works afterwards.
    const HttpResponse ok = post_sim_callback(daemon.port(), body);
    CHECK_MESSAGE(ok.status == 200, ok.describe());
    CHECK(json_string(fetch_payment(daemon.port(), acme_token, req.operation_id), "state") == "SUCCEEDED");
  }
  SUBCASE("routing") {
    CHECK(is_problem(post_sim_callback(daemon.port(), body, std::string(sim_callback_secret), std::nullopt, "nope"),
                     404, "not-found"));
    CHECK(is_problem(http_request(daemon.port(), "GET", "/v1/callbacks/sim"), 405, "method-not-allowed"));
    // Signed correctly but not a sim event: refused, nothing stored, the vendor retries.
    const std::string junk = R"({"id":"evt_junk","type":"charge.refunded","created":1,"data":{}})";
    CHECK(is_problem(post_sim_callback(daemon.port(), junk), 400, "callback-malformed"));
    PayorchRecords records(daemon);
    CHECK(table_count(records, "SELECT COUNT(*) FROM callback_inbox") == 0);
  }
}

TEST_CASE("callbacks: a late success after FAILED_FINAL leaves the state, opens a case and raises the alert") {
  Daemon daemon;
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail());
  const PaymentRequest req{.operation_id = unique_operation_id("late")};
  const auto view = accepted_payment(daemon, req);
  const std::string payment_id = json_string(view, "id");

  REQUIRE(post_sim_callback(daemon.port(), SimCallback::for_payment(view, "evt_late_1", "declined").body()).status == 200);
  auto now_view = fetch_payment(daemon.port(), acme_token, req.operation_id);
  REQUIRE(json_string(now_view, "state") == "FAILED_FINAL");
  CHECK(failure_code_of(now_view) == "insufficient_funds");

  // A lower status after a higher one: pending after the decline is a no-op.
  const HttpResponse pending = post_sim_callback(daemon.port(), SimCallback::for_payment(view, "evt_late_0", "pending").body());
  CHECK(pending.status == 200);
  CHECK(json_string(pending.json(), "result") == "ignored_pending");

  const HttpResponse late = post_sim_callback(daemon.port(), SimCallback::for_payment(view, "evt_late_2", "succeeded").body());
  CHECK_MESSAGE(late.status == 200, late.describe());
  CHECK(json_string(late.json(), "result") == "late_contradiction");
  now_view = fetch_payment(daemon.port(), acme_token, req.operation_id);
  CHECK(json_string(now_view, "state") == "FAILED_FINAL");
  const auto rec = reconciliation_of(now_view);
  REQUIRE(rec.is_object());
  CHECK(json_string(rec, "reason") == "late_contradiction");
  CHECK(json_string(rec, "status") == "open");
  CHECK(metric(daemon.port(), R"(payorch_late_contradictions_total{provider="sim"})") == 1);

  // The case carries the callback as evidence for the operator.
  const HttpResponse c = http_request(daemon.port(), "GET", "/v1/reconciliation/" + json_string(rec, "case_id"),
                                      {{"Authorization", std::string("Bearer ") + admin_token}});
  REQUIRE_MESSAGE(c.status == 200, c.describe());
  CHECK(c.body.find("evt_late_2") != std::string::npos);

  // Another contradicting delivery: evidence on the same case, no second case or event.
  CHECK(post_sim_callback(daemon.port(), SimCallback::for_payment(view, "evt_late_3", "succeeded").body()).status == 200);
  PayorchRecords records(daemon);
  CHECK(records.event_types(payment_id) == "payment.created, payment.failed, payment.escalated");
  CHECK(records.cases(payment_id).size() == 1);
}

TEST_CASE("callbacks: another amount or an unknown reference is kept, acknowledged and escalated") {
  Daemon daemon;
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail());
  const PaymentRequest req{.operation_id = unique_operation_id("mismatch")};
  const auto view = accepted_payment(daemon, req);
  const std::string payment_id = json_string(view, "id");

  SimCallback other_amount = SimCallback::for_payment(view, "evt_mismatch_1");
  other_amount.amount_minor = 999'999;
  const HttpResponse r = post_sim_callback(daemon.port(), other_amount.body());
  CHECK_MESSAGE(r.status == 200, r.describe());
  CHECK(json_string(r.json(), "result") == "mismatch");
  const auto after = fetch_payment(daemon.port(), acme_token, req.operation_id);
  CHECK(json_string(after, "state") == "PROCESSING");  // the status was not applied
  CHECK(json_string(reconciliation_of(after), "reason") == "callback_mismatch");
  PayorchRecords records(daemon);
  CHECK(records.payment_row(payment_id).at("next_action") == "none");  // automatic work stopped
  CHECK(records.event_types(payment_id) == "payment.created, payment.escalated");

  SimCallback stranger = SimCallback::for_payment(view, "evt_stranger");
  stranger.reference = "ck_NOBODYHASTHISKEY00000000";
  const HttpResponse s = post_sim_callback(daemon.port(), stranger.body());
  CHECK_MESSAGE(s.status == 200, s.describe());
  CHECK(json_string(s.json(), "result") == "unknown_reference");
  CHECK(table_count(records, "SELECT COUNT(*) FROM callback_inbox WHERE event_id = 'evt_stranger'") == 1);
  CHECK(table_count(records,
                    "SELECT COUNT(*) FROM reconciliation_cases WHERE payment_id IS NULL AND reason = "
                    "'callback_mismatch' AND status = 'open' AND reference = 'ck_NOBODYHASTHISKEY00000000'") == 1);
  CHECK(metric(daemon.port(), R"(payorch_callback_mismatches_total{provider="sim"})") == 2);
}

TEST_CASE("callbacks: a callback racing the worker's own call — one transition, one event") {
  VendorSim sim;
  Daemon daemon(engine_daemon_config({{.base_url = sim.base_url(), .retry = roomy_retry}}));
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail() << "\nsim log:\n" << sim.log_tail());
  PayorchRecords records(daemon);

  // The submit is held at the vendor for 1.5 s; the callback lands while it is on the wire.
  auto race = [&](const std::string& source, const std::string& callback_status) {
    sim.add_fault("latency", 1, 1500);
    const PaymentRequest req{.operation_id = unique_operation_id("race"), .source = source};
    const auto view = accepted_payment(daemon, req);
    const std::string payment_id = json_string(view, "id");
    REQUIRE(eventually([&] { return records.payment_row(payment_id).at("attempt_count") == "1"; }, 5s));
    const HttpResponse cb = post_sim_callback(daemon.port(), SimCallback::for_payment(view, "evt_race_" + req.operation_id, callback_status).body());
    CHECK_MESSAGE(cb.status == 200, cb.describe());
    CHECK(json_string(cb.json(), "result") == "applied");
    // Wait for the vendor to answer the held submit and the engine to record it.
    REQUIRE(eventually([&] { return sim.count_charges(json_string(view, "client_key")) == 1; }, 5s));
    std::this_thread::sleep_for(700ms);
    return std::make_pair(payment_id, fetch_payment(daemon.port(), acme_token, req.operation_id));
  };

  SUBCASE("agreeing: the worker's success after the callback's is a no-op") {
    auto [payment_id, view] = race("tok_ok", "succeeded");
    CHECK(json_string(view, "state") == "SUCCEEDED");
    CHECK(records.event_types(payment_id) == "payment.created, payment.succeeded");
    CHECK(records.cases(payment_id).empty());
  }
  SUBCASE("contradicting: the worker's decline after the callback's success goes to a human") {
    auto [payment_id, view] = race("tok_decline", "succeeded");
    CHECK(json_string(view, "state") == "SUCCEEDED");
    CHECK(records.event_types(payment_id) == "payment.created, payment.succeeded, payment.escalated");
    CHECK(json_string(reconciliation_of(view), "reason") == "late_contradiction");
    CHECK(metric(daemon.port(), R"(payorch_late_contradictions_total{provider="sim"})") == 1);
  }
}

TEST_CASE("callbacks: the simulator's own callbacks, duplicated, racing the engine's lookups") {
  // The simulator calls back into this daemon (each callback delivered twice) while the
  // engine submits and looks up the same payments: every payment ends with one terminal event.
  const std::uint16_t port = free_port();
  VendorSim sim({"--pending-delay", "300ms", "--duplicate-callbacks", "--callback-url",
                 "http://127.0.0.1:" + std::to_string(port) + "/v1/callbacks/sim",
                 "--callback-initial-backoff", "100ms", "--callback-max-backoff", "500ms"});
  DaemonConfig cfg = engine_daemon_config({{.base_url = sim.base_url(), .retry = roomy_retry}});
  cfg.server = "server: {listen: \"127.0.0.1:" + std::to_string(port) + "\", max_body_bytes: 65536}";
  Daemon daemon(cfg);
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail() << "\nsim log:\n" << sim.log_tail());

  std::vector<PaymentRequest> reqs;
  const char* sources[] = {"tok_ok", "tok_pending", "tok_decline"};
  for (int i = 0; i < 15; ++i) {
    reqs.push_back({.operation_id = unique_operation_id("simcb"), .amount_minor = 100 + i, .source = sources[i % 3]});
    REQUIRE(post_payment(daemon.port(), acme_token, reqs.back()).status == 201);
  }
  PayorchRecords records(daemon);
  for (const auto& req : reqs) {
    const auto view = wait_for_payment(daemon.port(), acme_token, req.operation_id,
                                       [](const auto& v) { return is_terminal_state(json_string(v, "state")); }, 15s);
    INFO(describe_payment(view, records));
    CHECK(json_string(view, "state") == (req.source == "tok_decline" ? "FAILED_FINAL" : "SUCCEEDED"));
    CHECK(ledger_mismatch(view, sim) == "");
    CHECK(reconciliation_of(view).is_null());
  }
  // Every callback (each sent twice) acknowledged: the simulator's queue drains.
  REQUIRE(eventually([&] {
    const auto r = sim.control("GET", "/_sim/callbacks");
    return r.status == 200 && r.body.find("\"queued\"") == std::string::npos;
  }, 15s));
  CHECK(metric(daemon.port(), R"(payorch_callbacks_total{provider="sim",result="duplicate"})") > 0);
  CHECK(records.repeated_events().empty());
  for (const auto& req : reqs) {
    const auto view = fetch_payment(daemon.port(), acme_token, req.operation_id);
    const std::string id = json_string(view, "id");
    CHECK(records.count_events(id, "payment.succeeded") + records.count_events(id, "payment.failed") == 1);
  }
}

TEST_CASE("callbacks: a failure before the commit answers 503 and records nothing; a crash after it makes the retry a duplicate") {
  Daemon daemon;
  daemon.set_env("PAYORCH_FAILPOINTS", "callback.before_commit=error:1;callback.after_commit=crash:1");
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail());
  const PaymentRequest req{.operation_id = unique_operation_id("cbcrash")};
  const auto view = accepted_payment(daemon, req);
  const std::string payment_id = json_string(view, "id");
  const std::string body = SimCallback::for_payment(view, "evt_crash_1").body();
  PayorchRecords records(daemon);

  // Rolled back: the vendor is told to retry, and nothing of the callback exists.
  const HttpResponse failed = post_sim_callback(daemon.port(), body);
  CHECK_MESSAGE(is_problem(failed, 503, "storage-unavailable"), failed.describe());
  CHECK(table_count(records, "SELECT COUNT(*) FROM callback_inbox") == 0);
  CHECK(records.event_types(payment_id) == "payment.created");

  // The retry commits, and the daemon dies before answering: the vendor sees no 2xx.
  const HttpResponse lost = post_sim_callback(daemon.port(), body);
  CHECK(lost.status == 0);
  REQUIRE(daemon.wait_exit(5s).has_value());
  CHECK(records.event_types(payment_id) == "payment.created, payment.succeeded");

  // The vendor's next retry after the restart is a duplicate: acknowledged, no second effect.
  daemon.set_env("PAYORCH_FAILPOINTS", std::nullopt);
  daemon.restart();
  const HttpResponse again = post_sim_callback(daemon.port(), body);
  CHECK_MESSAGE(again.status == 200, again.describe());
  CHECK(json_string(again.json(), "result") == "duplicate");
  CHECK(json_string(fetch_payment(daemon.port(), acme_token, req.operation_id), "state") == "SUCCEEDED");
  CHECK(records.event_types(payment_id) == "payment.created, payment.succeeded");
  CHECK(records.probe().integrity_check() == "ok");
}
