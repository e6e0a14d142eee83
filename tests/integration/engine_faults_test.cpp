// The engine when the vendor call goes wrong (docs/contract.md §3 UNKNOWN, §5 contracts, seeds/000
// "外部副作用"): faults queued in the real payorch-vendor-sim before the intake. A vendor that
// failed before committing is resubmitted with the same client_key only after its "not found"
// became trustworthy; one that committed and lost its answer is found by lookup or replay; one
// that commits late is never declared failed; a receipt-only contract stays UNKNOWN in front of
// a human; and UNKNOWN exposure pauses intake until it is recovered. After every case the sim's
// ledger holds exactly one charge for the payment's client_key.
#include <doctest/doctest.h>

#include <boost/json/object.hpp>

#include <algorithm>
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

// outbox.created_at (ms) of the payment's first event of `type`, -1 if none.
std::int64_t event_time(PayorchRecords& records, const std::string& payment_id,
                        const std::string& type) {
  const auto rows = records.probe().query(
      "SELECT created_at FROM outbox WHERE payment_id = ? AND type = ? ORDER BY seq LIMIT 1",
      {payment_id, type});
  return rows.empty() ? -1 : std::stoll(rows[0].at("created_at").value_or("-1"));
}

bool provider_paused(std::uint16_t port, const std::string& provider) {
  const HttpResponse r = http_request(port, "GET", "/status");
  if (r.status != 200) return false;
  const boost::json::value body = r.json();
  for (const auto& p : body.as_object().at("providers").as_array())
    if (json_string(p, "name") == provider) {
      const auto* paused = p.as_object().if_contains("intake_paused");
      return paused && paused->is_bool() && paused->as_bool();
    }
  return false;
}

// Polls every payment until all are settled (terminal or with an open case) or `timeout`;
// returns the last view of each and appends the states each went through.
std::vector<boost::json::value> settle_all(std::uint16_t port,
                                           const std::vector<std::string>& operation_ids,
                                           std::vector<std::vector<std::string>>& states,
                                           std::chrono::milliseconds timeout) {
  std::vector<boost::json::value> views(operation_ids.size());
  states.resize(operation_ids.size());
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    bool all = true;
    for (std::size_t i = 0; i < operation_ids.size(); ++i) {
      if (!views[i].is_null() && is_settled(views[i])) continue;
      boost::json::value v = fetch_payment(port, acme_token, operation_ids[i]);
      if (v.is_null()) {
        all = false;
        continue;
      }
      const std::string state = json_string(v, "state");
      if (states[i].empty() || states[i].back() != state) states[i].push_back(state);
      views[i] = std::move(v);
      all = all && is_settled(views[i]);
    }
    if (all || std::chrono::steady_clock::now() >= deadline) return views;
    std::this_thread::sleep_for(50ms);
  }
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace

TEST_CASE("engine: vendor faults around the commit end SUCCEEDED with exactly one charge") {
  struct FaultCase {
    std::string provider;
    std::string mode;
    std::optional<std::int64_t> delay_ms;
    std::string contract;
  };
  // One sim (and provider) per case, so the four run side by side and each fault meets its
  // own payment's first submit.
  const std::vector<FaultCase> cases = {
      // 500 at once, nothing stored: UNKNOWN; "not found" trusted after 2 s; resubmitted.
      {"f-before-commit", "fail_before_commit", std::nullopt,
       "{key_retention: 24h, recovery: lookup, not_found_final_after: 2s}"},
      // Stored, answered 502: UNKNOWN; the lookup finds it.
      {"f-commit-5xx", "commit_then_5xx", std::nullopt,
       "{key_retention: 24h, recovery: lookup, not_found_final_after: 2s}"},
      // Stored, the answer held past the 2 s request timeout: UNKNOWN; the lookup finds it.
      {"f-commit-hang", "commit_then_hang", 3000,
       "{key_retention: 24h, recovery: lookup, not_found_final_after: 2s}"},
      // 504 at once, stored 2.5 s later: lookups say "not found" meanwhile, which the 5 s
      // not_found_final_after does not trust yet.
      {"f-delayed-commit", "delayed_commit", 2500,
       "{key_retention: 24h, recovery: lookup, not_found_final_after: 5s}"},
  };
  std::vector<std::unique_ptr<VendorSim>> sims;
  std::vector<SimProviderConfig> providers;
  for (const FaultCase& c : cases) {
    sims.push_back(std::make_unique<VendorSim>());
    sims.back()->add_fault(c.mode, 1, c.delay_ms, "tok_ok");
    providers.push_back({.name = c.provider,
                         .base_url = sims.back()->base_url(),
                         .contract = c.contract,
                         .retry = roomy_retry});
  }
  Daemon daemon(engine_daemon_config(providers));
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail(8192));

  std::vector<std::string> operation_ids;
  for (const FaultCase& c : cases) {
    const PaymentRequest req{.operation_id = unique_operation_id("eng-" + c.mode), .provider = c.provider};
    const HttpResponse r = post_payment(daemon.port(), acme_token, req);
    REQUIRE_MESSAGE(r.status == 201, r.describe());
    operation_ids.push_back(req.operation_id);
  }
  std::vector<std::vector<std::string>> states;
  const auto views = settle_all(daemon.port(), operation_ids, states, 15s);

  PayorchRecords records(daemon);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const FaultCase& c = cases[i];
    const VendorSim& sim = *sims[i];
    const boost::json::value& view = views[i];
    CAPTURE(c.mode);
    INFO("payment: " << describe_payment(view, records) << "\nsim log:\n" << sim.log_tail());
    const std::string payment_id = json_string(view, "id");
    const std::string client_key = json_string(view, "client_key");
    const std::string events = records.event_types(payment_id);

    CHECK(json_string(view, "state") == "SUCCEEDED");
    CHECK(!contains(states[i], "FAILED_FINAL"));
    CHECK(sim.count_charges(client_key) == 1);
    CHECK(ledger_mismatch(view, sim) == "");
    // The payment went through UNKNOWN, announced once; no failure was ever announced.
    CHECK(records.count_events(payment_id, "payment.unknown") == 1);
    CHECK(records.count_events(payment_id, "payment.succeeded") == 1);
    CHECK(records.count_events(payment_id, "payment.failed") == 0);
    CHECK(view.as_object().at("reconciliation").is_null());

    if (c.mode == "fail_before_commit") {
      // UNKNOWN -> PROCESSING (trusted not-found) -> SUCCEEDED by a resubmit with the same key.
      CHECK(events == "payment.created, payment.unknown, payment.processing, payment.succeeded");
      const std::int64_t unknown_at = event_time(records, payment_id, "payment.unknown");
      const std::int64_t trusted_at = event_time(records, payment_id, "payment.processing");
      CHECK_MESSAGE(trusted_at - unknown_at >= 2000,
                    "not found trusted " << (trusted_at - unknown_at)
                                         << " ms after the submit ended (not_found_final_after 2s)");
      CHECK(sim.charge_requests_logged(client_key) == 2);  // the failed one and the resubmit
    } else {
      // Found by lookup, never resubmitted: a late commit is not mistaken for "not found".
      CHECK(events == "payment.created, payment.unknown, payment.succeeded");
      if (c.mode != "delayed_commit") CHECK(sim.charge_requests_logged(client_key) == 1);
    }
  }
  CHECK(records.repeated_events().empty());
}

TEST_CASE("engine: seeds external case: lookup and replay recover, a receipt-only contract stays UNKNOWN") {
  // The same fault (the vendor commits, the answer is lost as a 502) under three contracts.
  VendorSim lookup_sim;
  VendorSim replay_sim;
  VendorSim receipt_sim;
  for (VendorSim* sim : {&lookup_sim, &replay_sim, &receipt_sim})
    sim->add_fault("commit_then_5xx", 1, std::nullopt, "tok_ok");
  // A receipt-only vendor: no lookup by our key at all.
  receipt_sim.set_config(boost::json::object{{"lookup_enabled", false}});

  Daemon daemon(engine_daemon_config(
      {{.name = "lookup-vendor",
        .base_url = lookup_sim.base_url(),
        .contract = "{key_retention: 24h, recovery: lookup, not_found_final_after: 2s}",
        .retry = roomy_retry},
       {.name = "replay-vendor",
        .base_url = replay_sim.base_url(),
        .contract = "{key_retention: 24h, recovery: replay, not_found_final_after: never}",
        .retry = roomy_retry},
       {.name = "receipt-vendor",
        .base_url = receipt_sim.base_url(),
        .contract = "{key_retention: 24h, recovery: none, not_found_final_after: never}",
        .retry = roomy_retry}}));
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail(8192));

  const PaymentRequest by_lookup{.operation_id = unique_operation_id("eng-ext-lookup"),
                                 .provider = "lookup-vendor"};
  const PaymentRequest by_replay{.operation_id = unique_operation_id("eng-ext-replay"),
                                 .provider = "replay-vendor"};
  const PaymentRequest receipt{.operation_id = unique_operation_id("eng-ext-receipt"),
                               .provider = "receipt-vendor"};
  for (const PaymentRequest* req : {&by_lookup, &by_replay, &receipt}) {
    const HttpResponse r = post_payment(daemon.port(), acme_token, *req);
    REQUIRE_MESSAGE(r.status == 201, r.describe());
  }
  std::vector<std::vector<std::string>> states;
  const auto views = settle_all(daemon.port(),
                                {by_lookup.operation_id, by_replay.operation_id, receipt.operation_id},
                                states, 10s);
  PayorchRecords records(daemon);

  // Known client_key + lookup: UNKNOWN, found by the key, SUCCEEDED; one request, one charge.
  {
    const auto& view = views[0];
    INFO("lookup: " << describe_payment(view, records) << "\nsim log:\n" << lookup_sim.log_tail());
    const std::string client_key = json_string(view, "client_key");
    CHECK(json_string(view, "state") == "SUCCEEDED");
    CHECK(records.event_types(json_string(view, "id")) ==
          "payment.created, payment.unknown, payment.succeeded");
    CHECK(lookup_sim.count_charges(client_key) == 1);
    CHECK(lookup_sim.charge_requests_logged(client_key) == 1);
    CHECK(ledger_mismatch(view, lookup_sim) == "");
  }
  // Known client_key + replay: the same request again with the same key; two requests, one
  // charge (the seed's "两次请求只有一笔扣款").
  {
    const auto& view = views[1];
    INFO("replay: " << describe_payment(view, records) << "\nsim log:\n" << replay_sim.log_tail());
    const std::string client_key = json_string(view, "client_key");
    CHECK(json_string(view, "state") == "SUCCEEDED");
    CHECK(records.event_types(json_string(view, "id")) ==
          "payment.created, payment.unknown, payment.succeeded");
    CHECK(replay_sim.count_charges(client_key) == 1);
    CHECK(replay_sim.charge_requests_logged(client_key) == 2);
    CHECK(ledger_mismatch(view, replay_sim) == "");
  }
  // Receipt-only: nobody can tell what happened without the lost receipt: UNKNOWN, a case for a
  // human, and no automatic resubmission (which could charge twice).
  {
    const auto& view = views[2];
    INFO("receipt-only: " << describe_payment(view, records) << "\nsim log:\n"
                          << receipt_sim.log_tail());
    const std::string payment_id = json_string(view, "id");
    const std::string client_key = json_string(view, "client_key");
    CHECK(json_string(view, "state") == "UNKNOWN");
    const auto recon = reconciliation_of(view);
    REQUIRE(!recon.is_null());
    CHECK(json_string(recon, "reason") == "unrecoverable_contract");
    CHECK(json_string(recon, "status") == "open");
    const auto cases = records.cases(payment_id);
    REQUIRE(cases.size() == 1);
    CHECK(cases[0].at("reason") == "unrecoverable_contract");
    CHECK(cases[0].at("status") == "open");
    CHECK(records.event_types(payment_id) ==
          "payment.created, payment.unknown, payment.escalated");
    const auto attempts = json_int(view, "attempt_count");
    CHECK(attempts == 1);

    // A few seconds later: nothing more was sent for this key, nothing changed.
    std::this_thread::sleep_for(3s);
    const auto later = fetch_payment(daemon.port(), acme_token, receipt.operation_id);
    CHECK(json_string(later, "state") == "UNKNOWN");
    CHECK(json_int(later, "attempt_count") == attempts);
    CHECK(receipt_sim.count_charges(client_key) == 1);
    CHECK(receipt_sim.charge_requests_logged(client_key) == 1);
    int in_ledger = 0;
    for (const auto& charge : receipt_sim.ledger())
      if (json_string(charge, "reference") == client_key) ++in_ledger;
    CHECK(in_ledger == 1);
    CHECK(records.count_events(payment_id, "payment.escalated") == 1);
    CHECK(records.cases(payment_id).size() == 1);
  }
  CHECK(records.repeated_events().empty());
}

TEST_CASE("engine: UNKNOWN exposure at the risk cap pauses intake until recovery") {
  // Every charge commits and then hangs past the request timeout; the replay contract resends
  // the same key, which the sim replays (no new charge) and hangs again: the payment stays
  // UNKNOWN until the fault is cleared.
  VendorSim sim;
  sim.add_fault("commit_then_hang", -1, 3000);
  Daemon daemon(engine_daemon_config(
      {{.base_url = sim.base_url(),
        .contract = "{key_retention: 24h, recovery: replay, not_found_final_after: never}",
        .retry = "{max_attempts: 20, initial_backoff: 200ms, max_backoff: 1s, give_up_after: 1h}",
        .risk = "{max_unknown_count: 1, max_unknown_amount_minor: 100000000}"}}));
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail(8192) << "\nsim log:\n" << sim.log_tail());

  const PaymentRequest first{.operation_id = unique_operation_id("eng-risk-first")};
  const HttpResponse created = post_payment(daemon.port(), acme_token, first);
  REQUIRE_MESSAGE(created.status == 201, created.describe());
  const std::string first_id = json_string(created.json(), "id");

  const auto unknown = wait_for_state(daemon.port(), acme_token, first.operation_id, "UNKNOWN", 5s);
  REQUIRE(json_string(unknown, "state") == "UNKNOWN");
  CHECK(eventually([&] { return provider_paused(daemon.port(), "sim"); }, 2s));

  // A new intent is refused without being recorded...
  const PaymentRequest second{.operation_id = unique_operation_id("eng-risk-second"),
                              .amount_minor = 777};
  const HttpResponse paused = post_payment(daemon.port(), acme_token, second);
  CHECK_MESSAGE(is_problem(paused, 503, "intake-paused"), paused.describe());
  const std::string retry_after = paused.header("retry-after");
  CHECK_MESSAGE((!retry_after.empty() &&
                 retry_after.find_first_not_of("0123456789") == std::string::npos),
                "Retry-After: '" << retry_after << "'");
  CHECK(fetch_payment(daemon.port(), acme_token, second.operation_id).is_null());
  // ...while a replay of the accepted one still answers 200 with the stored payment.
  const HttpResponse replay = post_payment(daemon.port(), acme_token, first);
  CHECK_MESSAGE(replay.status == 200, replay.describe());
  CHECK(replay.header("idempotent-replayed") == "true");
  CHECK(json_string(replay.json(), "id") == first_id);

  // The vendor recovers: the next replay gets the stored charge, exposure drops, intake resumes.
  sim.clear_faults();
  const auto recovered =
      wait_for_state(daemon.port(), acme_token, first.operation_id, "SUCCEEDED", 10s);
  PayorchRecords records(daemon);
  INFO("first: " << describe_payment(recovered, records));
  REQUIRE(json_string(recovered, "state") == "SUCCEEDED");
  const std::string first_key = json_string(recovered, "client_key");
  CHECK(sim.count_charges(first_key) == 1);
  CHECK(sim.charge_requests_logged(first_key) >= 2);  // the submit and >= 1 replay
  CHECK(ledger_mismatch(recovered, sim) == "");
  CHECK(records.event_types(first_id) ==
        "payment.created, payment.unknown, payment.succeeded");

  HttpResponse accepted;
  CHECK(eventually(
      [&] {
        accepted = post_payment(daemon.port(), acme_token, second);
        if (accepted.status != 503) return true;
        std::this_thread::sleep_for(100ms);
        return false;
      },
      5s));
  REQUIRE_MESSAGE(accepted.status == 201, accepted.describe());
  const auto second_view =
      wait_for_state(daemon.port(), acme_token, second.operation_id, "SUCCEEDED", 5s);
  CHECK(json_string(second_view, "state") == "SUCCEEDED");
  CHECK(sim.count_charges(json_string(second_view, "client_key")) == 1);
  CHECK(ledger_mismatch(second_view, sim) == "");
}
