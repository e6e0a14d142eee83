// The alipay adapter end to end: the real payorchd with `adapter: alipay` (the preset
// conf/providers/alipay.yaml) against the Alipay emulator (tests/emulators/alipay), which answers
// as the OpenAPI gateway and sends RSA2-signed notifications to payorchd's /v1/callbacks/<name>
// until they are acknowledged "success". Checked against the emulator's ledger: one trade per
// client_key whatever the faults, and no FAILED_FINAL for an order the vendor holds paid — the
// close (the vendor-side fence) and its confirming query decide, never a guess.
#include <doctest/doctest.h>

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "support/alipay_emulator.h"
#include "support/daemon.h"
#include "support/engine_checks.h"
#include "support/http_client.h"
#include "support/payorch_api.h"
#include "support/vendor_sim.h"

using namespace payorch::test;
using namespace std::chrono_literals;

namespace {

const Headers admin{{"Authorization", std::string("Bearer ") + admin_token}};

// A few calls, 100 ms apart: the budget is spent within a second.
constexpr const char* tight_retry = "{max_attempts: 3, initial_backoff: 100ms, max_backoff: 200ms, give_up_after: 1h}";
// The first look after a pending answer comes 10..20 s later: only a notification settles it sooner.
constexpr const char* slow_retry = "{max_attempts: 10, initial_backoff: 20s, max_backoff: 20s, give_up_after: 1h}";

// Notifications go nowhere (the discard port) until a test points the emulator at payorchd.
constexpr const char* dead_notify_url = "http://127.0.0.1:9/v1/callbacks/alipay";

// Buyers by auth_code (tests/emulators/alipay/trades.js): the last digit says what they do.
const std::string pays_at_once = "28763443825664391";
const std::string confirms_later = "28763443825664392";
const std::string too_little_money = "28763443825664393";

struct Entry {
  std::string name = "alipay";
  std::string product = "pay";
  std::string retry = roomy_retry;
  std::string contract = "{recovery: lookup}";  // the rest from the preset
};

DaemonConfig alipay_config(const AlipayEmulator& emulator, const std::vector<Entry>& entries) {
  std::string providers = "providers:\n";
  for (const Entry& e : entries) {
    SimProviderConfig p;
    p.name = e.name;
    p.adapter = "alipay";
    p.base_url = emulator.base_url();
    p.api_key = "";
    p.callback = "";
    p.timeouts = "{connect: 500ms, request: 1500ms}";
    p.contract = e.contract;
    p.retry = e.retry;
    p.options = std::string("{app_id: \"") + alipay_emulator_app_id + "\", private_key_file: \"" +
                alipay_key_path("app_private.pem") + "\", alipay_public_key_file: \"" +
                alipay_key_path("alipay_public.pem") + "\", product: " + e.product + ", notify_url: \"" +
                dead_notify_url + "\"}";
    providers += p.yaml() + "    preset: \"" + std::string(PAYORCH_SOURCE_DIR) + "/conf/providers/alipay.yaml\"\n";
  }
  DaemonConfig config = engine_daemon_config({SimProviderConfig{.name = entries.front().name}});
  config.providers = providers;
  // A refused close is followed by a query: the lease holds both requests (2 x 1.5 s + 1 s).
  config.engine = "engine: {workers: 4, lease: 4s, poll_interval: 100ms}";
  return config;
}

struct Setup {
  AlipayEmulator emulator;
  Daemon daemon;
  explicit Setup(const std::vector<Entry>& entries, AlipayEmulatorOptions options = {})
      : emulator(options), daemon(alipay_config(emulator, entries)) {
    daemon.start();
  }
  // From now on every notification goes to payorchd's endpoint for provider `name`.
  void deliver_notifications(const std::string& name = "alipay") {
    emulator.set_notify_url("http://127.0.0.1:" + std::to_string(daemon.port()) + "/v1/callbacks/" + name);
  }
  std::string logs() const {
    return "payorchd log:\n" + daemon.log_tail(8192) + "\nemulator log:\n" + emulator.log_tail();
  }
};

PaymentRequest alipay_payment(std::string_view prefix, std::string source = pays_at_once,
                              std::optional<std::string> provider = std::nullopt) {
  PaymentRequest req;
  req.operation_id = unique_operation_id(prefix);
  req.amount_minor = 1250;
  req.currency = "CNY";
  req.source = std::move(source);
  req.provider = std::move(provider);
  return req;
}

// How many of the emulator's trades have out_trade_no `client_key`.
int trades_at_vendor(const AlipayEmulator& emulator, const std::string& client_key) {
  const boost::json::value ledger = emulator.ledger();
  int n = 0;
  for (const auto& t : ledger.at("trades").as_array())
    if (t.at("out_trade_no").as_string() == client_key) ++n;
  return n;
}

// The emulator's trade with out_trade_no `client_key` (a copy; null when none).
boost::json::value trade_at_vendor(const AlipayEmulator& emulator, const std::string& client_key) {
  const boost::json::value ledger = emulator.ledger();
  for (const auto& t : ledger.at("trades").as_array())
    if (t.at("out_trade_no").as_string() == client_key) return t;
  return nullptr;
}

std::string trade_status(const AlipayEmulator& emulator, const std::string& client_key) {
  const boost::json::value t = trade_at_vendor(emulator, client_key);
  return t.is_null() ? "" : std::string(t.at("status").as_string());
}

// Every notification delivery so far was acknowledged "success" (and there was at least one).
bool notifications_acknowledged(const AlipayEmulator& emulator) {
  const boost::json::value ledger = emulator.ledger();
  const auto& deliveries = ledger.at("deliveries").as_array();
  if (deliveries.empty()) return false;
  for (const auto& d : deliveries)
    if (!d.at("acknowledged").as_bool()) return false;
  return true;
}

// Closes the emulator received for this trade: {out_trade_no, age_ms, refused}.
std::vector<boost::json::value> closes_at_vendor(const AlipayEmulator& emulator, const std::string& client_key) {
  const boost::json::value ledger = emulator.ledger();
  std::vector<boost::json::value> out;
  for (const auto& c : ledger.at("closes").as_array())
    if (c.at("out_trade_no").as_string() == client_key) out.push_back(c);
  return out;
}

boost::json::value case_view(const Daemon& daemon, const std::string& case_id) {
  const HttpResponse r = http_request(daemon.port(), "GET", "/v1/reconciliation/" + case_id, admin);
  REQUIRE_MESSAGE(r.status == 200, r.describe());
  return r.json();
}

const boost::json::value* evidence_from(const boost::json::value& c, std::string_view source) {
  for (const auto& e : c.at("evidence").as_array())
    if (e.is_object() && e.as_object().contains("source") && e.at("source").as_string() == source) return &e;
  return nullptr;
}

bool has_case(const boost::json::value& view) { return !reconciliation_of(view).is_null(); }

// The payment's open case (waits for one), its id.
std::string wait_for_case(const Setup& s, const PaymentRequest& req, std::chrono::milliseconds timeout) {
  const auto view = wait_for_payment(s.daemon.port(), acme_token, req.operation_id,
                                     [](const boost::json::value& v) {
                                       const auto rec = reconciliation_of(v);
                                       return rec.is_object() && json_string(rec, "status") == "open";
                                     },
                                     timeout);
  const auto rec = reconciliation_of(view);
  REQUIRE_MESSAGE(rec.is_object(), boost::json::serialize(view));
  return json_string(rec, "case_id");
}

HttpResponse resolve_failed_final(const Daemon& daemon, const std::string& case_id) {
  Headers with_operator = admin;
  with_operator.emplace_back("Content-Type", "application/json");
  return http_request(daemon.port(), "POST", "/v1/reconciliation/" + case_id + "/resolve", with_operator,
                      R"({"outcome":"failed_final","note":"the buyer walked away"})");
}

}  // namespace

TEST_CASE("alipay: pay succeeds at once, a poor buyer is declined, precreate waits for the buyer") {
  PAYORCH_NEED_ALIPAY_EMULATOR();
  Setup s({Entry{}, Entry{.name = "alipay_qr", .product = "precreate"}});
  INFO(s.logs());
  const PaymentRequest ok = alipay_payment("alipay-ok");
  const PaymentRequest poor = alipay_payment("alipay-poor", too_little_money);
  const PaymentRequest qr = alipay_payment("alipay-qr", "qr", "alipay_qr");
  for (const PaymentRequest* req : {&ok, &poor, &qr})
    REQUIRE(post_payment(s.daemon.port(), acme_token, *req).status == 201);

  const auto ok_view = wait_for_state(s.daemon.port(), acme_token, ok.operation_id, "SUCCEEDED", 10s);
  CHECK(json_string(ok_view, "state") == "SUCCEEDED");
  const std::string ok_key = json_string(ok_view, "client_key");
  CHECK(trades_at_vendor(s.emulator, ok_key) == 1);
  CHECK(trade_status(s.emulator, ok_key) == "TRADE_SUCCESS");
  CHECK(json_string(ok_view, "vendor_reference") ==
        std::string(trade_at_vendor(s.emulator, ok_key).at("trade_no").as_string()));

  const auto poor_view = wait_for_state(s.daemon.port(), acme_token, poor.operation_id, "FAILED_FINAL", 10s);
  CHECK(json_string(poor_view, "state") == "FAILED_FINAL");
  CHECK(failure_code_of(poor_view) == "ACQ.BUYER_BALANCE_NOT_ENOUGH");
  CHECK(trades_at_vendor(s.emulator, json_string(poor_view, "client_key")) == 0);

  // The QR code exists at the vendor; the payment waits for the buyer, who pays.
  const auto qr_waiting = fetch_payment(s.daemon.port(), acme_token, qr.operation_id);
  const std::string qr_key = json_string(qr_waiting, "client_key");
  REQUIRE(eventually([&] { return trades_at_vendor(s.emulator, qr_key) == 1; }, 5s));
  CHECK_FALSE(is_terminal_state(json_string(fetch_payment(s.daemon.port(), acme_token, qr.operation_id), "state")));
  CHECK(s.emulator.pay(qr_key) == 200);
  const auto qr_view = wait_for_state(s.daemon.port(), acme_token, qr.operation_id, "SUCCEEDED", 10s);
  CHECK(json_string(qr_view, "state") == "SUCCEEDED");
  CHECK(trades_at_vendor(s.emulator, qr_key) == 1);
  CHECK(trade_status(s.emulator, qr_key) == "TRADE_SUCCESS");
}

TEST_CASE("alipay: a buyer who pays later is found by query, without notifications") {
  PAYORCH_NEED_ALIPAY_EMULATOR();
  Setup s({Entry{}, Entry{.name = "alipay_qr", .product = "precreate"}});
  INFO(s.logs());
  const PaymentRequest later = alipay_payment("alipay-later", confirms_later);
  const PaymentRequest qr = alipay_payment("alipay-qr-later", "qr", "alipay_qr");
  for (const PaymentRequest* req : {&later, &qr})
    REQUIRE(post_payment(s.daemon.port(), acme_token, *req).status == 201);
  const std::string later_key = json_string(fetch_payment(s.daemon.port(), acme_token, later.operation_id), "client_key");
  const std::string qr_key = json_string(fetch_payment(s.daemon.port(), acme_token, qr.operation_id), "client_key");
  REQUIRE(eventually([&] { return trade_status(s.emulator, later_key) == "WAIT_BUYER_PAY"; }, 5s));
  REQUIRE(eventually([&] { return trades_at_vendor(s.emulator, qr_key) == 1; }, 5s));
  // The buyer takes a moment; payorch keeps looking (queries answered WAIT_BUYER_PAY, and for
  // the unscanned QR code ACQ.TRADE_NOT_EXIST, which is never final).
  CHECK_FALSE(eventually([&] {
    return is_terminal_state(json_string(fetch_payment(s.daemon.port(), acme_token, later.operation_id), "state"));
  }, 500ms));
  CHECK(s.emulator.pay(later_key) == 200);
  CHECK(s.emulator.pay(qr_key) == 200);
  for (const PaymentRequest* req : {&later, &qr}) {
    const auto view = wait_for_state(s.daemon.port(), acme_token, req->operation_id, "SUCCEEDED", 10s);
    CHECK(json_string(view, "state") == "SUCCEEDED");
    CHECK(trades_at_vendor(s.emulator, json_string(view, "client_key")) == 1);
  }
  // Nothing was delivered: the queries found both.
  const boost::json::value ledger = s.emulator.ledger();
  for (const auto& d : ledger.at("deliveries").as_array()) CHECK_FALSE(d.at("acknowledged").as_bool());
}

TEST_CASE("alipay: a buyer who pays later is learnt from the notification, before any query") {
  PAYORCH_NEED_ALIPAY_EMULATOR();
  Setup s({Entry{.name = "alipay_qr", .product = "precreate", .retry = slow_retry}});
  INFO(s.logs());
  s.deliver_notifications("alipay_qr");
  const PaymentRequest qr = alipay_payment("alipay-qr-notified", "qr");
  REQUIRE(post_payment(s.daemon.port(), acme_token, qr).status == 201);
  const std::string qr_key = json_string(fetch_payment(s.daemon.port(), acme_token, qr.operation_id), "client_key");
  REQUIRE(eventually([&] { return trades_at_vendor(s.emulator, qr_key) == 1; }, 5s));
  CHECK(s.emulator.pay(qr_key) == 200);
  // The first query is 10 s away at the earliest.
  const auto view = wait_for_state(s.daemon.port(), acme_token, qr.operation_id, "SUCCEEDED", 5s);
  CHECK(json_string(view, "state") == "SUCCEEDED");
  CHECK(json_int(view, "attempt_count").value_or(0) == 1);
  CHECK(json_string(view, "vendor_reference") ==
        std::string(trade_at_vendor(s.emulator, qr_key).at("trade_no").as_string()));
  CHECK(eventually([&] { return notifications_acknowledged(s.emulator); }, 5s));
}

TEST_CASE("alipay: every fault of the gateway gives one trade and a settled payment") {
  PAYORCH_NEED_ALIPAY_EMULATOR();
  Setup s({Entry{}, Entry{.name = "alipay_tight", .retry = tight_retry}});
  INFO(s.logs());
  // Faults on alipay.trade.pay that let it commit: 500 after commit, no answer (closed after
  // 3 s), held executing past the request timeout (1.5 s), slow but in time.
  const std::pair<std::string, int> committing[] = {
      {"commit_then_5xx", 0}, {"commit_then_hang", 3000}, {"delayed_commit", 2500}, {"latency", 500}};
  for (const auto& fault : committing) {
    const std::string mode = fault.first;
    CAPTURE(mode);
    s.emulator.set_fault(mode, 1, fault.second, "^alipay\\.trade\\.pay$");
    const PaymentRequest req = alipay_payment("alipay-" + mode);
    REQUIRE(post_payment(s.daemon.port(), acme_token, req).status == 201);
    const auto view = wait_for_state(s.daemon.port(), acme_token, req.operation_id, "SUCCEEDED", 15s);
    CHECK(json_string(view, "state") == "SUCCEEDED");
    const std::string key = json_string(view, "client_key");
    CHECK(trades_at_vendor(s.emulator, key) == 1);
    CHECK(trade_status(s.emulator, key) == "TRADE_SUCCESS");
    if (mode != "latency") CHECK(json_int(view, "attempt_count").value_or(0) >= 2);
  }

  // A 500 on the first query: the next one finds the trade.
  {
    s.emulator.set_fault("fail_before_commit", 1, 0, "^alipay\\.trade\\.query$");
    const PaymentRequest req = alipay_payment("alipay-query-500", confirms_later);
    REQUIRE(post_payment(s.daemon.port(), acme_token, req).status == 201);
    const std::string key = json_string(fetch_payment(s.daemon.port(), acme_token, req.operation_id), "client_key");
    REQUIRE(eventually([&] { return trades_at_vendor(s.emulator, key) == 1; }, 5s));
    CHECK(s.emulator.pay(key) == 200);
    const auto view = wait_for_state(s.daemon.port(), acme_token, req.operation_id, "SUCCEEDED", 10s);
    CHECK(json_string(view, "state") == "SUCCEEDED");
    CHECK(trades_at_vendor(s.emulator, key) == 1);
  }

  // A 500 before anything was done: no trade, and Alipay's ACQ.TRADE_NOT_EXIST is never final
  // (the preset), so payorch never resends and never concludes: the spent budget closes the order,
  // the close finds none, and a case opens with no money taken.
  {
    s.emulator.set_fault("fail_before_commit", 1, 0, "^alipay\\.trade\\.pay$");
    const PaymentRequest req = alipay_payment("alipay-500-before", pays_at_once, "alipay_tight");
    REQUIRE(post_payment(s.daemon.port(), acme_token, req).status == 201);
    const std::string case_id = wait_for_case(s, req, 10s);
    const auto view = fetch_payment(s.daemon.port(), acme_token, req.operation_id);
    CHECK(json_string(view, "state") == "UNKNOWN");
    CHECK(trades_at_vendor(s.emulator, json_string(view, "client_key")) == 0);
    REQUIRE(eventually([&] { return evidence_from(case_view(s.daemon, case_id), "vendor_fence") != nullptr; }, 5s));
    const boost::json::value c = case_view(s.daemon, case_id);
    CHECK(json_string(*evidence_from(c, "vendor_fence"), "what") == "not_found");
    // An operator's failed_final: there is no order to close → FAILED_FINAL.
    const HttpResponse resolved = resolve_failed_final(s.daemon, case_id);
    REQUIRE_MESSAGE(resolved.status == 200, resolved.describe());
    const auto failed = wait_for_state(s.daemon.port(), acme_token, req.operation_id, "FAILED_FINAL", 10s);
    CHECK(json_string(failed, "state") == "FAILED_FINAL");
    CHECK(trades_at_vendor(s.emulator, json_string(view, "client_key")) == 0);
  }
}

TEST_CASE("alipay: an operator's failed_final on a QR code not scanned yet waits for its expiry; a buyer who pays meanwhile is charged") {
  PAYORCH_NEED_ALIPAY_EMULATOR();
  Setup s({Entry{.name = "alipay_qr", .product = "precreate", .retry = tight_retry}});
  INFO(s.logs());
  s.deliver_notifications("alipay_qr");
  const PaymentRequest req = alipay_payment("alipay-qr-stopped", "qr", "alipay_qr");
  REQUIRE(post_payment(s.daemon.port(), acme_token, req).status == 201);
  // Never scanned: every query and the close find no order; the spent budget opens a case.
  const std::string case_id = wait_for_case(s, req, 10s);
  const std::string key = json_string(fetch_payment(s.daemon.port(), acme_token, req.operation_id), "client_key");
  REQUIRE(eventually([&] { return evidence_from(case_view(s.daemon, case_id), "vendor_fence") != nullptr; }, 5s));
  const HttpResponse resolved = resolve_failed_final(s.daemon, case_id);
  REQUIRE_MESSAGE(resolved.status == 200, resolved.describe());
  // The close finds no order again, but the QR code is payable for two hours: no FAILED_FINAL
  // (the same stop of a bar-code payment ends FAILED_FINAL within a second, above).
  CHECK_FALSE(eventually([&] {
    return json_string(fetch_payment(s.daemon.port(), acme_token, req.operation_id), "state") == "FAILED_FINAL";
  }, 3s));
  const auto waiting = fetch_payment(s.daemon.port(), acme_token, req.operation_id);
  CHECK(json_string(waiting, "state") == "PROCESSING");  // never scanned: nothing but pending
  CHECK(trades_at_vendor(s.emulator, key) == 1);
  // The buyer scans and pays: Alipay's notification settles it.
  REQUIRE(s.emulator.pay(key) == 200);
  const auto view = wait_for_state(s.daemon.port(), acme_token, req.operation_id, "SUCCEEDED", 10s);
  CHECK(json_string(view, "state") == "SUCCEEDED");
  CHECK(trade_status(s.emulator, key) == "TRADE_SUCCESS");
}

TEST_CASE("alipay: a spent budget closes the order, the query confirms it closed: FAILED_FINAL, no money taken") {
  PAYORCH_NEED_ALIPAY_EMULATOR();
  Setup s({Entry{.retry = tight_retry}});
  INFO(s.logs());
  const PaymentRequest req = alipay_payment("alipay-closed", confirms_later);
  REQUIRE(post_payment(s.daemon.port(), acme_token, req).status == 201);
  std::vector<std::string> states;
  const auto view = wait_for_payment(s.daemon.port(), acme_token, req.operation_id, is_settled, 10s, &states);
  REQUIRE(json_string(view, "state") == "FAILED_FINAL");
  CHECK(failure_code_of(view) == "TRADE_CLOSED");
  CHECK_FALSE(has_case(view));
  const std::string key = json_string(view, "client_key");
  CHECK(trades_at_vendor(s.emulator, key) == 1);
  const boost::json::value trade = trade_at_vendor(s.emulator, key);
  CHECK(trade.at("status").as_string() == "TRADE_CLOSED");
  CHECK(trade.at("gmt_payment").is_null());
  CHECK(closes_at_vendor(s.emulator, key).size() == 1);
  // The fence holds: the buyer can no longer pay.
  CHECK(s.emulator.pay(key) == 409);
  PayorchRecords records(s.daemon);
  CHECK(records.cases(json_string(view, "id")).empty());
  CHECK(records.count_events(json_string(view, "id"), "payment.failed") == 1);
}

TEST_CASE("alipay: the buyer pays while the spent budget closes the order: a case with the close's answer, never FAILED_FINAL") {
  PAYORCH_NEED_ALIPAY_EMULATOR();
  Setup s({Entry{.retry = tight_retry}});
  INFO(s.logs());
  // The close is held 1 s before it runs; the buyer pays in that second.
  s.emulator.set_fault("delayed_commit", 1, 1000, "^alipay\\.trade\\.close$");
  const PaymentRequest req = alipay_payment("alipay-race", confirms_later);
  REQUIRE(post_payment(s.daemon.port(), acme_token, req).status == 201);
  const std::string key = json_string(fetch_payment(s.daemon.port(), acme_token, req.operation_id), "client_key");
  REQUIRE(eventually([&] {
    const boost::json::value ledger = s.emulator.ledger();
    return ledger.at("fault").at("count").as_int64() == 0;
  }, 10s));
  CHECK(s.emulator.pay(key) == 200);

  std::vector<std::string> states;
  const auto view = wait_for_payment(s.daemon.port(), acme_token, req.operation_id, is_settled, 10s, &states);
  const auto rec = reconciliation_of(view);
  REQUIRE_MESSAGE(rec.is_object(), boost::json::serialize(view));
  CHECK(json_string(rec, "reason") == "retry_budget_exhausted");
  CHECK(json_string(rec, "status") == "open");
  CHECK(json_string(view, "state") != "FAILED_FINAL");
  for (const std::string& state : states) CHECK(state != "FAILED_FINAL");
  CHECK(trades_at_vendor(s.emulator, key) == 1);
  CHECK(trade_status(s.emulator, key) == "TRADE_SUCCESS");

  // The close's answer is on the case: refused, the order paid.
  const std::string case_id = json_string(rec, "case_id");
  REQUIRE(eventually([&] { return evidence_from(case_view(s.daemon, case_id), "vendor_fence") != nullptr; }, 5s));
  const boost::json::value c = case_view(s.daemon, case_id);
  const boost::json::value* fence = evidence_from(c, "vendor_fence");
  REQUIRE(fence != nullptr);
  CHECK_MESSAGE(json_string(*fence, "what") == "declined", boost::json::serialize(c));
  CHECK(evidence_from(c, "vendor") == nullptr);  // no accepted close, no confirming query
}

TEST_CASE("alipay: no close before close_not_before; the payment waits, outside any case") {
  PAYORCH_NEED_ALIPAY_EMULATOR();
  constexpr int min_close_delay_ms = 3000;
  Setup s({Entry{.retry = tight_retry, .contract = "{recovery: lookup, close_not_before: 3s}"}},
          {.min_close_delay_ms = min_close_delay_ms});
  INFO(s.logs());
  const PaymentRequest req = alipay_payment("alipay-not-before", confirms_later);
  const auto posted_at = std::chrono::steady_clock::now();
  REQUIRE(post_payment(s.daemon.port(), acme_token, req).status == 201);
  std::vector<std::string> states;
  bool in_case_meanwhile = false;
  const auto view = wait_for_payment(s.daemon.port(), acme_token, req.operation_id,
                                     [&](const boost::json::value& v) {
                                       if (has_case(v)) in_case_meanwhile = true;
                                       return is_settled(v);
                                     },
                                     15s, &states);
  const auto waited = std::chrono::steady_clock::now() - posted_at;
  CHECK(json_string(view, "state") == "FAILED_FINAL");
  CHECK(failure_code_of(view) == "TRADE_CLOSED");
  CHECK_FALSE(in_case_meanwhile);
  CHECK(waited >= std::chrono::milliseconds(min_close_delay_ms));
  const std::string key = json_string(view, "client_key");
  // The budget (3 calls, 100..200 ms apart) was spent long before; the one close came once the
  // order was old enough, and the emulator refused none.
  CHECK(json_int(view, "attempt_count").value_or(0) >= 3);
  const std::vector<boost::json::value> closes = closes_at_vendor(s.emulator, key);
  REQUIRE(closes.size() == 1);
  CHECK_FALSE(closes[0].at("refused").as_bool());
  CHECK(closes[0].at("age_ms").to_number<std::int64_t>() >= min_close_delay_ms);
  CHECK(trade_status(s.emulator, key) == "TRADE_CLOSED");
  PayorchRecords records(s.daemon);
  CHECK(records.cases(json_string(view, "id")).empty());
}

TEST_CASE("alipay: refunds through gateway faults, one refund at the vendor each") {
  PAYORCH_NEED_ALIPAY_EMULATOR();
  Setup s({Entry{}});
  INFO(s.logs());
  const PaymentRequest req = alipay_payment("alipay-refunded");
  REQUIRE(post_payment(s.daemon.port(), acme_token, req).status == 201);
  const auto paid = wait_for_state(s.daemon.port(), acme_token, req.operation_id, "SUCCEEDED", 10s);
  REQUIRE(json_string(paid, "state") == "SUCCEEDED");
  const std::string key = json_string(paid, "client_key");

  const std::pair<std::string, int> refund_faults[] = {
      {"", 0}, {"commit_then_5xx", 0}, {"commit_then_hang", 3000}, {"delayed_commit", 2500}, {"latency", 500}};
  std::int64_t refunded = 0;
  for (const auto& fault : refund_faults) {
    const std::string mode = fault.first;
    CAPTURE(mode);
    if (!mode.empty()) s.emulator.set_fault(mode, 1, fault.second, "^alipay\\.trade\\.refund$");
    const std::string refund_id = unique_operation_id("alipay-refund-" + mode);
    REQUIRE(post_refund(s.daemon.port(), acme_token, req.operation_id, refund_id, 200).status == 201);
    const auto refund = wait_for_refund_state(s.daemon.port(), acme_token, refund_id, "SUCCEEDED", 15s);
    CHECK(json_string(refund, "state") == "SUCCEEDED");
    refunded += 200;
    const std::string refund_key = json_string(refund, "client_key");
    int at_vendor = 0;
    std::int64_t total = 0;
    const boost::json::value trade = trade_at_vendor(s.emulator, key);
    for (const auto& r : trade.at("refunds").as_array()) {
      total += r.at("refund_minor").to_number<std::int64_t>();
      if (r.at("out_request_no").as_string() == refund_key) ++at_vendor;
    }
    CHECK(at_vendor == 1);
    CHECK(total == refunded);
    CHECK(json_string(refund, "vendor_reference") == refund_key);
  }
  CHECK(trades_at_vendor(s.emulator, key) == 1);
  CHECK(trade_status(s.emulator, key) == "TRADE_SUCCESS");  // 1000 of 1250 refunded
}

TEST_CASE("alipay: duplicate and out-of-order notifications are applied once") {
  PAYORCH_NEED_ALIPAY_EMULATOR();
  Setup s({Entry{.name = "alipay_qr", .product = "precreate", .retry = slow_retry}});
  INFO(s.logs());
  s.deliver_notifications("alipay_qr");
  // Every notification twice; the first held back until the second is sent.
  s.emulator.set_notifications(true, true, 0.001);
  const PaymentRequest first = alipay_payment("alipay-notified-1", "qr");
  const PaymentRequest second = alipay_payment("alipay-notified-2", "qr");
  std::vector<std::string> keys;
  for (const PaymentRequest* req : {&first, &second}) {
    REQUIRE(post_payment(s.daemon.port(), acme_token, *req).status == 201);
    keys.push_back(json_string(fetch_payment(s.daemon.port(), acme_token, req->operation_id), "client_key"));
  }
  for (const std::string& key : keys) {
    REQUIRE(eventually([&] { return trades_at_vendor(s.emulator, key) == 1; }, 5s));
    CHECK(s.emulator.pay(key) == 200);
  }
  PayorchRecords records(s.daemon);
  for (const PaymentRequest* req : {&first, &second}) {
    const auto view = wait_for_state(s.daemon.port(), acme_token, req->operation_id, "SUCCEEDED", 5s);
    CHECK(json_string(view, "state") == "SUCCEEDED");
    CHECK(json_int(view, "attempt_count").value_or(0) == 1);  // no query: notifications only
  }
  // The first payment's notification was held back until the second's was sent; the second's
  // came twice. Every delivery acknowledged.
  REQUIRE(eventually([&] {
    const boost::json::value ledger = s.emulator.ledger();
    return ledger.at("deliveries").as_array().size() >= 3 && notifications_acknowledged(s.emulator);
  }, 5s));
  const boost::json::value ledger = s.emulator.ledger();
  const auto& deliveries = ledger.at("deliveries").as_array();
  CHECK(deliveries.size() == 3);
  CHECK(deliveries[0].at("out_trade_no").as_string() == keys[1]);
  int second_deliveries = 0;
  for (const auto& d : deliveries)
    if (d.at("out_trade_no").as_string() == keys[1]) ++second_deliveries;
  CHECK(second_deliveries == 2);

  // Late arrivals, posted by hand: the very notification already applied, and a stale
  // WAIT_BUYER_PAY (signed through alipay-sdk's helper) after the TRADE_SUCCESS. Both are
  // acknowledged and change nothing.
  const std::string callback_path = "/v1/callbacks/alipay_qr";
  const Headers form{{"Content-Type", "application/x-www-form-urlencoded; charset=utf-8"}};
  const HttpResponse again = http_request(s.daemon.port(), "POST", callback_path, form,
                                          std::string(deliveries[0].at("body").as_string()));
  CHECK_MESSAGE(again.status == 200, again.describe());
  CHECK(again.body == "success");
  const boost::json::value trade = trade_at_vendor(s.emulator, keys[1]);
  const boost::json::object stale{
      {"notify_time", trade.at("gmt_create")}, {"notify_type", "trade_status_sync"},
      {"notify_id", "stale-" + keys[1]}, {"app_id", alipay_emulator_app_id}, {"charset", "utf-8"},
      {"version", "1.0"}, {"sign_type", "RSA2"}, {"trade_no", trade.at("trade_no")},
      {"out_trade_no", keys[1]}, {"trade_status", "WAIT_BUYER_PAY"}, {"total_amount", "12.50"},
      {"gmt_create", trade.at("gmt_create")}};
  const HttpResponse late = http_request(s.daemon.port(), "POST", callback_path, form,
                                         sign_with_alipay_sdk(boost::json::serialize(stale)));
  CHECK_MESSAGE(late.status == 200, late.describe());
  CHECK(late.body == "success");

  for (const PaymentRequest* req : {&first, &second}) {
    const auto view = fetch_payment(s.daemon.port(), acme_token, req->operation_id);
    CHECK(json_string(view, "state") == "SUCCEEDED");
    const std::string id = json_string(view, "id");
    CHECK_MESSAGE(records.count_events(id, "payment.succeeded") == 1, records.event_types(id));
    CHECK_MESSAGE(records.event_types(id) == "payment.created, payment.succeeded", records.event_types(id));
  }
  CHECK(records.repeated_events().empty());
}

TEST_CASE("alipay: an operator's failed_final is carried out by the close and its query; a paid order opens a new case") {
  PAYORCH_NEED_ALIPAY_EMULATOR();
  Setup s({Entry{.retry = tight_retry}});
  INFO(s.logs());
  // The spent budget's close is answered 500 for both payments: each ends in a case.
  s.emulator.set_fault("fail_before_commit", 2, 0, "^alipay\\.trade\\.close$");
  const PaymentRequest unpaid = alipay_payment("alipay-op-unpaid", confirms_later);
  const PaymentRequest paid = alipay_payment("alipay-op-paid", confirms_later);
  std::vector<std::string> case_ids;
  for (const PaymentRequest* req : {&unpaid, &paid}) {
    REQUIRE(post_payment(s.daemon.port(), acme_token, *req).status == 201);
    case_ids.push_back(wait_for_case(s, *req, 10s));
  }
  for (const std::string& case_id : case_ids) {
    REQUIRE(eventually([&] { return evidence_from(case_view(s.daemon, case_id), "vendor_fence") != nullptr; }, 5s));
    CHECK(json_string(*evidence_from(case_view(s.daemon, case_id), "vendor_fence"), "what") == "ambiguous");
  }
  const std::string unpaid_key = json_string(fetch_payment(s.daemon.port(), acme_token, unpaid.operation_id), "client_key");
  const std::string paid_key = json_string(fetch_payment(s.daemon.port(), acme_token, paid.operation_id), "client_key");
  CHECK(trade_status(s.emulator, unpaid_key) == "WAIT_BUYER_PAY");
  // The second buyer pays before the operator acts.
  CHECK(s.emulator.pay(paid_key) == 200);

  for (const std::string& case_id : case_ids) {
    const HttpResponse resolved = resolve_failed_final(s.daemon, case_id);
    REQUIRE_MESSAGE(resolved.status == 200, resolved.describe());
    CHECK(json_string(case_view(s.daemon, case_id), "status") == "resolved");
  }

  // Unpaid: closed at the vendor, confirmed closed, FAILED_FINAL.
  const auto failed = wait_for_state(s.daemon.port(), acme_token, unpaid.operation_id, "FAILED_FINAL", 10s);
  CHECK(json_string(failed, "state") == "FAILED_FINAL");
  CHECK(failure_code_of(failed) == "TRADE_CLOSED");
  CHECK(trade_status(s.emulator, unpaid_key) == "TRADE_CLOSED");
  CHECK(trade_at_vendor(s.emulator, unpaid_key).at("gmt_payment").is_null());

  // Paid: the close is refused, and a new case opens; never FAILED_FINAL.
  PayorchRecords records(s.daemon);
  const std::string paid_id = json_string(fetch_payment(s.daemon.port(), acme_token, paid.operation_id), "id");
  REQUIRE(eventually([&] { return records.cases(paid_id).size() == 2; }, 10s));
  const auto view = wait_for_payment(s.daemon.port(), acme_token, paid.operation_id, is_settled, 10s);
  CHECK(json_string(view, "state") != "FAILED_FINAL");
  const auto rec = reconciliation_of(view);
  REQUIRE_MESSAGE(rec.is_object(), boost::json::serialize(view));
  CHECK(json_string(rec, "status") == "open");
  CHECK(json_string(rec, "case_id") != case_ids[1]);
  const std::string new_case = json_string(rec, "case_id");
  REQUIRE(eventually([&] { return evidence_from(case_view(s.daemon, new_case), "vendor_fence") != nullptr; }, 5s));
  CHECK(json_string(*evidence_from(case_view(s.daemon, new_case), "vendor_fence"), "what") == "declined");
  CHECK(trade_status(s.emulator, paid_key) == "TRADE_SUCCESS");
  CHECK(trades_at_vendor(s.emulator, paid_key) == 1);
}
