// The engine against the real payorch-vendor-sim, no faults (docs/contract.md §3, §5): what each vendor
// answer makes of a payment, checked against the vendor's ledger — a success is SUCCEEDED with
// the charge id, a decline is FAILED_FINAL after exactly one call, a pending charge is looked up
// until it settles — and a vendor that cannot be reached spends the retry budget and goes to a
// human instead of retrying for ever.
#include <doctest/doctest.h>


#include <thread>

#include "support/daemon.h"
#include "support/engine_checks.h"
#include "support/payorch_api.h"
#include "support/ports.h"
#include "support/vendor_sim.h"

using namespace payorch::test;
using namespace std::chrono_literals;

TEST_CASE("engine: tok_ok succeeds, tok_decline fails final once, tok_pending settles by lookup") {
  VendorSim sim({"--pending-delay", "1s"});
  Daemon daemon(engine_daemon_config({{.base_url = sim.base_url(), .retry = roomy_retry}}));
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail() << "\nsim log:\n" << sim.log_tail());

  const PaymentRequest ok{.operation_id = unique_operation_id("eng-ok"), .source = "tok_ok"};
  const PaymentRequest decline{.operation_id = unique_operation_id("eng-decline"),
                               .amount_minor = 2500,
                               .source = "tok_decline"};
  const PaymentRequest pending{.operation_id = unique_operation_id("eng-pending"),
                               .amount_minor = 4200,
                               .currency = "USD",
                               .source = "tok_pending"};
  const auto posted_at = std::chrono::steady_clock::now();
  for (const PaymentRequest* req : {&ok, &decline, &pending}) {
    const HttpResponse r = post_payment(daemon.port(), acme_token, *req);
    REQUIRE_MESSAGE(r.status == 201, r.describe());
    CHECK(view_mismatch(r.json(), *req) == "");
  }
  PayorchRecords records(daemon);

  {
    // tok_ok: one submit, SUCCEEDED, the vendor's charge id kept as vendor_reference.
    const auto view = wait_for_state(daemon.port(), acme_token, ok.operation_id, "SUCCEEDED", 5s);
    INFO("tok_ok: " << describe_payment(view, records));
    REQUIRE(json_string(view, "state") == "SUCCEEDED");
    const std::string client_key = json_string(view, "client_key");
    const auto charges = sim.charges(client_key);
    REQUIRE(charges.size() == 1);
    CHECK(charges[0].at("status") == "succeeded");
    CHECK(json_string(view, "vendor_reference") == charges[0].at("id").value_or("?"));
    CHECK(json_int(view, "attempt_count") == 1);
    CHECK(view.as_object().at("failure").is_null());
    CHECK(view.as_object().at("reconciliation").is_null());
    CHECK(records.event_types(json_string(view, "id")) == "payment.created, payment.succeeded");
    CHECK(ledger_mismatch(view, sim) == "");
  }
  {
    // tok_decline: FAILED_FINAL with the vendor's decline code after exactly one call.
    const auto view =
        wait_for_state(daemon.port(), acme_token, decline.operation_id, "FAILED_FINAL", 5s);
    INFO("tok_decline: " << describe_payment(view, records));
    REQUIRE(json_string(view, "state") == "FAILED_FINAL");
    CHECK(failure_code_of(view) == "insufficient_funds");
    CHECK(json_int(view, "attempt_count") == 1);
    CHECK(records.event_types(json_string(view, "id")) == "payment.created, payment.failed");
    // A few poll intervals later nothing has retried it: a final decline is final.
    std::this_thread::sleep_for(600ms);
    const auto later = fetch_payment(daemon.port(), acme_token, decline.operation_id);
    CHECK(json_string(later, "state") == "FAILED_FINAL");
    CHECK(json_int(later, "attempt_count") == 1);
    const std::string client_key = json_string(view, "client_key");
    CHECK(sim.count_charges(client_key) == 1);
    CHECK(sim.charge_requests_logged(client_key) == 1);
    CHECK(ledger_mismatch(later, sim) == "");
  }
  {
    // tok_pending: the submit answers pending (PROCESSING, next action query); lookups by the
    // client_key find it succeeded once the sim settles it (--pending-delay 1s).
    bool seen_pending_after_submit = false;
    std::vector<std::string> states;
    const auto view = wait_for_payment(
        daemon.port(), acme_token, pending.operation_id,
        [&](const boost::json::value& v) {
          if (json_string(v, "state") == "PROCESSING" && json_int(v, "attempt_count").value_or(0) >= 1)
            seen_pending_after_submit = true;
          return json_string(v, "state") == "SUCCEEDED";
        },
        6s, &states);
    const auto elapsed = std::chrono::steady_clock::now() - posted_at;
    INFO("tok_pending: " << describe_payment(view, records));
    REQUIRE(json_string(view, "state") == "SUCCEEDED");
    CHECK(seen_pending_after_submit);
    CHECK(elapsed >= 900ms);  // not before the sim settled it
    CHECK(json_int(view, "attempt_count").value_or(0) >= 2);  // the submit and >= 1 lookup
    CHECK(records.event_types(json_string(view, "id")) == "payment.created, payment.succeeded");
    const auto charges = sim.charges(json_string(view, "client_key"));
    REQUIRE(charges.size() == 1);
    CHECK(charges[0].at("status") == "succeeded");
    CHECK(ledger_mismatch(view, sim) == "");
  }
  CHECK(records.repeated_events().empty());
}

TEST_CASE("engine: a vendor that refuses connections spends the retry budget, then a case opens") {
  RefusingPort nowhere;
  Daemon daemon(engine_daemon_config(
      {{.base_url = "http://127.0.0.1:" + std::to_string(nowhere.port()),
        .retry = "{max_attempts: 3, initial_backoff: 200ms, max_backoff: 1s, give_up_after: 1h}"}}));
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail());

  const PaymentRequest req{.operation_id = unique_operation_id("eng-budget")};
  const HttpResponse created = post_payment(daemon.port(), acme_token, req);
  REQUIRE_MESSAGE(created.status == 201, created.describe());

  PayorchRecords records(daemon);
  const auto view = wait_for_case(daemon.port(), acme_token, req.operation_id, 8s);
  INFO(describe_payment(view, records));
  const auto recon = reconciliation_of(view);
  REQUIRE(!recon.is_null());
  CHECK(json_string(recon, "reason") == "retry_budget_exhausted");
  CHECK(json_string(recon, "status") == "open");
  // Connect refused = certainly not sent: the payment never became UNKNOWN.
  CHECK(json_string(view, "state") == "PROCESSING");
  CHECK(json_int(view, "attempt_count") == 3);

  const std::string payment_id = json_string(view, "id");
  const auto cases = records.cases(payment_id);
  REQUIRE(cases.size() == 1);
  CHECK(cases[0].at("reason") == "retry_budget_exhausted");
  CHECK(cases[0].at("status") == "open");
  CHECK(cases[0].at("id") == json_string(recon, "case_id"));
  CHECK(records.event_types(payment_id) == "payment.created, payment.escalated");

  // Automatic work stopped: no further attempts.
  std::this_thread::sleep_for(700ms);
  const auto later = fetch_payment(daemon.port(), acme_token, req.operation_id);
  CHECK(json_int(later, "attempt_count") == 3);
  CHECK(json_string(later, "state") == "PROCESSING");
  CHECK(records.count_events(payment_id, "payment.escalated") == 1);

  // An operator who checked with the vendor closes the case: the state, the case and exactly one
  // outbox event change together.
  const Headers admin{{"Authorization", std::string("Bearer ") + admin_token},
                      {"Content-Type", "application/json"}};
  const HttpResponse resolved = http_request(
      daemon.port(), "POST", "/v1/reconciliation/" + json_string(recon, "case_id") + "/resolve", admin,
      R"json({"outcome":"failed_final","note":"vendor never received it (support ticket 42)"})json");
  REQUIRE_MESSAGE(resolved.status == 200, resolved.describe());
  const auto body = resolved.json();
  CHECK(json_string(body.at("case"), "status") == "resolved");
  CHECK(json_string(body.at("case").at("resolution"), "by") == "admin");  // admin.token's operator
  const auto after = fetch_payment(daemon.port(), acme_token, req.operation_id);
  CHECK(json_string(after, "state") == "FAILED_FINAL");
  CHECK(json_string(reconciliation_of(after), "status") == "resolved");
  CHECK(records.event_types(payment_id) == "payment.created, payment.escalated, payment.failed");
}
