// The chaos run of chaos_test.cpp against the Adyen Checkout emulator instead of
// payorch-vendor-sim: payorchd (provider `adyen`, adapter adyen, recovery: replay) charges
// through tests/emulators/adyen/server.js, run by Node as a child process on a fixed port and
// sending its HMAC-signed webhooks to payorchd's /v1/callbacks/adyen. The load and rounds are
// chaos_run.h's; what differs is the vendor (chaos_vendor.h): the sources are the emulator's
// stored payment methods (authorised, refused, received then authorised by webhook, unknown:
// 422 803), the faults are its modes (fail_before_commit, commit_then_5xx, commit_then_hang,
// delayed_commit), rounds duplicate and reorder its webhook batches or hold them back (they go
// out late), and the emulator is killed -9 and started again on its ledger in some rounds.
// payorchd is killed -9 at the end of every round. The checker of chaos_checker.h judges the
// result unchanged, reading the emulator's ledger (GET /_emu/ledger) through
// emulator_ledger_records.
//
// The same checker case and run against the Stripe emulator (tests/emulators/stripe/server.js)
// follow, through the same Vendor interface and a ledger loader of its own.
//
// Needs node and tools/deps (npm ci in tests/emulators); without them the case says so and
// passes, except with CI=true, where it fails (emulator_missing()).
#include <doctest/doctest.h>

#include <boost/json/value.hpp>

#include <functional>
#include <iostream>
#include <map>

#include "chaos/chaos_checker.h"
#include "chaos/chaos_plan.h"
#include "chaos/chaos_run.h"
#include "chaos/chaos_setup.h"
#include "chaos/chaos_vendor.h"
#include "support/adyen_emulator.h"
#include "support/daemon.h"
#include "support/engine_checks.h"
#include "support/http_client.h"
#include "support/payorch_api.h"
#include "support/sqlite_probe.h"
#include "support/stripe_emulator.h"

using namespace payorch::test;
using namespace payorch::chaos;
using namespace std::chrono_literals;

namespace {

// A request straight to the emulator's Checkout API, not through payorchd (as a second
// integration of the same merchant would send it).
HttpResponse emulator_post(const AdyenEmulator& emulator, const std::string& path, const std::string& key,
                           const std::string& body) {
  return http_request(emulator.port(), "POST", "/v71" + path,
                      {{"Content-Type", "application/json"},
                       {"X-API-Key", adyen_emulator_api_key},
                       {"Idempotency-Key", key}},
                      body);
}

std::string payment_body(const std::string& reference, const std::string& stored_method) {
  return R"({"amount":{"value":1250,"currency":"EUR"},"merchantAccount":")" + std::string(adyen_emulator_merchant) +
         R"(","paymentMethod":{"type":"scheme","storedPaymentMethodId":")" + stored_method +
         R"("},"reference":")" + reference + R"(","returnUrl":"https://example.com/return"})";
}

// The emulator's pspReference of the payment whose reference is `reference`.
std::string psp_of(const AdyenEmulator& emulator, const std::string& reference) {
  const boost::json::value ledger = emulator.ledger();
  for (const auto& p : ledger.at("payments").as_array())
    if (p.at("reference").as_string() == reference) return std::string(p.at("pspReference").as_string());
  return {};
}

// A small clean history through payorchd beside an emulator: three payments (one succeeds,
// one is declined, one pending then settled by webhook) and a refund of the first, all
// settled; what the checker needs of it, and the payments' client_keys by operation_id.
struct CleanHistory {
  ClientHistory history;
  std::map<std::string, std::string> client_keys;
};

CleanHistory clean_history(const Daemon& daemon, const VendorProfile& profile, const std::string& declined,
                           const std::string& pending) {
  const std::vector<Intent> intents{{"acme", "emu-ok", 1250, "EUR", "merchant-1", profile.source_ok},
                                    {"globex", declined, 990, "USD", "merchant-2", profile.source_decline},
                                    {"acme", pending, 5, "JPY", "merchant-3", profile.source_pending}};
  CleanHistory out;
  ClientHistory& history = out.history;
  for (const Intent& i : intents) {
    const PaymentRequest req{.operation_id = i.operation_id, .amount_minor = i.amount_minor,
                             .currency = i.currency, .payee = i.payee, .source = i.source};
    const HttpResponse r = post_payment(daemon.port(), i.tenant == "acme" ? acme_token : globex_token, req);
    REQUIRE_MESSAGE(r.status == 201, r.describe());
    const auto view = r.json();
    const std::string scope = ClientHistory::key(i.tenant, i.operation_id);
    history.sent[scope] = i;
    history.acknowledged[scope] = Acknowledgement{i, json_string(view, "id"), json_string(view, "client_key")};
    out.client_keys[i.operation_id] = json_string(view, "client_key");
    ++history.requests;
  }
  for (const Intent& i : intents)
    REQUIRE(is_settled(wait_for_payment(daemon.port(), i.tenant == "acme" ? acme_token : globex_token,
                                        i.operation_id, is_settled, 15s)));
  const RefundIntent refund{"acme", "emu-ok", "emu-ok-refund", 500};
  const HttpResponse r = post_refund(daemon.port(), acme_token, "emu-ok", refund.operation_id, refund.amount_minor);
  REQUIRE_MESSAGE(r.status == 201, r.describe());
  history.refunds_sent[ClientHistory::key("acme", refund.operation_id)] = refund;
  history.refunds_acknowledged[ClientHistory::key("acme", refund.operation_id)] =
      RefundAcknowledgement{refund, json_string(r.json(), "id"), json_string(r.json(), "client_key")};
  REQUIRE(json_string(wait_for_refund_state(daemon.port(), acme_token, refund.operation_id, "SUCCEEDED", 15s),
                      "state") == "SUCCEEDED");
  return out;
}

// The checker passes on the clean history, and counts what it holds.
void check_clean(const Report& clean) {
  std::string problems;
  for (const std::string& p : clean.problems) problems += p + "\n";
  INFO("clean: " << clean.counts() << "\n" << problems);
  CHECK(clean.passed());
  CHECK(clean.acknowledged == 3);
  CHECK(clean.charges == 3);
  CHECK(clean.succeeded == 2);
  CHECK(clean.failed_final == 1);
  CHECK(clean.vendor_refunds == 1);
  CHECK(clean.refunds_acknowledged == 1);
}

}  // namespace

// The emulator's ledger as the checker reads it (emulator_ledger_records) can fail the check: a
// small clean run passes, then payments and refunds sent straight to the emulator, which
// payorchd never asked for, each show up in their own count.
TEST_CASE("chaos checker on the Adyen emulator's ledger: a clean history passes; charges payorchd never asked for are counted") {
  if (const std::string missing = adyen_emulator_missing(); !missing.empty()) {
    MESSAGE("skipped: " << missing);
    return;
  }
  const std::vector<std::uint16_t> ports = fixed_ports(2);
  const std::string webhook_url = "http://127.0.0.1:" + std::to_string(ports[0]) + "/v1/callbacks/adyen";
  AdyenEmulator emulator({.port = ports[1], .webhook_url = webhook_url});
  Daemon daemon(chaos_adyen_daemon_config(emulator.base_url(), ports[0]));
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail(4000) << "\nemulator log:\n" << emulator.log_tail());

  const CleanHistory run = clean_history(daemon, adyen_emulator_profile(), "emu-refused", "emu-received");
  const ClientHistory& history = run.history;
  const std::map<std::string, std::string>& client_keys = run.client_keys;
  const auto records = sqlite_records(daemon.db_path());
  const auto ledger = emulator_ledger_records(emulator);
  check_clean(check(history, *records, *ledger));
  CHECK(unsettled(*records, *ledger) == 0);

  // A second payment for emu-ok's reference, under another idempotency key: charged twice.
  REQUIRE(emulator_post(emulator, "/payments", "direct-1", payment_body(client_keys.at("emu-ok"), "stored_authorised"))
              .status == 200);
  const Report twice = check(history, *records, *ledger);
  CHECK(twice.duplicated == 1);
  CHECK(twice.unexpected == 0);
  CHECK(twice.mismatched == 0);  // emu-ok's vendor_reference is still its first payment's
  CHECK_FALSE(twice.passed());

  // A payment nobody asked payorchd for; then a refund of the Refused payment, which the
  // emulator declines "Payment not authorised" (an early refund, as the checker counts them).
  // A pending payment counts as unsettled while Received.
  REQUIRE(emulator_post(emulator, "/payments", "direct-2", payment_body("ck_NOBODYASKEDFORTHIS00000", "stored_received"))
              .status == 200);
  CHECK(unsettled(*records, *ledger) == 1);
  const std::string refused_psp = psp_of(emulator, client_keys.at("emu-refused"));
  REQUIRE(!refused_psp.empty());
  REQUIRE(emulator_post(emulator, "/payments/" + refused_psp + "/refunds", "direct-3",
                        R"({"amount":{"value":100,"currency":"USD"},"merchantAccount":")" +
                            std::string(adyen_emulator_merchant) + R"(","reference":"ck_EARLYREFUND000000000000"})")
              .status == 201);
  const Report damaged = check(history, *records, *ledger);
  CHECK(damaged.duplicated == 1);
  CHECK(damaged.unexpected == 2);  // the payment and the refund name no client_key of payorchd's
  CHECK(damaged.early_refunds == 1);
  CHECK(damaged.vendor_refunds == 2);
  CHECK(damaged.charges == 5);
}

// The Stripe emulator's ledger as the checker reads it (emulator_ledger_records) can fail the
// check too: a small clean run passes, then PaymentIntents created straight at the emulator,
// which payorchd never asked for, show up as duplicated (payorch's client_key) and unexpected.
TEST_CASE("chaos checker on the Stripe emulator's ledger: a clean history passes; charges payorchd never asked for are counted") {
  if (const std::string missing = stripe_emulator_missing(); !missing.empty()) {
    MESSAGE("skipped: " << missing);
    return;
  }
  const std::vector<std::uint16_t> ports = fixed_ports(2);
  StripeEmulator emulator("http://127.0.0.1:" + std::to_string(ports[0]) + "/v1/callbacks/stripe", 300, ports[1]);
  Daemon daemon(chaos_stripe_daemon_config(emulator.base_url(), ports[0]));
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail(4000) << "\nemulator log:\n" << emulator.log_tail());

  const CleanHistory run = clean_history(daemon, stripe_emulator_profile(), "emu-declined", "emu-3ds");
  const ClientHistory& history = run.history;
  const std::map<std::string, std::string>& client_keys = run.client_keys;
  const auto records = sqlite_records(daemon.db_path());
  const auto ledger = emulator_ledger_records(emulator);
  check_clean(check(history, *records, *ledger));

  // PaymentIntents created straight at the emulator (as a second integration of the same
  // account would), under keys of their own: one for emu-ok's client_key, one for nobody's.
  const auto direct = [&emulator](const std::string& key, const std::string& client_key) {
    return http_request(emulator.port(), "POST", "/v1/payment_intents",
                        {{"Authorization", std::string("Bearer ") + stripe_emulator_api_key},
                         {"Content-Type", "application/x-www-form-urlencoded"},
                         {"Idempotency-Key", key}},
                        "amount=1250&currency=eur&confirm=true&payment_method=pm_card_visa"
                        "&payment_method_types[]=card&metadata[client_key]=" + client_key);
  };
  REQUIRE(direct("direct-1", client_keys.at("emu-ok")).status == 200);
  const Report twice = check(history, *records, *ledger);
  CHECK(twice.duplicated == 1);
  CHECK(twice.unexpected == 0);
  CHECK_FALSE(twice.passed());
  REQUIRE(direct("direct-2", "ck_NOBODYASKEDFORTHIS00000").status == 200);
  const Report damaged = check(history, *records, *ledger);
  CHECK(damaged.duplicated == 1);
  CHECK(damaged.unexpected == 1);
  CHECK(damaged.charges == 5);
}

namespace {

// One chaos run against a vendor emulator and the checks every such run must pass: the kills
// as planned (payorchd's, and the emulator's), no control call that failed, the emulator took
// payments and refunds, the checker passes, both processes are up, SQLite is intact, payorchd
// acknowledged every webhook (`webhooks_acknowledged`: the late and duplicated ones included)
// and check-exposure agrees. `daemon` is started.
void run_and_check(const char* title, const Params& params, const VendorProfile& profile, Vendor& vendor,
                   const std::string& provider, Daemon& daemon, const RecordSource& ledger,
                   const std::function<bool()>& webhooks_acknowledged) {
  const std::vector<Round> rounds = plan_rounds(params, profile);
  std::cout << "chaos plan (" << vendor.name() << "): " << params.describe() << std::endl;
  INFO("chaos plan: " << params.describe() << " (rerun with PAYORCH_CHAOS_SEED=" << params.seed << ")");

  const auto records = sqlite_records(daemon.db_path());
  Target target{.vendor = &vendor, .profile = &profile, .provider = provider, .nodes = {&daemon},
                .payorch = records.get(), .ledger = &ledger};
  Tally tally;
  const ClientHistory history = run(params, rounds, target, tally);
  const Report checked = check(history, *records, ledger);

  const CommandResult exposure = daemon.run_command({"check-exposure", "--config", daemon.config_path()});
  const std::string block =
      report(title, params, tally, history, checked, count_lines(daemon.log_path(), "level=error"),
             "exposure      payorchd check-exposure: " + exposure_verdict(exposure.output) + "\n", vendor.name());
  std::cout << block << std::flush;

  int planned_vendor_kills = 0;
  for (const Round& round : rounds) planned_vendor_kills += round.kill_sim;
  CHECK(tally.kills == params.kills);
  CHECK(tally.sim_restarts == planned_vendor_kills);
  CHECK(tally.control_errors == 0);
  CHECK(checked.acknowledged > 0);
  CHECK(checked.charges > 0);  // the emulator, not something else, took the payments
  CHECK(checked.refunds_acknowledged > 0);
  CHECK_MESSAGE(checked.passed(), block);
  CHECK(daemon.running());
  CHECK(vendor.running());
  CHECK(SqliteProbe(daemon.db_path()).integrity_check() == "ok");
  CHECK(eventually(webhooks_acknowledged, std::chrono::seconds(15)));
  INFO("payorchd check-exposure:\n" << exposure.output);
  CHECK(exposure.status.exited);
  CHECK(exposure.status.code == 0);
  CHECK(exposure.output.find("exposure ok") != std::string::npos);
}

}  // namespace

TEST_CASE("chaos against the Adyen emulator: payorchd killed -9 under emulator faults loses nothing, charges once") {
  if (const std::string missing = adyen_emulator_missing(); !missing.empty()) {
    MESSAGE("skipped: " << missing);
    return;
  }
  // More rounds than the sim's run (whose kills are the suite's defaults): the emulator's run is
  // shorter per round, and two of its rounds restart the emulator.
  const Params params = Params::from_environment(Params{.kills = 8, .sim_kills = 2});
  const std::vector<std::uint16_t> ports = fixed_ports(2);
  const std::string webhook_url = "http://127.0.0.1:" + std::to_string(ports[0]) + "/v1/callbacks/adyen";
  AdyenEmulator emulator({.port = ports[1], .webhook_url = webhook_url});
  Daemon daemon(chaos_adyen_daemon_config(emulator.base_url(), ports[0]));
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail(6000) << "\nemulator log:\n" << emulator.log_tail());
  AdyenEmulatorVendor vendor(emulator, webhook_url);
  const auto ledger = emulator_ledger_records(emulator);
  run_and_check("chaos report (adyen emulator)", params, adyen_emulator_profile(), vendor, "adyen", daemon, *ledger,
                [&emulator] { return emulator.ledger().at("webhooks").at("pending").as_int64() == 0; });
}

// The same run against the Stripe emulator (tests/emulators/stripe/server.js): payorchd's
// provider `stripe` (adapter stripe, recovery: replay), Stripe's test PaymentMethods as sources
// (pm_card_visa, pm_card_chargeDeclined, pm_card_authenticationRequired: requires_action, then
// succeeded by webhook; pm_card_expired: no such PaymentMethod), the emulator's fault modes,
// duplicated and reordered webhooks. The emulator is not killed: a kill -9 loses its
// webhooks not yet delivered and the later success of intents in requires_action (both only
// in its memory), which Stripe never loses, and the stripe adapter has no lookup to find them.
TEST_CASE("chaos against the Stripe emulator: payorchd killed -9 under emulator faults loses nothing, charges once") {
  if (const std::string missing = stripe_emulator_missing(); !missing.empty()) {
    MESSAGE("skipped: " << missing);
    return;
  }
  const Params params = Params::from_environment(Params{.kills = 8, .sim_kills = 0});
  const std::vector<std::uint16_t> ports = fixed_ports(2);
  const std::string webhook_url = "http://127.0.0.1:" + std::to_string(ports[0]) + "/v1/callbacks/stripe";
  StripeEmulator emulator(webhook_url, 300, ports[1]);
  Daemon daemon(chaos_stripe_daemon_config(emulator.base_url(), ports[0]));
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail(6000) << "\nemulator log:\n" << emulator.log_tail());
  StripeEmulatorVendor vendor(emulator);
  const auto ledger = emulator_ledger_records(emulator);
  run_and_check("chaos report (stripe emulator)", params, stripe_emulator_profile(), vendor, "stripe", daemon,
                *ledger, [&emulator] { return emulator.webhooks_acknowledged(); });
}
