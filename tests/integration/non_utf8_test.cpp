// Bytes that are not UTF-8 against the real payorchd: every door that takes text it may store
// (the settlement import, the callbacks of every vendor dialect, JSON request bodies) refuses
// them and stores nothing, and a case row that cannot be read back — planted in the database —
// is named beside the reconciliation list, by the API, by `payorchd recon list` and at the
// engine's start, while the other cases are served.
#include <doctest/doctest.h>

#include <boost/json/object.hpp>

#include <fstream>
#include <string>
#include <vector>

#include "core/utf8.h"
#include "providers/alipay/gateway.h"
#include "providers/rsa_sha256.h"
#include "support/adyen_emulator.h"
#include "support/alipay_emulator.h"
#include "support/cases.h"
#include "support/daemon.h"
#include "support/database_probe.h"
#include "support/engine_checks.h"
#include "support/http_client.h"
#include "support/payorch_api.h"
#include "support/stripe_emulator.h"
#include "support/vendor_sim.h"
#include "support/wechatpay_emulator.h"

using namespace payorch::test;
using namespace std::chrono_literals;

namespace {

constexpr const char* dead_url = "http://127.0.0.1:9";

// sim (the default), and one provider of each vendor dialect, every vendor unreachable: only
// the callbacks posted by the test reach payorchd.
DaemonConfig every_dialect_config() {
  SimProviderConfig sim;
  sim.base_url = dead_url;
  SimProviderConfig stripe{.name = "stripe",
                           .adapter = "stripe",
                           .base_url = dead_url,
                           .api_key = stripe_emulator_api_key,
                           .contract = "{key_retention: 24h, recovery: replay}",
                           .callback = std::string("{secret: \"") + stripe_emulator_webhook_secret +
                                       "\", tolerance: 5m, retry_horizon: 24h}"};
  SimProviderConfig adyen{.name = "adyen",
                          .adapter = "adyen",
                          .base_url = dead_url,
                          .api_key = adyen_emulator_api_key,
                          .contract = "{key_retention: 7d, recovery: replay}",
                          .callback = std::string("{secret: \"") + adyen_emulator_hmac_key +
                                      "\", tolerance: 5m, retry_horizon: 24h}",
                          .options = std::string("{merchant_account: ") + adyen_emulator_merchant + "}"};
  SimProviderConfig wechatpay;
  wechatpay.name = "wechatpay";
  wechatpay.adapter = "wechatpay";
  wechatpay.base_url = dead_url;
  wechatpay.api_key = "";
  wechatpay.contract = "{key_retention: 365d, recovery: lookup, not_found_final_after: 2s, close_not_before: 2s}";
  wechatpay.callback = "{tolerance: 5m, retry_horizon: 24h}";
  wechatpay.options = std::string("{mchid: \"") + wechatpay_mchid + "\", appid: \"" + wechatpay_appid +
                      "\", serial_no: \"" + wechatpay_merchant_serial + "\", private_key_file: \"" +
                      wechatpay_key_path("merchant_private.pem") + "\", platform_serial: \"" +
                      wechatpay_platform_serial + "\", platform_public_key_file: \"" +
                      wechatpay_key_path("platform_public.pem") + "\", api_v3_key_file: \"" +
                      wechatpay_key_path("api_v3_key.txt") +
                      "\", product: native, notify_url: \"https://payorch.invalid/v1/callbacks/wechatpay\"}";
  SimProviderConfig alipay;
  alipay.name = "alipay";
  alipay.adapter = "alipay";
  alipay.base_url = dead_url;
  alipay.api_key = "";
  alipay.callback = "";
  alipay.contract = "{recovery: lookup}";
  alipay.options = std::string("{app_id: \"") + alipay_emulator_app_id + "\", private_key_file: \"" +
                   alipay_key_path("app_private.pem") + "\", alipay_public_key_file: \"" +
                   alipay_key_path("alipay_public.pem") +
                   "\", product: pay, notify_url: \"https://payorch.invalid/v1/callbacks/alipay\"}";
  DaemonConfig config = engine_daemon_config({sim});
  config.providers = providers_yaml({sim, stripe, adyen, wechatpay}) + alipay.yaml() + "    preset: \"" +
                     std::string(PAYORCH_SOURCE_DIR) + "/conf/providers/alipay.yaml\"\n";
  // WeChat Pay and Alipay make up to two requests in one call: the lease holds both (2 x 2 s + 1 s).
  config.engine = "engine: {workers: 4, lease: 5s, poll_interval: 100ms}";
  return config;
}

const Headers admin{{"Authorization", std::string("Bearer ") + admin_token}};

std::int64_t rows(const Daemon& daemon, const std::string& table) {
  DatabaseProbe db(daemon);
  return db.count("SELECT count(*) FROM " + table);
}

bool contains(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

// The answer is a problem document of `type`, in UTF-8.
void check_problem(const HttpResponse& r, unsigned status, const std::string& type) {
  CHECK_MESSAGE(is_problem(r, status, type), problem_type(r));
  CHECK(payorch::valid_utf8(r.body));
}

// An Alipay notification signed with the Alipay private key the daemon's public key verifies.
std::string signed_alipay_notification(const std::string& out_trade_no) {
  namespace alipay = payorch::providers::alipay;
  alipay::Params params{{"notify_time", "2026-12-03 10:00:00"},
                        {"notify_type", "trade_status_sync"},
                        {"notify_id", "ntf_not_utf8"},
                        {"app_id", alipay_emulator_app_id},
                        {"charset", "utf-8"},
                        {"version", "1.0"},
                        {"sign_type", "RSA2"},
                        {"trade_no", "2026120322001000000000000001"},
                        {"out_trade_no", out_trade_no},
                        {"trade_status", "TRADE_SUCCESS"},
                        {"total_amount", "12.50"}};
  const auto sign = payorch::providers::rsa_sha256_sign_base64(alipay_key("alipay_private.pem"),
                                                               alipay::signing_content(params, true));
  REQUIRE(sign);
  params["sign"] = *sign;
  return alipay::form_encode(params);
}

}  // namespace

TEST_CASE("non-UTF-8: a settlement file with bytes that are not UTF-8 is refused whole, naming the line") {
  Daemon daemon;
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail());
  Headers h = admin;
  h.emplace_back("Content-Type", "text/csv");
  const std::string header = "reference,status,amount_minor,currency,vendor_reference\n";
  for (const std::string& bad : {std::string("ref\xFF\xFE,succeeded,5,EUR,ch_1\n"),
                                 std::string("ck_ABC,succeeded,5,EUR,\xFF\xFE\n")}) {
    const HttpResponse r = http_request(daemon.port(), "POST", "/v1/reconciliation/import?provider=sim", h,
                                        header + "ck_FINE,succeeded,1,EUR,\n" + bad);
    check_problem(r, 422, "invalid-settlement-file");
    CHECK(contains(json_string(r.json(), "detail"), "line 3: not valid UTF-8"));
  }
  // Nothing of either file was applied: not even the good row before the bad one.
  CHECK(rows(daemon, "reconciliation_cases") == 0);
  const HttpResponse list = http_request(daemon.port(), "GET", "/v1/reconciliation", admin);
  REQUIRE_MESSAGE(list.status == 200, list.describe());
  CHECK(list.json().at("data").as_array().empty());
}

TEST_CASE("non-UTF-8: a vendor callback of any dialect whose body or field is not UTF-8 gets 400 and records nothing") {
  Daemon daemon(every_dialect_config());
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail(16384));
  const Headers json{{"Content-Type", "application/json"}};
  const Headers form{{"Content-Type", "application/x-www-form-urlencoded; charset=utf-8"}};
  struct Door {
    std::string provider;
    Headers headers;
    std::string body;
  };
  const std::vector<Door> doors{
      {"sim", json, "{\"id\":\"evt_1\",\"type\":\"charge.succeeded\",\"data\":{\"reference\":\"ck_\xFF\xFE\"}}"},
      {"stripe", json, "{\"id\":\"evt_\xFF\xFE\",\"type\":\"payment_intent.succeeded\"}"},
      {"adyen", json, "{\"live\":\"false\",\"notificationItems\":[{\"merchantReference\":\"\xFF\xFE\"}]}"},
      {"wechatpay", json, "{\"id\":\"\xFF\xFE\",\"event_type\":\"TRANSACTION.SUCCESS\"}"},
      {"alipay", form, "notify_id=n1&out_trade_no=\xFF\xFE"},
  };
  for (const Door& door : doors) {
    INFO("provider " << door.provider);
    const HttpResponse r = http_request(daemon.port(), "POST", "/v1/callbacks/" + door.provider, door.headers, door.body);
    check_problem(r, 400, "callback-malformed");
    CHECK(contains(json_string(r.json(), "detail"), "the body is not UTF-8"));
  }

  // Signed by Alipay, its form UTF-8 on the wire, but out_trade_no=%FF%FE decodes to bytes that
  // are not: refused after the signature is checked.
  const std::string notification = signed_alipay_notification("ck_\xFF\xFE");
  CHECK(contains(notification, "out_trade_no=ck_%FF%FE"));
  const HttpResponse signed_r = http_request(daemon.port(), "POST", "/v1/callbacks/alipay", form, notification);
  check_problem(signed_r, 400, "callback-malformed");
  CHECK(contains(json_string(signed_r.json(), "detail"), "the event's reference is not UTF-8"));
  // The same notification about a UTF-8 reference is taken: the refusal was the bytes' alone.
  const HttpResponse fine = http_request(daemon.port(), "POST", "/v1/callbacks/alipay", form,
                                         signed_alipay_notification("ck_UNKNOWN_TO_PAYORCH"));
  CHECK_MESSAGE(fine.status == 200, fine.describe());

  CHECK(rows(daemon, "callback_inbox") == 1);
  DatabaseProbe db(daemon);
  CHECK(db.count("SELECT count(*) FROM reconciliation_cases WHERE reference = 'ck_UNKNOWN_TO_PAYORCH'") == 1);
  CHECK(rows(daemon, "reconciliation_cases") == 1);
  CHECK(contains(daemon.log_tail(16384), "reason=invalid_utf8"));
}

TEST_CASE("non-UTF-8: JSON request bodies with bytes that are not UTF-8 are refused as invalid JSON") {
  Daemon daemon;
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail());
  PaymentRequest req{.operation_id = unique_operation_id("not-utf8")};
  req.description = "caf\xC3(";
  const HttpResponse r = post_payment(daemon.port(), acme_token, req);
  check_problem(r, 400, "invalid-json");
  CHECK(rows(daemon, "payments") == 0);

  const Created created = create_payment(daemon, "not-utf8");
  const std::string case_id = open_case(daemon, created.id, 1);
  Headers h = admin;
  h.emplace_back("Content-Type", "application/json");
  const HttpResponse resolve = http_request(daemon.port(), "POST", "/v1/reconciliation/" + case_id + "/resolve", h,
                                            "{\"outcome\":\"succeeded\",\"note\":\"paid \xFF\xFE\"}");
  check_problem(resolve, 400, "invalid-json");
  DatabaseProbe db(daemon);
  CHECK(db.count("SELECT count(*) FROM reconciliation_cases WHERE id = ?1 AND status = 'open'", {case_id}) == 1);
}

TEST_CASE("non-UTF-8: a case row that cannot be read is named beside the list; the rest are served, at start too") {
  Daemon daemon(every_dialect_config());
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail(16384));
  const Created first = create_payment(daemon, "unreadable");
  const Created second = create_payment(daemon, "unreadable");
  const std::string good = open_case(daemon, first.id, 1);
  const std::string bad = open_case(daemon, second.id, 2);
  {
    // Damage planted in the database: evidence that is not UTF-8 (SQLite keeps any bytes;
    // PostgreSQL refuses them, so there the evidence is JSON but not an array).
    DatabaseProbe db(daemon, SqliteProbe::Mode::for_writing);
    db.exec(std::string("UPDATE reconciliation_cases SET evidence = ") +
            (db.postgres() ? "'{}'" : "CAST(X'5B22FFFE225D' AS TEXT)") + " WHERE id = '" + bad + "'");
  }

  const HttpResponse r = http_request(daemon.port(), "GET", "/v1/reconciliation?status=open", admin);
  REQUIRE_MESSAGE(r.status == 200, r.describe());
  CHECK(payorch::valid_utf8(r.body));
  const auto page = r.json();
  const auto& data = page.at("data").as_array();
  REQUIRE(data.size() == 1);
  CHECK(json_string(data[0], "id") == good);
  const auto& unreadable = page.at("unreadable").as_array();
  REQUIRE(unreadable.size() == 1);
  CHECK(json_string(unreadable[0], "id") == bad);
  CHECK(json_string(unreadable[0], "detail") == "reconciliation case " + bad + ": evidence is not a JSON array");
  CHECK(contains(daemon.log_tail(16384), "event=store.case_unreadable"));

  // The operator command lists the readable case and names the other.
  DaemonConfig cli;
  cli.database = daemon.database_section();
  cli.server = "server: {listen: \"127.0.0.1:" + std::to_string(daemon.port()) + "\"}";
  const std::string cli_path = daemon.dir() + "/cli.yaml";
  std::ofstream(cli_path) << cli.render(daemon.dir());
  const CommandResult list = daemon.run_command({"recon", "list", "--status", "open", "--config", cli_path});
  INFO("recon list:\n" << list.output);
  CHECK((list.status.exited && list.status.code == 0));
  CHECK(contains(list.output, good));
  CHECK(contains(list.output, "unreadable case " + bad + ": reconciliation case " + bad));

  // At start, the engine's scan of the open cases for owed vendor-side fences reads past it.
  auto reported = [&daemon] {
    const std::string log = daemon.log_tail(1 << 20);
    std::size_t n = 0;
    for (std::size_t at = log.find("event=store.case_unreadable"); at != std::string::npos;
         at = log.find("event=store.case_unreadable", at + 1))
      ++n;
    return n;
  };
  const std::size_t before_restart = reported();
  daemon.restart();
  CHECK(eventually([&] { return reported() > before_restart; }, 5s));
  CHECK(eventually([&] { return http_request(daemon.port(), "GET", "/readyz").status == 200; }, 10s));
  CHECK_FALSE(contains(daemon.log_tail(1 << 20), "engine.fences_owed_failed"));
}
