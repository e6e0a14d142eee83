// Invariant 5 (docs/contract.md §3 Leases; seeds/000 "A 暂停后 B 接管"): two payorchd processes share one
// database. A claims a payment and sends the submit; the vendor holds its answer; A is frozen
// (SIGSTOP) for longer than its lease. B claims the payment with a higher fence, recovers it by
// the same client_key and decides. When A thaws, its late outcome is discarded by the fenced
// compare-and-set and logged: B's decision stands, one payment.succeeded, one charge.
//
// In that timeline B's claim already moved the payment to UNKNOWN, so A's write also fails on
// the state half of the compare-and-set. The second case isolates the fence: the lease is taken
// over (fence + 1, as a claim does) while A's call is in flight and the payment still sits in
// the very state A expects; A's answer must still change nothing.
#include <doctest/doctest.h>

#include <signal.h>

#include <chrono>
#include <thread>

#include "support/daemon.h"
#include "support/engine_checks.h"
#include "support/payorch_api.h"
#include "support/vendor_sim.h"

using namespace payorch::test;
using namespace std::chrono_literals;

namespace {

bool faults_consumed(const VendorSim& sim) {
  const HttpResponse r = sim.control("GET", "/_sim/faults");
  return r.status == 200 && r.json().as_object().at("faults").as_array().empty();
}

// True once `log` has an engine.cas_refused line about `payment_id` that says stale_fence.
bool logged_stale_fence(const std::string& log_path, const std::string& payment_id) {
  const std::string log = read_file(log_path);
  const std::string needle = " payment_id=" + payment_id + " ";
  for (std::size_t at = log.find(needle); at != std::string::npos; at = log.find(needle, at + 1)) {
    const std::size_t bol = log.rfind('\n', at) + 1;  // npos + 1 == 0: the first line
    const std::string line = log.substr(bol, log.find('\n', at) - bol);
    if (line.find(" event=engine.cas_refused ") != std::string::npos &&
        line.find(" result=stale_fence") != std::string::npos)
      return true;
  }
  return false;
}

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

TEST_CASE("engine: a stale lease holder cannot overwrite the newer decision (two payorchd, one db)"
          * doctest::test_suite("sqlite-only")) {
  VendorSim sim;
  const DaemonConfig config_a = engine_daemon_config({{.base_url = sim.base_url(), .retry = roomy_retry}});
  Daemon a(config_a);
  DaemonConfig config_b = config_a;
  config_b.database = "database: {driver: sqlite, path: \"" + a.db_path() + "\"}";
  Daemon b(config_b);
  // Two daemons on one file on purpose: lift the single-instance lock (test-only variable).
  a.set_env("PAYORCH_TEST_SHARED_DATABASE", "1");
  b.set_env("PAYORCH_TEST_SHARED_DATABASE", "1");
  a.start();
  INFO("payorchd A log:\n" << a.log_tail() << "\npayorchd B log:\n" << b.log_tail()
                           << "\nsim log:\n" << sim.log_tail());

  // The sim holds the answer to the next charge for 1.5 s (the key counts as executing).
  sim.add_fault("latency", 1, 1500);
  const PaymentRequest req{.operation_id = unique_operation_id("eng-stale")};
  // A claims after this instant, so its 3 s lease cannot lapse before it plus 3 s.
  const auto before_claim = std::chrono::steady_clock::now();
  const HttpResponse created = post_payment(a.port(), acme_token, req);
  REQUIRE_MESSAGE(created.status == 201, created.describe());
  const std::string payment_id = json_string(created.json(), "id");

  // A has claimed it and its submit is at the sim (which took the latency fault).
  PayorchRecords records(a);
  const std::string a_marker = ":" + std::to_string(a.pid()) + ":";
  SqlRow claimed;
  REQUIRE(eventually(
      [&] {
        claimed = records.payment_row(payment_id);
        return claimed["lease_owner"].value_or("").find(a_marker) != std::string::npos &&
               claimed["last_submit_started_at"].has_value() && faults_consumed(sim);
      },
      3s));
  const std::int64_t fence_a = std::stoll(claimed["fence"].value_or("0"));

  // Freeze A with its call in flight, then let B come up on the same database.
  REQUIRE(freeze_outside_write_transaction(a.pid(), a.db_path()));
  b.start();

  // B waits out A's 3 s lease, claims (fence + 1), finds the interrupted submit, recovers it by
  // lookup and decides SUCCEEDED.
  const auto decided = wait_for_state(b.port(), acme_token, req.operation_id, "SUCCEEDED", 10s);
  const auto decided_after = std::chrono::steady_clock::now() - before_claim;
  INFO("payment: " << describe_payment(decided, records));
  REQUIRE(json_string(decided, "state") == "SUCCEEDED");
  CHECK(decided_after >= 3s);  // B decided only once A's lease had lapsed
  const SqlRow after_b = records.payment_row(payment_id);
  const std::int64_t fence_b = std::stoll(after_b.at("fence").value_or("0"));
  CHECK(fence_b > fence_a);
  const std::string decided_reference = json_string(decided, "vendor_reference");
  CHECK(!decided_reference.empty());

  // A thaws: its vendor call completes (answered or timed out) and its outcome write finds a
  // newer fence.
  REQUIRE(::kill(a.pid(), SIGCONT) == 0);
  CHECK_MESSAGE(eventually([&] { return logged_stale_fence(a.log_path(), payment_id); }, 5s),
                "payorchd A did not log its discarded stale_fence write");
  std::this_thread::sleep_for(300ms);  // anything else A would do with it, it has done now
  CHECK(a.running());

  const auto final_view = fetch_payment(b.port(), acme_token, req.operation_id);
  INFO("final: " << describe_payment(final_view, records));
  CHECK(json_string(final_view, "state") == "SUCCEEDED");
  CHECK(json_string(final_view, "vendor_reference") == decided_reference);
  const SqlRow final_row = records.payment_row(payment_id);
  CHECK(final_row.at("state") == "SUCCEEDED");
  CHECK(std::stoll(final_row.at("fence").value_or("0")) == fence_b);
  CHECK(records.count_events(payment_id, "payment.succeeded") == 1);
  CHECK(records.count_events(payment_id, "payment.failed") == 0);
  CHECK(records.repeated_events().empty());
  CHECK(sim.count_charges(json_string(final_view, "client_key")) == 1);
  CHECK(ledger_mismatch(final_view, sim) == "");
  CHECK(records.probe().integrity_check() == "ok");
}

TEST_CASE("engine: a superseded fence alone rejects a late outcome, even in the expected state") {
  VendorSim sim;
  Daemon daemon(engine_daemon_config({{.base_url = sim.base_url(), .retry = roomy_retry}}));
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail() << "\nsim log:\n" << sim.log_tail());

  sim.add_fault("latency", 1, 1500);
  const PaymentRequest req{.operation_id = unique_operation_id("eng-fence")};
  const HttpResponse created = post_payment(daemon.port(), acme_token, req);
  REQUIRE_MESSAGE(created.status == 201, created.describe());
  const std::string payment_id = json_string(created.json(), "id");

  PayorchRecords records(daemon);
  SqlRow claimed;
  REQUIRE(eventually(
      [&] {
        claimed = records.payment_row(payment_id);
        return claimed["last_submit_started_at"].has_value() && faults_consumed(sim);
      },
      3s));
  const std::int64_t fence_a = std::stoll(claimed["fence"].value_or("0"));

  // Another worker takes the lease over while the submit is held at the sim: what a claim
  // does (fence + 1, a new owner), nothing else. Its lease outlasts the held answer.
  {
    DatabaseProbe writer(daemon, SqliteProbe::Mode::for_writing);
    writer.exec("UPDATE payments SET fence = fence + 1, lease_owner = 'test-usurper', "
                "lease_expires_at = " + std::to_string(wall_ms() + 2500) +
                " WHERE id = '" + payment_id + "' AND fence = " + std::to_string(fence_a));
  }
  REQUIRE(std::stoll(records.payment_row(payment_id).at("fence").value_or("0")) == fence_a + 1);

  // The held answer (succeeded) reaches the first worker; its write must find the newer fence.
  REQUIRE_MESSAGE(eventually([&] { return logged_stale_fence(daemon.log_path(), payment_id); }, 4s),
                  "no stale_fence line for " << payment_id);
  const SqlRow after = records.payment_row(payment_id);
  INFO("row after the late answer: state=" << after.at("state").value_or("?")
                                           << " fence=" << after.at("fence").value_or("?"));
  CHECK(after.at("state") == "PROCESSING");
  CHECK(after.at("lease_owner") == "test-usurper");
  CHECK(records.count_events(payment_id, "payment.succeeded") == 0);

  // When the usurper's lease lapses without a word, recovery by the same client_key decides.
  const auto recovered =
      wait_for_state(daemon.port(), acme_token, req.operation_id, "SUCCEEDED", 8s);
  INFO("payment: " << describe_payment(recovered, records));
  REQUIRE(json_string(recovered, "state") == "SUCCEEDED");
  CHECK(std::stoll(records.payment_row(payment_id).at("fence").value_or("0")) > fence_a + 1);
  CHECK(records.count_events(payment_id, "payment.succeeded") == 1);
  CHECK(sim.count_charges(json_string(recovered, "client_key")) == 1);
  CHECK(ledger_mismatch(recovered, sim) == "");
}
