// `Prefer: wait=N` (SPEC §2): the intake answer is held until the payment is terminal or N
// seconds passed, and says so with Preference-Applied.
#include <doctest/doctest.h>

#include <chrono>

#include "support/daemon.h"
#include "support/engine_checks.h"
#include "support/payorch_api.h"
#include "support/vendor_sim.h"

using namespace payorch::test;
using namespace std::chrono_literals;

TEST_CASE("engine: Prefer wait answers with the terminal state, or the current one at the deadline") {
  VendorSim sim({"--pending-delay", "3s"});
  Daemon daemon(engine_daemon_config({{.base_url = sim.base_url(), .retry = roomy_retry}}));
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail() << "\nsim log:\n" << sim.log_tail());

  // A payment the vendor settles at once: the 201 already carries SUCCEEDED.
  const PaymentRequest ok{.operation_id = unique_operation_id("wait-ok"), .source = "tok_ok"};
  const HttpResponse r = post_payment(daemon.port(), acme_token, ok, {{"Prefer", "wait=10"}});
  REQUIRE_MESSAGE(r.status == 201, r.describe());
  CHECK(r.header("Preference-Applied") == "wait=10");
  CHECK(json_string(r.json(), "state") == "SUCCEEDED");
  CHECK(json_string(r.json(), "operation_id") == ok.operation_id);

  // A replay with wait answers at once (already terminal), still as a replay.
  const HttpResponse again = post_payment(daemon.port(), acme_token, ok, {{"Prefer", "wait=10"}});
  CHECK(again.status == 200);
  CHECK(again.header("Idempotent-Replayed") == "true");
  CHECK(json_string(again.json(), "state") == "SUCCEEDED");

  // A pending payment (settles after 3 s): wait=1 answers at the deadline with PROCESSING.
  const PaymentRequest pending{.operation_id = unique_operation_id("wait-pending"), .source = "tok_pending"};
  const auto t0 = std::chrono::steady_clock::now();
  const HttpResponse p = post_payment(daemon.port(), acme_token, pending, {{"Prefer", "wait=1"}});
  const auto took = std::chrono::steady_clock::now() - t0;
  REQUIRE_MESSAGE(p.status == 201, p.describe());
  CHECK(json_string(p.json(), "state") == "PROCESSING");
  CHECK(took >= 900ms);
  CHECK(took < 2900ms);

  // Without the preference there is no wait and no Preference-Applied.
  const PaymentRequest plain{.operation_id = unique_operation_id("wait-none"), .source = "tok_pending"};
  const HttpResponse n = post_payment(daemon.port(), acme_token, plain);
  CHECK(n.status == 201);
  CHECK(n.header("Preference-Applied") == "");
  CHECK(json_string(n.json(), "state") == "PROCESSING");
}
