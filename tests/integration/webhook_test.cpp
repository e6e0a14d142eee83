// Push delivery to tenants' webhooks (docs/contract.md §6), end to end: the real payorchd and the real
// payorch-vendor-sim (so each tok_ok payment goes PROCESSING -> SUCCEEDED and announces two
// events), and an in-process receiver standing in for the tenant. Every event arrives, signed
// with the tenant's secret, byte for byte as stored, in order per payment — through a receiver
// that is down, one that fails, and a daemon killed with pushes in flight — and none is lost:
// a repeat carries the same event id. Retention then purges delivered events only.
#include <doctest/doctest.h>

#include <boost/json/parse.hpp>

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/signature.h"
#include "support/daemon.h"
#include "support/engine_checks.h"
#include "support/payorch_api.h"
#include "support/database_probe.h"
#include "support/vendor_sim.h"
#include "support/webhook_receiver.h"

using namespace payorch::test;
using namespace std::chrono_literals;

namespace {

constexpr const char* acme_secret = "acme-webhook-secret";

// acme pushes to the receiver with fast backoff; globex has no webhook. The retry budget has
// room for a recovery after a kill (lookups until "not found" is trusted, then a resubmit).
DaemonConfig webhook_config(const VendorSim& sim, const WebhookReceiver& receiver,
                            SimProviderConfig provider = {}, std::string extra = {}) {
  provider.base_url = sim.base_url();
  provider.retry = roomy_retry;
  DaemonConfig config = engine_daemon_config({provider});
  config.tenants =
      "tenants:\n"
      "  - id: acme\n"
      "    token: \"acme-token-123\"\n"
      "    webhook: {url: \"" + receiver.url() + "\", secret: \"" + acme_secret +
      "\", timeout: 3s, initial_backoff: 100ms, max_backoff: 500ms}\n"
      "  - {id: globex, token: \"globex-token-123\"}";
  config.extra = std::move(extra);
  return config;
}

struct OutboxRow {
  std::string event_id;
  std::string payment_id;
  std::string type;
  std::string payload;
  bool delivered = false;
  std::int64_t attempts = 0;
  std::optional<std::string> last_error;
};

// A tenant's outbox rows in feed order.
std::vector<OutboxRow> outbox_of(const Daemon& daemon, const std::string& tenant) {
  DatabaseProbe db(daemon);
  std::vector<OutboxRow> out;
  for (auto& r : db.query("SELECT event_id, payment_id, type, payload, delivered_at, attempts,"
                          " last_error FROM outbox WHERE tenant_id = ?1 ORDER BY seq",
                          {tenant}))
    out.push_back(OutboxRow{*r["event_id"], *r["payment_id"], *r["type"], *r["payload"],
                            r["delivered_at"].has_value(), std::stoll(*r["attempts"]),
                            r["last_error"]});
  return out;
}

// Posts `n` tok_ok payments as `token`; returns their operation ids.
std::vector<std::string> post_payments(const Daemon& daemon, std::string_view token, int n,
                                       std::string_view prefix) {
  std::vector<std::string> ops;
  for (int i = 0; i < n; ++i) {
    const PaymentRequest req{.operation_id = unique_operation_id(prefix)};
    const HttpResponse r = post_payment(daemon.port(), token, req);
    REQUIRE_MESSAGE(r.status == 201, r.describe());
    ops.push_back(req.operation_id);
  }
  return ops;
}

void wait_succeeded(const Daemon& daemon, std::string_view token,
                    const std::vector<std::string>& ops) {
  for (const auto& op : ops) {
    const auto view = wait_for_state(daemon.port(), token, op, "SUCCEEDED", 15s);
    REQUIRE_MESSAGE(json_string(view, "state") == "SUCCEEDED", op);
  }
}

// Waits until acme has at least `expected` events, all delivered.
bool all_delivered(const Daemon& daemon, std::size_t expected,
                   std::chrono::milliseconds timeout = 15s) {
  return eventually(
      [&] {
        const auto rows = outbox_of(daemon, "acme");
        return rows.size() >= expected &&
               std::all_of(rows.begin(), rows.end(), [](const OutboxRow& r) { return r.delivered; });
      },
      timeout);
}

// "" when `r` is a correctly signed push of `row`; otherwise what is wrong.
std::string push_problem(const ReceivedWebhook& r, const OutboxRow& row) {
  std::string problems;
  auto expect = [&](bool ok, const std::string& what) {
    if (!ok) problems += what + "; ";
  };
  expect(r.method == "POST", "method " + r.method);
  expect(r.target == "/hooks/payorch", "target " + r.target);
  expect(r.header("content-type") == "application/json", "content-type " + r.header("content-type"));
  expect(r.header("payorch-event-type") == row.type, "event type " + r.header("payorch-event-type"));
  expect(r.body == row.payload, "body differs from the stored payload");
  const auto body = boost::json::parse(r.body);
  expect(json_string(body, "id") == row.event_id, "body id " + json_string(body, "id"));
  expect(json_string(body, "type") == row.type, "body type " + json_string(body, "type"));
  // Payorch-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>
  const std::string sig = r.header("payorch-signature");
  const std::size_t comma = sig.find(",v1=");
  if (!sig.starts_with("t=") || comma == std::string::npos) return problems + "signature " + sig;
  const std::string t = sig.substr(2, comma - 2);
  const auto verdict = payorch::verify_timestamped(sig, r.body, acme_secret, std::stoll(t), 0);
  expect(verdict.result == payorch::SignatureVerdict::Result::valid, "bad v1 in " + sig);
  const auto now_s = std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  expect(std::llabs(now_s - std::stoll(t)) < 60, "t far from now: " + t);
  return problems;
}

// Every received push is one of `rows` (by Payorch-Event-Id) and correct; every row was
// received; per payment, each event's first arrival follows the previous event's.
void check_pushes(const std::vector<ReceivedWebhook>& received, const std::vector<OutboxRow>& rows) {
  std::map<std::string, const OutboxRow*> by_id;
  for (const auto& row : rows) by_id[row.event_id] = &row;
  std::map<std::string, std::size_t> first_arrival;
  for (std::size_t i = 0; i < received.size(); ++i) {
    const std::string id = received[i].header("payorch-event-id");
    CAPTURE(id);
    const auto row = by_id.find(id);
    REQUIRE_MESSAGE(row != by_id.end(), "a push of an event not in the tenant's outbox");
    CHECK(push_problem(received[i], *row->second) == "");
    first_arrival.emplace(id, i);
  }
  std::map<std::string, std::size_t> last_of_payment;  // payment -> first arrival of its latest event
  for (const auto& row : rows) {
    CAPTURE(row.event_id);
    REQUIRE_MESSAGE(first_arrival.count(row.event_id) == 1, "never received");
    const std::size_t at = first_arrival[row.event_id];
    const auto prev = last_of_payment.find(row.payment_id);
    if (prev != last_of_payment.end()) CHECK_MESSAGE(prev->second < at, "out of order");
    last_of_payment[row.payment_id] = at;
  }
}

std::map<std::string, int> arrivals_by_id(const std::vector<ReceivedWebhook>& received) {
  std::map<std::string, int> n;
  for (const auto& r : received) ++n[r.header("payorch-event-id")];
  return n;
}

}  // namespace

TEST_CASE("webhook: every event arrives once, signed, as stored, in order per payment") {
  VendorSim sim;
  WebhookReceiver receiver;
  Daemon daemon(webhook_config(sim, receiver));
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail());

  const auto ops = post_payments(daemon, acme_token, 5, "wh-happy");
  const auto globex_ops = post_payments(daemon, globex_token, 1, "wh-globex");
  wait_succeeded(daemon, acme_token, ops);
  wait_succeeded(daemon, globex_token, globex_ops);
  REQUIRE(all_delivered(daemon, 10));
  // A few poll intervals more: nothing is pushed again.
  CHECK_FALSE(eventually([&] { return receiver.count() > 10; }, 500ms));

  const auto rows = outbox_of(daemon, "acme");
  REQUIRE(rows.size() == 10);
  const auto received = receiver.received();
  REQUIRE(received.size() == 10);
  check_pushes(received, rows);
  for (const auto& arrival : arrivals_by_id(received)) {
    const auto& id = arrival.first;  // not a binding: CHECK_MESSAGE captures it (clang < 16)
    CHECK_MESSAGE(arrival.second == 1, id);
  }
  for (const auto& row : rows) CHECK(row.attempts == 1);
  std::map<std::string, int> types;
  for (const auto& row : rows) ++types[row.type];
  CHECK(types["payment.created"] == 5);
  CHECK(types["payment.succeeded"] == 5);
  // globex has no webhook: its events stay in its feed, never pushed.
  const auto globex = outbox_of(daemon, "globex");
  CHECK(globex.size() == 2);
  for (const auto& row : globex) CHECK_FALSE(row.delivered);
}

TEST_CASE("webhook: refund events are pushed like payment events, after the payment's, with the refund view") {
  VendorSim sim;
  WebhookReceiver receiver;
  Daemon daemon(webhook_config(sim, receiver));
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail());

  const auto ops = post_payments(daemon, acme_token, 1, "wh-refund");
  wait_succeeded(daemon, acme_token, ops);
  const std::string refund_op = unique_operation_id("wh-refund-r");
  REQUIRE(post_refund(daemon.port(), acme_token, ops[0], refund_op, 400).status == 201);
  REQUIRE(json_string(wait_for_refund_state(daemon.port(), acme_token, refund_op, "SUCCEEDED", 5s), "state") ==
          "SUCCEEDED");
  REQUIRE(all_delivered(daemon, 4));
  const auto rows = outbox_of(daemon, "acme");
  REQUIRE(rows.size() == 4);
  const auto received = receiver.received();
  REQUIRE(received.size() == 4);
  check_pushes(received, rows);
  std::vector<std::string> types;
  for (const auto& row : rows) types.push_back(row.type);
  CHECK(types == std::vector<std::string>{"payment.created", "payment.succeeded", "refund.created", "refund.succeeded"});
  for (const auto& r : received) {
    const auto body = boost::json::parse(r.body);
    if (!json_string(body, "type").starts_with("refund.")) continue;
    const auto& refund = body.as_object().at("refund");
    CHECK(json_string(refund, "operation_id") == refund_op);
    CHECK(json_string(refund, "payment_operation_id") == ops[0]);
  }
}

TEST_CASE("webhook: a receiver that is down gets every event once it is back; none lost") {
  VendorSim sim;
  WebhookReceiver receiver;
  receiver.go_down();
  Daemon daemon(webhook_config(sim, receiver));
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail());

  const auto ops = post_payments(daemon, acme_token, 4, "wh-down");
  wait_succeeded(daemon, acme_token, ops);
  // Every payment's first event has failed more than once (connection refused) meanwhile.
  REQUIRE(eventually(
      [&] {
        const auto rows = outbox_of(daemon, "acme");
        int retried = 0;
        for (const auto& r : rows) retried += r.type == "payment.created" && r.attempts >= 2;
        return retried == 4;
      },
      10s));
  CHECK(receiver.count() == 0);
  for (const auto& row : outbox_of(daemon, "acme")) {
    CHECK_FALSE(row.delivered);
    if (row.type == "payment.created") CHECK(row.last_error.value_or("").starts_with("not_sent"));
  }

  receiver.come_back();
  REQUIRE(all_delivered(daemon, 8));
  const auto rows = outbox_of(daemon, "acme");
  REQUIRE(rows.size() == 8);
  const auto received = receiver.received();
  check_pushes(received, rows);
  for (const auto& row : rows) {
    CAPTURE(row.event_id);
    CHECK_FALSE(row.last_error.has_value());
    if (row.type == "payment.created") CHECK(row.attempts > 1);
  }
  CHECK(arrivals_by_id(received).size() == 8);
}

TEST_CASE("webhook: 500s are retried with backoff; once delivered, never sent again") {
  VendorSim sim;
  WebhookReceiver receiver;
  receiver.fail_next(3, 500);
  Daemon daemon(webhook_config(sim, receiver));
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail());

  const auto ops = post_payments(daemon, acme_token, 1, "wh-500");
  wait_succeeded(daemon, acme_token, ops);
  REQUIRE(all_delivered(daemon, 2));
  // Five poll intervals later, still nothing new.
  CHECK_FALSE(eventually([&] { return receiver.count() > 5; }, 500ms));

  const auto rows = outbox_of(daemon, "acme");
  REQUIRE(rows.size() == 2);
  const auto received = receiver.received();
  REQUIRE(received.size() == 5);
  check_pushes(received, rows);
  // created: 500, 500, 500, 200; then succeeded: 200 (it waited for created).
  for (std::size_t i = 0; i < 4; ++i) {
    CHECK(received[i].header("payorch-event-id") == rows[0].event_id);
    CHECK(received[i].answered == (i < 3 ? 500u : 200u));
  }
  CHECK(received[4].header("payorch-event-id") == rows[1].event_id);
  CHECK(rows[0].attempts == 4);
  CHECK(rows[1].attempts == 1);
  // The retries waited out 100 ms, 200 ms, 400 ms (less up to 20 % jitter).
  for (std::size_t i = 1; i < 4; ++i) {
    const auto gap = received[i].arrived_at - received[i - 1].arrived_at;
    CHECK(gap >= std::chrono::milliseconds(80 << (i - 1)));
  }
}

TEST_CASE("webhook: kill -9 with pushes in flight, restart: every event delivered, same ids") {
  VendorSim sim;
  WebhookReceiver receiver;
  receiver.delay_answers(1500ms);
  Daemon daemon(webhook_config(sim, receiver));
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail());

  const auto ops = post_payments(daemon, acme_token, 4, "wh-kill");
  REQUIRE(receiver.wait_until([](const auto& r) { return !r.empty(); }));
  daemon.kill9();
  std::set<std::string> unanswered;  // pushed, answer still held back when the daemon died
  for (const auto& r : receiver.received()) unanswered.insert(r.header("payorch-event-id"));
  REQUIRE_FALSE(unanswered.empty());

  receiver.delay_answers(0ms);
  daemon.restart();
  wait_succeeded(daemon, acme_token, ops);
  // At least created and succeeded per payment; a submit cut off by the kill also announced
  // payment.unknown on the way.
  REQUIRE(all_delivered(daemon, 8, 20s));
  const auto rows = outbox_of(daemon, "acme");
  const auto received = receiver.received();
  check_pushes(received, rows);
  // Those the dead daemon never heard back about were pushed again, with the same id.
  const auto arrivals = arrivals_by_id(received);
  for (const auto& id : unanswered) CHECK_MESSAGE(arrivals.at(id) >= 2, id);
  CHECK(arrivals.size() == rows.size());
  for (const auto& op : ops) CHECK(ledger_mismatch(fetch_payment(daemon.port(), acme_token, op), sim) == "");
}

TEST_CASE("webhook: a crash between the 2xx and its record repeats that push, same id") {
  VendorSim sim;
  WebhookReceiver receiver;
  Daemon daemon(webhook_config(sim, receiver));
  daemon.set_env("PAYORCH_FAILPOINTS", "delivery.push.after_response=crash:1");
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail());

  // The first push is refused, so the intake's 201 is on the wire long before the retry is
  // acknowledged (and the daemon dies right after that 2xx).
  receiver.fail_next(1, 503);
  const auto ops = post_payments(daemon, acme_token, 1, "wh-crash");
  const auto exit = daemon.wait_exit(10s);
  REQUIRE(exit.has_value());
  CHECK(exit->signal == SIGKILL);
  REQUIRE(receiver.count() == 2);
  const std::string first = receiver.received()[1].header("payorch-event-id");
  CHECK(receiver.received()[0].header("payorch-event-id") == first);
  const OutboxRow before = outbox_of(daemon, "acme").at(0);
  CHECK_FALSE(before.delivered);

  daemon.set_env("PAYORCH_FAILPOINTS", std::nullopt);
  daemon.restart();
  wait_succeeded(daemon, acme_token, ops);
  REQUIRE(all_delivered(daemon, 2));
  const auto rows = outbox_of(daemon, "acme");
  const auto received = receiver.received();
  check_pushes(received, rows);
  CHECK(arrivals_by_id(received).at(first) == 3);  // refused, acknowledged (crash), repeated
  CHECK(rows.at(0).event_id == first);
  // The crashed attempt was never recorded; the repeat after the restart was.
  CHECK(rows.at(0).attempts == before.attempts + 1);
}

TEST_CASE("webhook: retention purges delivered events at start, keeps undelivered ones") {
  VendorSim sim;
  WebhookReceiver receiver;
  SimProviderConfig provider;
  provider.callback = "{secret: \"sim-callback-secret\", tolerance: 5m, retry_horizon: 1s}";
  Daemon daemon(webhook_config(sim, receiver, provider,
                               "retention: {callback_inbox: 1s, delivered_events: 1s}"));
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail());

  const auto ops = post_payments(daemon, acme_token, 2, "wh-retention");
  const auto globex_ops = post_payments(daemon, globex_token, 1, "wh-retention-globex");
  wait_succeeded(daemon, acme_token, ops);
  wait_succeeded(daemon, globex_token, globex_ops);
  REQUIRE(all_delivered(daemon, 4));

  // Older than the window by the time the restarted daemon's first pass runs.
  std::this_thread::sleep_for(1100ms);
  daemon.restart();
  CHECK(eventually([&] { return outbox_of(daemon, "acme").empty(); }, 5s));
  CHECK(outbox_of(daemon, "globex").size() == 2);  // undelivered: kept
  DatabaseProbe db(daemon);
  CHECK(db.count("SELECT COUNT(*) FROM payments") == 3);
}
