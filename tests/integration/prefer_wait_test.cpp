// `Prefer: wait=N` (docs/contract.md §2): the intake answer is held until the payment is terminal or N
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

TEST_CASE("engine: Prefer wait in RFC 7240 spellings, beside other preferences and on several lines") {
  VendorSim sim;
  Daemon daemon(engine_daemon_config({{.base_url = sim.base_url(), .retry = roomy_retry}}));
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail() << "\nsim log:\n" << sim.log_tail());

  // tok_ok settles within milliseconds, but never before the intake is answered: SUCCEEDED in
  // the 201 shows the answer waited, PROCESSING that the preference was missed.
  const std::vector<std::pair<std::string, Headers>> spellings{
      {"quoted", {{"Prefer", "wait=\"10\""}}},
      {"mixed-case", {{"Prefer", "Wait=10"}}},
      {"upper-case-name", {{"PREFER", "wait=10"}}},
      {"after-another", {{"Prefer", "respond-async, wait=10"}}},
      {"after-parameters", {{"Prefer", "return=minimal; foo, wait=10"}}},
      {"two-lines", {{"Prefer", "respond-async"}, {"Prefer", "wait=10"}}},
  };
  for (const auto& spelling : spellings) {
    // Named copies, not structured bindings: doctest's CAPTURE is a lambda, and clang 14 cannot
    // capture a structured binding.
    const std::string& name = spelling.first;
    const Headers& headers = spelling.second;
    CAPTURE(name);
    const PaymentRequest req{.operation_id = unique_operation_id("wait-" + name), .source = "tok_ok"};
    const HttpResponse r = post_payment(daemon.port(), acme_token, req, headers);
    REQUIRE_MESSAGE(r.status == 201, r.describe());
    CHECK(json_string(r.json(), "state") == "SUCCEEDED");
    CHECK(r.header("Preference-Applied") == "wait=10");
  }
}

TEST_CASE("engine: GET with Prefer wait answers with the terminal state, or the current one at the deadline") {
  VendorSim sim({"--pending-delay", "2s"});
  Daemon daemon(engine_daemon_config({{.base_url = sim.base_url(), .retry = roomy_retry}}));
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail() << "\nsim log:\n" << sim.log_tail());
  auto get = [&](const std::string& operation_id, const Headers& extra) {
    Headers headers{{"Authorization", std::string("Bearer ") + acme_token}};
    headers.insert(headers.end(), extra.begin(), extra.end());
    return http_request(daemon.port(), "GET", "/v1/payments/" + operation_id, headers);
  };

  // Two payments the vendor settles 2 s after the submit.
  const PaymentRequest first{.operation_id = unique_operation_id("get-wait"), .source = "tok_pending"};
  const PaymentRequest second{.operation_id = unique_operation_id("get-wait"), .source = "tok_pending"};
  for (const auto& req : {first, second}) {
    const HttpResponse r = post_payment(daemon.port(), acme_token, req);
    REQUIRE_MESSAGE(r.status == 201, r.describe());
    REQUIRE(json_string(r.json(), "state") == "PROCESSING");
  }

  // wait=1 answers at the deadline with the state it has then.
  auto t0 = std::chrono::steady_clock::now();
  const HttpResponse early = get(second.operation_id, {{"Prefer", "wait=1"}});
  auto took = std::chrono::steady_clock::now() - t0;
  REQUIRE_MESSAGE(early.status == 200, early.describe());
  CHECK(early.header("Preference-Applied") == "wait=1");
  CHECK(json_string(early.json(), "state") == "PROCESSING");
  CHECK(took >= 900ms);
  CHECK(took < 1900ms);

  // A longer wait is answered as soon as the payment is terminal, well before the deadline.
  t0 = std::chrono::steady_clock::now();
  const HttpResponse settled = get(first.operation_id, {{"Prefer", "wait=10"}});
  took = std::chrono::steady_clock::now() - t0;
  REQUIRE_MESSAGE(settled.status == 200, settled.describe());
  CHECK(settled.header("Preference-Applied") == "wait=10");
  CHECK(json_string(settled.json(), "state") == "SUCCEEDED");
  CHECK(json_string(settled.json(), "operation_id") == first.operation_id);
  CHECK(took < 8s);

  // A terminal payment answers at once; a missing one is a 404 at once; no preference, no header.
  t0 = std::chrono::steady_clock::now();
  const HttpResponse again = get(first.operation_id, {{"Prefer", "wait=10"}});
  CHECK(again.status == 200);
  CHECK(json_string(again.json(), "state") == "SUCCEEDED");
  const HttpResponse missing = get("no-such-payment", {{"Prefer", "wait=10"}});
  CHECK(is_problem(missing, 404, "not-found"));
  CHECK(std::chrono::steady_clock::now() - t0 < 2s);
  const HttpResponse plain = get(first.operation_id, {});
  CHECK(plain.status == 200);
  CHECK(plain.header("Preference-Applied") == "");
}
