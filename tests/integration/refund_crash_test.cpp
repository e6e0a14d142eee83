// kill -9 at each refund commit point (docs/refunds.md; STYLE: fault loops), against the real
// daemon and demo vendor:
//  - the refund intake: dying before its COMMIT leaves nothing (the retry creates the refund),
//    dying after it leaves the refund (the retry is a replay);
//  - the engine's commit points, with a refund ready to send and a DEFERRED refund whose payment
//    is being charged in the same claim round: the payment's success and the release of its
//    DEFERRED refund are one commit, so no crash can lose the refund or send it early.
// After each restart every refund settles: at most one refund at the vendor per refund key, the
// vendor's refunded total within the charge, none sent before its payment succeeded (the vendor
// would decline it charge_not_refundable), and no DEFERRED refund beside a terminal payment.
#include <doctest/doctest.h>

#include <signal.h>

#include <boost/json/serialize.hpp>

#include <memory>
#include <optional>
#include <thread>

#include "support/daemon.h"
#include "support/engine_checks.h"
#include "support/payorch_api.h"
#include "support/vendor_sim.h"

using namespace payorch::test;
using namespace std::chrono_literals;

namespace {

constexpr const char* crash_retry =
    "{max_attempts: 20, initial_backoff: 200ms, max_backoff: 1s, give_up_after: 1h}";

struct RefundCrashRun {
  std::string point;
  std::unique_ptr<VendorSim> sim = nullptr;
  std::unique_ptr<Daemon> daemon = nullptr;
  std::vector<std::string> payments = {};  // operation ids
  std::vector<std::string> refunds = {};   // operation ids, each acknowledged with a 2xx
  std::optional<ExitStatus> crash = std::nullopt;
  std::string setup_error = {};
};

std::unique_ptr<Daemon> crash_daemon(const VendorSim& sim) {
  return std::make_unique<Daemon>(engine_daemon_config({{.base_url = sim.base_url(), .retry = crash_retry}}));
}

// A tok_ok payment taken to SUCCEEDED by a daemon running normally.
void paid(RefundCrashRun& run, const std::string& op, std::int64_t amount_minor) {
  const PaymentRequest req{.operation_id = op, .amount_minor = amount_minor};
  if (post_payment(run.daemon->port(), acme_token, req).status != 201) run.setup_error += "intake of " + op + "\n";
  if (json_string(wait_for_state(run.daemon->port(), acme_token, op, "SUCCEEDED", 5s), "state") != "SUCCEEDED")
    run.setup_error += op + " did not succeed\n";
  run.payments.push_back(op);
}

// The intake points: the refund POST meets the crash; after the restart the same request is
// created again (before the commit) or replayed (after it).
void stage_intake_crash(RefundCrashRun& run, int index) {
  run.sim = std::make_unique<VendorSim>();
  run.daemon = crash_daemon(*run.sim);
  Daemon& daemon = *run.daemon;
  daemon.start();
  const std::string pay = unique_operation_id("rcr-pay-" + std::to_string(index));
  paid(run, pay, 3000);
  daemon.kill9();
  daemon.set_env("PAYORCH_FAILPOINTS", run.point + "=crash:1");
  daemon.start();
  const std::string op = unique_operation_id("rcr-refund-" + std::to_string(index));
  const HttpResponse lost = post_refund(daemon.port(), acme_token, pay, op, 1000);
  if (lost.status != 0) run.setup_error += "expected no answer at " + run.point + ", got " + lost.describe() + "\n";
  run.crash = daemon.wait_exit(5s);
  daemon.set_env("PAYORCH_FAILPOINTS", std::nullopt);
  daemon.restart();
  const HttpResponse again = post_refund(daemon.port(), acme_token, pay, op, 1000);
  const unsigned expected = run.point == "refund.before_commit" ? 201 : 200;
  if (again.status != expected)
    run.setup_error += "the retry after " + run.point + ": expected " + std::to_string(expected) + ", got " +
                       again.describe() + "\n";
  else
    run.refunds.push_back(op);
}

// The engine points: a refund of a SUCCEEDED payment, ready to send, and a DEFERRED refund of a
// payment not yet charged wait while claims fail; then the first claim round takes both the
// refund and the payment, and the process dies at the point.
void stage_engine_crash(RefundCrashRun& run, int index) {
  run.sim = std::make_unique<VendorSim>();
  run.daemon = crash_daemon(*run.sim);
  Daemon& daemon = *run.daemon;
  daemon.start();
  const std::string first = unique_operation_id("rce-pay-" + std::to_string(index));
  paid(run, first, 4000);
  daemon.kill9();

  daemon.set_env("PAYORCH_FAILPOINTS", "engine.claim.before_commit=error");
  daemon.start();
  const std::string second = unique_operation_id("rce-pay2-" + std::to_string(index));
  if (post_payment(daemon.port(), acme_token, PaymentRequest{.operation_id = second, .amount_minor = 5000}).status != 201)
    run.setup_error += "intake of " + second + "\n";
  run.payments.push_back(second);
  for (const auto& [pay, state] : {std::pair{first, "PROCESSING"}, std::pair{second, "DEFERRED"}}) {
    const std::string op = unique_operation_id("rce-refund-" + std::to_string(index));
    const HttpResponse r = post_refund(daemon.port(), acme_token, pay, op, 1500);
    if (r.status != 201 || json_string(r.json(), "state") != state)
      run.setup_error += "refund of " + pay + ": expected 201 " + state + ", got " + r.describe() + "\n";
    else
      run.refunds.push_back(op);
  }
  daemon.kill9();

  daemon.set_env("PAYORCH_FAILPOINTS", run.point + "=crash:1");
  try {
    run.crash = daemon.start_expecting_exit(10s);
  } catch (const std::exception& e) {
    run.setup_error += std::string("payorchd did not crash at ") + run.point + ": " + e.what() + "\n";
  }
  daemon.set_env("PAYORCH_FAILPOINTS", std::nullopt);
  daemon.start();
}

bool refund_settled(const boost::json::value& view) { return is_settled(view); }

}  // namespace

TEST_CASE("refunds: kill -9 at each refund commit point, restart: nothing lost, none sent twice or early") {
  std::vector<RefundCrashRun> runs;
  for (const char* point : {"refund.before_commit", "refund.after_commit"}) runs.push_back(RefundCrashRun{.point = point});
  for (const char* point : {"engine.claim.before_commit", "engine.claim.after_commit", "engine.call.after_vendor",
                            "engine.outcome.before_commit", "engine.outcome.after_commit"})
    runs.push_back(RefundCrashRun{.point = point});
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (runs[i].point.starts_with("refund.")) stage_intake_crash(runs[i], static_cast<int>(i));
    else stage_engine_crash(runs[i], static_cast<int>(i));
  }

  // Let every restarted daemon settle (a dead owner's lease lapses after 3 s; an interrupted
  // call is looked up).
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  for (;;) {
    bool all = true;
    for (const RefundCrashRun& run : runs)
      for (const std::string& op : run.refunds) all = all && refund_settled(fetch_refund(run.daemon->port(), acme_token, op));
    if (all || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(100ms);
  }

  for (RefundCrashRun& run : runs) {
    Daemon& daemon = *run.daemon;
    CAPTURE(run.point);
    INFO("payorchd log:\n" << daemon.log_tail(8192) << "\nsim log:\n" << run.sim->log_tail());
    CHECK_MESSAGE(run.setup_error.empty(), run.setup_error);
    REQUIRE(run.crash.has_value());
    CHECK_MESSAGE(run.crash->signal == SIGKILL, run.crash->describe());
    CHECK(read_file(daemon.log_path()).find("event=failpoint.crash failpoint=" + run.point + " ") != std::string::npos);
    CHECK(daemon.running());

    PayorchRecords records(daemon);
    CHECK(records.probe().integrity_check() == "ok");
    for (const std::string& op : run.refunds) {
      CAPTURE(op);
      const auto view = fetch_refund(daemon.port(), acme_token, op);
      INFO("refund: " << boost::json::serialize(view) << " events " << records.event_types(json_string(view, "id")));
      REQUIRE(view.is_object());
      CHECK(is_settled(view));
      const auto at_vendor = run.sim->refunds(json_string(view, "client_key"));
      CHECK(at_vendor.size() <= 1);
      if (json_string(view, "state") == "SUCCEEDED") CHECK(refund_ledger_status(*run.sim, view) == "succeeded");
      for (const auto& row : at_vendor) CHECK(row.at("decline_code") != std::optional<std::string>("charge_not_refundable"));
      CHECK(records.count_events(json_string(view, "id"), "refund.created") == 1);
    }
    for (const std::string& op : run.payments) {
      const auto payment = fetch_payment(daemon.port(), acme_token, op);
      const std::int64_t vendor_refunded = refunded_at_vendor(*run.sim, json_string(payment, "vendor_reference"));
      CHECK(vendor_refunded <= json_int(payment, "amount_minor").value_or(0));
      CHECK(json_int(payment, "amount_refunded_minor") == vendor_refunded);
    }
    // No DEFERRED refund beside a terminal payment; no event announced twice.
    CHECK(records.probe().count("SELECT count(*) FROM payments r JOIN payments p ON p.id = r.refund_of"
                                " WHERE CAST(r.deferred AS INTEGER) <> 0 AND p.state IN ('SUCCEEDED', 'FAILED_FINAL')") == 0);
    const auto repeated = records.repeated_events();
    CHECK_MESSAGE(repeated.empty(), "repeated events: " << (repeated.empty() ? "" : repeated.front()));
  }
}
