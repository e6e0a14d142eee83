// Refunds when the vendor misbehaves (docs/refunds.md), against the real daemon and demo vendor,
// the ledger checked each time: each fault of the refund call leaves exactly one refund at the
// vendor; a refund of a payment whose outcome became unknown waits DEFERRED until a lookup finds
// the payment SUCCEEDED; callbacks that arrive twice, or before the answer and after the
// refund's own success, have one effect each.
#include <doctest/doctest.h>

#include <thread>

#include "support/daemon.h"
#include "support/engine_checks.h"
#include "support/payorch_api.h"
#include "support/vendor_callbacks.h"
#include "support/vendor_sim.h"

using namespace payorch::test;
using namespace std::chrono_literals;

namespace {

boost::json::value paid_payment(const Daemon& daemon, std::int64_t amount_minor, const char* prefix) {
  const PaymentRequest pay{.operation_id = unique_operation_id(prefix), .amount_minor = amount_minor};
  REQUIRE(post_payment(daemon.port(), acme_token, pay).status == 201);
  const auto view = wait_for_state(daemon.port(), acme_token, pay.operation_id, "SUCCEEDED", 5s);
  REQUIRE(json_string(view, "state") == "SUCCEEDED");
  return view;
}

// The callback answer's `result` ("applied", "duplicate", "confirmed", …).
std::string callback_result(const HttpResponse& r) {
  if (r.status != 200) return "HTTP " + std::to_string(r.status) + " " + r.body;
  return json_string(r.json(), "result");
}

}  // namespace

TEST_CASE("refunds: each fault of the refund call leaves one refund at the vendor, SUCCEEDED") {
  VendorSim sim;
  Daemon daemon(engine_daemon_config({{.base_url = sim.base_url(), .retry = roomy_retry}}));
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail(8192) << "\nsim log:\n" << sim.log_tail());
  const auto paid = paid_payment(daemon, 10000, "rff-pay");
  const std::string payment_op = json_string(paid, "operation_id");

  struct Fault {
    std::string mode;
    std::optional<std::int64_t> delay_ms;
  };
  // commit_then_hang outlasts the 2 s request timeout: no answer, the refund is looked up.
  for (const Fault& f : {Fault{"commit_then_5xx", std::nullopt}, Fault{"commit_then_hang", 3000},
                         Fault{"delayed_commit", 1000}, Fault{"fail_before_commit", std::nullopt}}) {
    CAPTURE(f.mode);
    sim.add_fault(f.mode, 1, f.delay_ms, std::nullopt, std::string("refund"));
    const std::string op = unique_operation_id(std::string("rff-") + f.mode);
    const HttpResponse created = post_refund(daemon.port(), acme_token, payment_op, op, 1000);
    REQUIRE_MESSAGE(created.status == 201, created.describe());
    std::vector<std::string> seen;
    const auto done = wait_for_refund_state(daemon.port(), acme_token, op, "SUCCEEDED", 20s, &seen);
    std::string states;
    for (const std::string& st : seen) states += st + " ";
    INFO("refund states seen: " << states);
    CHECK(json_string(done, "state") == "SUCCEEDED");
    CHECK(refund_ledger_status(sim, done) == "succeeded");
    const auto at_vendor = sim.refunds(json_string(done, "client_key"));
    if (at_vendor.size() == 1) CHECK(json_string(done, "vendor_reference") == at_vendor[0].at("id").value_or("?"));
  }
  CHECK(refunded_at_vendor(sim, json_string(paid, "vendor_reference")) == 4000);
  CHECK(json_int(fetch_payment(daemon.port(), acme_token, payment_op), "amount_refunded_minor") == 4000);
  PayorchRecords records(daemon);
  const auto repeated = records.repeated_events();
  CHECK_MESSAGE(repeated.empty(), "repeated events: " << (repeated.empty() ? "" : repeated.front()));
}

TEST_CASE("refunds: a refund of an UNKNOWN payment is DEFERRED, and sent once a lookup finds it SUCCEEDED") {
  VendorSim sim;
  // "not found" is not trusted for 10 s: the payment stays UNKNOWN until the delayed commit.
  Daemon daemon(engine_daemon_config(
      {{.base_url = sim.base_url(),
        .contract = "{key_retention: 24h, recovery: lookup, not_found_final_after: 10s}",
        .retry = roomy_retry}}));
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail(8192) << "\nsim log:\n" << sim.log_tail());

  // The charge answers 504 at once and is executed 3 s later: UNKNOWN meanwhile.
  sim.add_fault("delayed_commit", 1, 3000, std::nullopt, std::string("charge"));
  const PaymentRequest pay{.operation_id = unique_operation_id("rfu-pay"), .amount_minor = 6000};
  REQUIRE(post_payment(daemon.port(), acme_token, pay).status == 201);
  REQUIRE(json_string(wait_for_state(daemon.port(), acme_token, pay.operation_id, "UNKNOWN", 2s), "state") ==
          "UNKNOWN");
  const std::string op = unique_operation_id("rfu-refund");
  const HttpResponse created = post_refund(daemon.port(), acme_token, pay.operation_id, op, 2500);
  REQUIRE_MESSAGE(created.status == 201, created.describe());
  CHECK(json_string(created.json(), "state") == "DEFERRED");

  const auto payment = wait_for_state(daemon.port(), acme_token, pay.operation_id, "SUCCEEDED", 15s);
  REQUIRE(json_string(payment, "state") == "SUCCEEDED");
  const auto done = wait_for_refund_state(daemon.port(), acme_token, op, "SUCCEEDED", 10s);
  CHECK(json_string(done, "state") == "SUCCEEDED");
  CHECK(refund_ledger_status(sim, done) == "succeeded");
  CHECK(sim.count_charges(json_string(payment, "client_key")) == 1);
  PayorchRecords records(daemon);
  CHECK(records.event_types(json_string(payment, "id")) == "payment.created, payment.unknown, payment.succeeded");
  CHECK(records.event_types(json_string(done, "id")) == "refund.created, refund.processing, refund.succeeded");
}

TEST_CASE("refunds: duplicate and out-of-order callbacks have one effect each") {
  VendorSim sim;
  Daemon daemon(engine_daemon_config({{.base_url = sim.base_url(), .retry = roomy_retry}}));
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail(8192) << "\nsim log:\n" << sim.log_tail());
  const auto paid = paid_payment(daemon, 5000, "rfc-pay");
  const std::string charge_id = json_string(paid, "vendor_reference");

  // The refund is executed at the vendor and its answer held past the request timeout: while
  // the engine waits, the vendor's refund.succeeded callback arrives first and decides it.
  sim.add_fault("commit_then_hang", 1, 3000, std::nullopt, std::string("refund"));
  const std::string op = unique_operation_id("rfc-refund");
  const HttpResponse created = post_refund(daemon.port(), acme_token, json_string(paid, "operation_id"), op, 1200);
  REQUIRE_MESSAGE(created.status == 201, created.describe());
  const std::string refund_key = json_string(created.json(), "client_key");
  const auto executed_by = std::chrono::steady_clock::now() + 5s;
  while (sim.count_refunds(refund_key) == 0 && std::chrono::steady_clock::now() < executed_by)
    std::this_thread::sleep_for(20ms);
  const auto at_vendor = sim.refunds(refund_key);
  REQUIRE(at_vendor.size() == 1);

  SimCallback refund_cb = SimCallback::for_refund(created.json(), charge_id, "evt_rfc_1");
  refund_cb.charge_id = at_vendor[0].at("id").value_or("?");  // the vendor's refund id
  CHECK(callback_result(post_sim_callback(daemon.port(), refund_cb.body())) == "applied");
  CHECK(callback_result(post_sim_callback(daemon.port(), refund_cb.body())) == "duplicate");
  // The payment's own charge.succeeded arrives after the refund's: it confirms, nothing more.
  const SimCallback charge_cb = SimCallback::for_payment(paid, "evt_rfc_2");
  CHECK(callback_result(post_sim_callback(daemon.port(), charge_cb.body())) == "confirmed");
  CHECK(callback_result(post_sim_callback(daemon.port(), charge_cb.body())) == "duplicate");
  // A second delivery of the refund's success under another event id only confirms it.
  refund_cb.event_id = "evt_rfc_3";
  CHECK(callback_result(post_sim_callback(daemon.port(), refund_cb.body())) == "confirmed");
  // A refund event naming the payment's key (or a charge event naming the refund's) is a
  // mismatch held for a human, never applied.
  SimCallback crossed = SimCallback::for_payment(created.json(), "evt_rfc_4");
  CHECK(callback_result(post_sim_callback(daemon.port(), crossed.body())) == "mismatch");

  // The engine's call times out after the callback decided: its answer is stale, discarded.
  std::this_thread::sleep_for(3500ms);
  const auto refund = fetch_refund(daemon.port(), acme_token, op);
  CHECK(json_string(refund, "state") == "SUCCEEDED");
  CHECK(json_string(refund, "vendor_reference") == at_vendor[0].at("id").value_or("?"));
  CHECK(sim.count_refunds(refund_key) == 1);
  PayorchRecords records(daemon);
  CHECK(records.count_events(json_string(refund, "id"), "refund.succeeded") == 1);
  CHECK(records.event_types(json_string(paid, "id")) == "payment.created, payment.succeeded");
  CHECK(json_int(fetch_payment(daemon.port(), acme_token, json_string(paid, "operation_id")),
                 "amount_refunded_minor") == 1200);
}
