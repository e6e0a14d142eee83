// The vendor-side fence (docs/contract.md §5, docs/execution.md "The fence"): when automatic work gives up
// on a payment that may have been charged, payorchd asks a provider whose adapter has a fence
// to cancel the charge by reference, once, after the case commits, and records the answer on
// the case. Against the Adyen emulator (tests/emulators/adyen): POST /cancels by
// paymentReference, then the TECHNICAL_CANCEL webhook that declines the charge; and against
// the sim adapter, which has no fence: the case opens, nothing else is sent.
#include <doctest/doctest.h>

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "support/adyen_emulator.h"
#include "support/daemon.h"
#include "support/engine_checks.h"
#include "support/http_client.h"
#include "support/payorch_api.h"
#include "support/ports.h"
#include "support/vendor_sim.h"

using namespace payorch::test;
using namespace std::chrono_literals;

namespace {

const Headers admin{{"Authorization", std::string("Bearer ") + admin_token}};

// Two vendor calls at most (the submit and one replay), then a case.
constexpr const char* tiny_retry = "{max_attempts: 2, initial_backoff: 200ms, max_backoff: 500ms, give_up_after: 1h}";

DaemonConfig adyen_fence_config(const AdyenEmulator& emulator) {
  SimProviderConfig provider = adyen_provider(emulator);
  provider.timeouts = "{connect: 500ms, request: 1s}";
  provider.retry = tiny_retry;
  return engine_daemon_config({provider});
}

boost::json::value case_view(const Daemon& daemon, const std::string& case_id) {
  const HttpResponse r = http_request(daemon.port(), "GET", "/v1/reconciliation/" + case_id, admin);
  REQUIRE_MESSAGE(r.status == 200, r.describe());
  return r.json();
}

// The case's evidence entries whose source is `source`.
int evidence_from(const boost::json::value& view, std::string_view source) {
  int n = 0;
  for (const auto& e : view.at("evidence").as_array())
    if (e.is_object() && e.as_object().contains("source") && e.at("source").as_string() == source) ++n;
  return n;
}

const boost::json::value* first_evidence_from(const boost::json::value& view, std::string_view source) {
  for (const auto& e : view.at("evidence").as_array())
    if (e.is_object() && e.as_object().contains("source") && e.at("source").as_string() == source) return &e;
  return nullptr;
}

bool file_contains(const std::string& path, std::string_view needle) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str().find(needle) != std::string::npos;
}

}  // namespace

TEST_CASE("fence: adyen cancels a given-up payment by reference; TECHNICAL_CANCEL declines it; a late AUTHORISATION is a contradiction") {
  if (const std::string missing = adyen_emulator_missing(); !missing.empty()) {
    MESSAGE("skipped: " << missing);
    return;
  }
  // A payment answered Received stays Received (its authorisation would come in 10 minutes):
  // only the cancel can settle it.
  AdyenEmulator emulator({.received_delay_ms = 600'000});
  Daemon daemon(adyen_fence_config(emulator));
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail(8192) << "\nemulator log:\n" << emulator.log_tail());
  // Every /payments request is committed (the first) and never answered, replays included.
  emulator.set_fault("commit_then_hang", -1, 3000, "/payments$");

  PaymentRequest req;
  req.operation_id = unique_operation_id("fence-adyen");
  req.amount_minor = 1250;
  req.source = "shopper_42:stored_received";
  REQUIRE(post_payment(daemon.port(), acme_token, req).status == 201);

  const auto given_up = wait_for_case(daemon.port(), acme_token, req.operation_id, 20s);
  const auto recon = reconciliation_of(given_up);
  REQUIRE(!recon.is_null());
  CHECK(json_string(recon, "reason") == "retry_budget_exhausted");
  CHECK(json_string(given_up, "state") == "UNKNOWN");
  CHECK(json_int(given_up, "attempt_count") == 2);
  const std::string client_key = json_string(given_up, "client_key");
  const std::string case_id = json_string(recon, "case_id");

  // The emulator received the cancel for this reference: one, with its own idempotency key.
  const auto cancels_for = [&] {
    int n = 0;
    const boost::json::value ledger = emulator.ledger();
    for (const auto& c : ledger.at("cancels").as_array())
      if (c.at("paymentReference").as_string() == client_key) ++n;
    return n;
  };
  REQUIRE(eventually([&] { return cancels_for() == 1; }, 10s));

  // The case carries the fence's answer (201 received: pending) and the payment did not move.
  REQUIRE(eventually([&] { return evidence_from(case_view(daemon, case_id), "vendor_fence") == 1; }, 10s));
  const boost::json::value open_case = case_view(daemon, case_id);
  CHECK(json_string(open_case, "status") == "open");
  const boost::json::value* fence = first_evidence_from(open_case, "vendor_fence");
  REQUIRE(fence != nullptr);
  CHECK(json_string(*fence, "what") == "pending");
  CHECK(json_string(*fence, "case_reason") == "retry_budget_exhausted");
  CHECK(json_int(*fence, "http_status") == 201);
  CHECK(json_string(fetch_payment(daemon.port(), acme_token, req.operation_id), "state") == "UNKNOWN");

  // The TECHNICAL_CANCEL webhook (success=true) declines the charge; the system resolves the
  // case with it.
  emulator.set_webhook_url("http://127.0.0.1:" + std::to_string(daemon.port()) + "/v1/callbacks/adyen");
  const auto declined = wait_for_state(daemon.port(), acme_token, req.operation_id, "FAILED_FINAL", 15s);
  REQUIRE(json_string(declined, "state") == "FAILED_FINAL");
  CHECK(failure_code_of(declined) == "technical_cancel");
  const boost::json::value resolved = case_view(daemon, case_id);
  CHECK(json_string(resolved, "status") == "resolved");
  CHECK(evidence_from(resolved, "vendor_fence") == 1);

  // Exactly one payment at the vendor, cancelled; the one cancel; every webhook acknowledged.
  const boost::json::value ledger = emulator.ledger();
  int payments = 0;
  std::string psp;
  for (const auto& p : ledger.at("payments").as_array()) {
    if (p.at("reference").as_string() != client_key) continue;
    ++payments;
    psp = std::string(p.at("pspReference").as_string());
    CHECK(p.at("resultCode").as_string() == "Cancelled");
  }
  CHECK(payments == 1);
  CHECK(cancels_for() == 1);
  CHECK(json_string(declined, "vendor_reference") == psp);
  CHECK(eventually([&] { return emulator.ledger().at("webhooks").at("pending").as_int64() == 0; }, 10s));

  // A late AUTHORISATION success for the cancelled charge: the payment stays FAILED_FINAL and a
  // late_contradiction case opens for a human.
  const std::string items = std::string(R"([{"eventCode":"AUTHORISATION","success":"true","pspReference":")") +
                            psp + R"(","merchantAccountCode":")" + adyen_emulator_merchant +
                            R"(","merchantReference":")" + client_key +
                            R"(","amount":{"value":1250,"currency":"EUR"},"eventDate":"2026-12-02T17:01:00+01:00"}])";
  const std::string body = sign_with_adyen_library(adyen_emulator_hmac_key, items);
  const HttpResponse late = http_request(daemon.port(), "POST", "/v1/callbacks/adyen",
                                         {{"Content-Type", "application/json"}}, body);
  CHECK_MESSAGE(late.status == 200, late.describe());
  const auto contradicted = wait_for_payment(
      daemon.port(), acme_token, req.operation_id,
      [](const boost::json::value& v) {
        const auto r = reconciliation_of(v);
        return !r.is_null() && json_string(r, "reason") == "late_contradiction";
      },
      10s);
  CHECK(json_string(contradicted, "state") == "FAILED_FINAL");
  CHECK(json_string(reconciliation_of(contradicted), "reason") == "late_contradiction");
}

TEST_CASE("fence: a provider without a fence (sim) opens the case and sends nothing more") {
  RefusingPort nowhere;
  Daemon daemon(engine_daemon_config(
      {{.base_url = "http://127.0.0.1:" + std::to_string(nowhere.port()),
        .retry = "{max_attempts: 2, initial_backoff: 200ms, max_backoff: 500ms, give_up_after: 1h}"}}));
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail(8192));

  const PaymentRequest req{.operation_id = unique_operation_id("fence-sim")};
  REQUIRE(post_payment(daemon.port(), acme_token, req).status == 201);
  const auto view = wait_for_case(daemon.port(), acme_token, req.operation_id, 10s);
  const auto recon = reconciliation_of(view);
  REQUIRE(!recon.is_null());
  CHECK(json_string(recon, "reason") == "retry_budget_exhausted");
  // The give-up asked for a fence; the sim adapter has none, so none was sent or recorded.
  CHECK(eventually([&] { return file_contains(daemon.log_path(), "engine.fence_unsupported"); }, 5s));
  std::this_thread::sleep_for(500ms);
  CHECK_FALSE(file_contains(daemon.log_path(), "engine.fence_sent"));
  const boost::json::value c = case_view(daemon, json_string(recon, "case_id"));
  CHECK(json_string(c, "status") == "open");
  CHECK(evidence_from(c, "vendor_fence") == 0);
  CHECK(evidence_from(c, "engine") == 1);
}

TEST_CASE("fence: a crash between the case's commit and the fence; the next start sends it") {
  if (const std::string missing = adyen_emulator_missing(); !missing.empty()) {
    MESSAGE("skipped: " << missing);
    return;
  }
  AdyenEmulator emulator({.received_delay_ms = 600'000});
  Daemon daemon(adyen_fence_config(emulator));
  INFO("payorchd log:\n" << daemon.log_tail(8192) << "\nemulator log:\n" << emulator.log_tail());
  daemon.set_env("PAYORCH_FAILPOINTS", "engine.fence.before_send=crash:1");
  daemon.start();
  emulator.set_fault("commit_then_hang", -1, 3000, "/payments$");

  PaymentRequest req;
  req.operation_id = unique_operation_id("fence-crash");
  req.amount_minor = 1250;
  req.source = "shopper_42:stored_received";
  REQUIRE(post_payment(daemon.port(), acme_token, req).status == 201);
  const auto exit = daemon.wait_exit(20s);
  REQUIRE_MESSAGE(exit.has_value(), "payorchd did not reach engine.fence.before_send");
  CHECK(exit->signal == SIGKILL);
  CHECK(emulator.ledger().at("cancels").as_array().empty());

  daemon.set_env("PAYORCH_FAILPOINTS", std::nullopt);
  daemon.start();
  const auto view = fetch_payment(daemon.port(), acme_token, req.operation_id);
  const auto recon = reconciliation_of(view);
  REQUIRE(!recon.is_null());
  CHECK(json_string(recon, "reason") == "retry_budget_exhausted");
  const std::string client_key = json_string(view, "client_key");
  REQUIRE(eventually([&] { return evidence_from(case_view(daemon, json_string(recon, "case_id")), "vendor_fence") == 1; }, 10s));
  const boost::json::value ledger = emulator.ledger();
  REQUIRE(ledger.at("cancels").as_array().size() == 1);
  CHECK(ledger.at("cancels").as_array()[0].at("paymentReference").as_string() == client_key);
  CHECK(json_string(fetch_payment(daemon.port(), acme_token, req.operation_id), "state") == "UNKNOWN");

  // Another start owes nothing: the case has the fence's answer.
  daemon.restart();
  std::this_thread::sleep_for(1s);
  CHECK(emulator.ledger().at("cancels").as_array().size() == 1);
  CHECK(evidence_from(case_view(daemon, json_string(recon, "case_id")), "vendor_fence") == 1);
}
