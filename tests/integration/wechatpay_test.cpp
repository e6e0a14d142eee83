// The wechatpay adapter end to end: the real payorchd with `adapter: wechatpay` (product native)
// against the WeChat Pay emulator (tests/emulators/wechatpay), which answers as API v3 and sends
// signed, encrypted notifications to payorchd's /v1/callbacks/wechatpay when told where
// (otherwise to the order's notify_url, which nobody answers). The user pays through the
// emulator's control endpoint. Checked against the emulator's ledger: one order per
// out_trade_no (= client_key), paid exactly where payorch says SUCCEEDED, closed and unpaid
// where it says FAILED_FINAL. close_not_before is a few seconds here (the preset's is 5m), and
// the emulator's minimum close delay the same.
#include <doctest/doctest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <chrono>
#include <string>
#include <vector>

#include "support/daemon.h"
#include "support/engine_checks.h"
#include "support/http_client.h"
#include "support/payorch_api.h"
#include "support/vendor_sim.h"
#include "support/wechatpay_emulator.h"

using namespace payorch::test;
using namespace std::chrono_literals;

namespace {

// A budget that does not run out while the user takes a second or two to pay.
constexpr const char* wx_roomy_retry = "{max_attempts: 20, initial_backoff: 200ms, max_backoff: 1s, give_up_after: 1h}";
// A budget spent in well under a second: a submit and two queries.
constexpr const char* wx_short_retry = "{max_attempts: 3, initial_backoff: 100ms, max_backoff: 200ms, give_up_after: 1h}";

struct WxOptions {
  std::string retry = wx_roomy_retry;
  int close_not_before_s = 2;  // contract.close_not_before, and the emulator's minimum
  bool callbacks = true;       // the emulator's notifications go to payorchd
};

DaemonConfig wechatpay_config(const WechatpayEmulator& emulator, const WxOptions& o) {
  SimProviderConfig p;
  p.name = "wechatpay";
  p.adapter = "wechatpay";
  p.base_url = emulator.base_url();
  p.api_key = "";
  p.contract = "{key_retention: 365d, recovery: lookup, not_found_final_after: 2s, close_not_before: " +
               std::to_string(o.close_not_before_s) + "s}";
  p.retry = o.retry;
  p.callback = "{tolerance: 5m, retry_horizon: 24h}";
  p.options = std::string("{mchid: \"") + wechatpay_mchid + "\", appid: \"" + wechatpay_appid +
              "\", serial_no: \"" + wechatpay_merchant_serial + "\", private_key_file: \"" +
              wechatpay_key_path("merchant_private.pem") + "\", platform_serial: \"" + wechatpay_platform_serial +
              "\", platform_public_key_file: \"" + wechatpay_key_path("platform_public.pem") +
              "\", api_v3_key_file: \"" + wechatpay_key_path("api_v3_key.txt") +
              "\", product: native, notify_url: \"https://payorch.invalid/v1/callbacks/wechatpay\"}";
  DaemonConfig config = engine_daemon_config({p});
  // A refund asks for the order first: the lease holds both requests (2 x 2 s + 1 s).
  config.engine = "engine: {workers: 4, lease: 5s, poll_interval: 100ms}";
  return config;
}

WechatpayEmulatorOptions emulator_options(const WxOptions& o) {
  WechatpayEmulatorOptions e;
  e.close_min_delay_ms = o.close_not_before_s * 1000;
  return e;
}

struct Setup {
  WxOptions options;
  WechatpayEmulator emulator;
  Daemon daemon;
  explicit Setup(WxOptions o = {})
      : options(o), emulator(emulator_options(o)), daemon(wechatpay_config(emulator, o)) {
    daemon.start();
    if (o.callbacks) send_notifications();
  }
  void send_notifications() {
    emulator.set_notify_url("http://127.0.0.1:" + std::to_string(daemon.port()) + "/v1/callbacks/wechatpay");
  }
  // POST /_emu/switches.
  void switches(const std::string& json) {
    const HttpResponse r = http_request(emulator.port(), "POST", "/_emu/switches",
                                        {{"Content-Type", "application/json"}}, json);
    REQUIRE_MESSAGE(r.status == 200, r.describe());
  }
  void release_notifications(bool reverse) {
    const HttpResponse r = http_request(emulator.port(), "POST", "/_emu/release_notifications",
                                        {{"Content-Type", "application/json"}},
                                        reverse ? R"({"reverse":true})" : R"({"reverse":false})", 30s);
    REQUIRE_MESSAGE(r.status == 200, r.describe());
  }
  boost::json::value stats() const {
    const HttpResponse r = http_request(emulator.port(), "GET", "/_emu/stats");
    REQUIRE_MESSAGE(r.status == 200, r.describe());
    return r.json();
  }
  std::string describe(const boost::json::value& view) {
    PayorchRecords records(daemon);
    return describe_payment(view, records) + "\nledger " + boost::json::serialize(emulator.ledger()) +
           "\npayorchd log:\n" + daemon.log_tail();
  }
};

PaymentRequest wx_payment(std::string_view prefix) {
  PaymentRequest req;
  req.operation_id = unique_operation_id(prefix);
  req.amount_minor = 1250;
  req.currency = "CNY";
  req.payee = "merchant-1";
  req.source = "native-user";
  return req;
}

// The emulator's orders under this out_trade_no.
std::vector<boost::json::object> orders_at_vendor(const WechatpayEmulator& emulator, const std::string& key) {
  std::vector<boost::json::object> out;
  const boost::json::value ledger = emulator.ledger();
  for (const auto& o : ledger.at("orders").as_array())
    if (o.at("out_trade_no").as_string() == key) out.push_back(o.as_object());
  return out;
}

std::string trade_state_at_vendor(const WechatpayEmulator& emulator, const std::string& key) {
  const auto orders = orders_at_vendor(emulator, key);
  return orders.size() == 1 ? std::string(orders[0].at("trade_state").as_string()) : "";
}

std::string transaction_id_at_vendor(const WechatpayEmulator& emulator, const std::string& key) {
  const auto orders = orders_at_vendor(emulator, key);
  if (orders.size() != 1) return "";
  const auto* t = orders[0].if_contains("transaction_id");
  return t && t->is_string() ? std::string(t->as_string()) : "";
}

// Posts the payment and waits until its order is at the vendor; returns the payment's view.
boost::json::value create_order(Setup& s, const PaymentRequest& req) {
  REQUIRE(post_payment(s.daemon.port(), acme_token, req).status == 201);
  std::string key;
  const bool at_vendor = eventually(
      [&] {
        key = json_string(fetch_payment(s.daemon.port(), acme_token, req.operation_id), "client_key");
        return !key.empty() && orders_at_vendor(s.emulator, key).size() == 1;
      },
      15s);
  const auto view = fetch_payment(s.daemon.port(), acme_token, req.operation_id);
  REQUIRE_MESSAGE(at_vendor, s.describe(view));
  return view;
}

// Waits until the payment is SUCCEEDED and checks it against the vendor's one paid order.
boost::json::value expect_paid(Setup& s, const PaymentRequest& req, std::chrono::milliseconds timeout = 20s) {
  const auto view = wait_for_state(s.daemon.port(), acme_token, req.operation_id, "SUCCEEDED", timeout);
  REQUIRE_MESSAGE(json_string(view, "state") == "SUCCEEDED", s.describe(view));
  const std::string key = json_string(view, "client_key");
  CHECK(orders_at_vendor(s.emulator, key).size() == 1);
  CHECK(trade_state_at_vendor(s.emulator, key) == "SUCCESS");
  CHECK(json_string(view, "vendor_reference") == transaction_id_at_vendor(s.emulator, key));
  PayorchRecords records(s.daemon);
  CHECK(records.count_events(json_string(view, "id"), "payment.succeeded") == 1);
  return view;
}

std::string evidence_of_open_case(Setup& s, const boost::json::value& view) {
  PayorchRecords records(s.daemon);
  const std::string case_id = json_string(reconciliation_of(view), "case_id");
  for (const SqlRow& row : records.cases(json_string(view, "id")))
    if (row.at("id").value_or("") == case_id) return row.at("evidence").value_or("");
  return "";
}

bool skip_without_emulator() {
  const std::string missing = wechatpay_emulator_missing();
  if (missing.empty()) return false;
  MESSAGE("skipped: " << missing);
  return true;
}

}  // namespace

TEST_CASE("wechatpay: native order paid by the user, settled by the notification, one order at WeChat Pay") {
  if (skip_without_emulator()) return;
  Setup s;
  const PaymentRequest req = wx_payment("wx-happy");
  const auto created = create_order(s, req);
  const std::string key = json_string(created, "client_key");
  CHECK(trade_state_at_vendor(s.emulator, key) == "NOTPAY");
  CHECK(json_string(fetch_payment(s.daemon.port(), acme_token, req.operation_id), "state") != "SUCCEEDED");
  REQUIRE(s.emulator.pay(key) == 200);
  expect_paid(s, req);
  CHECK(eventually([&] { return s.emulator.ledger().at("notifications").at("pending").as_int64() == 0; }, 15s));
  CHECK(s.emulator.schema_problems().as_array().empty());
}

TEST_CASE("wechatpay: the user pays later, found by payorch's query while no notification arrives") {
  if (skip_without_emulator()) return;
  Setup s(WxOptions{.callbacks = false});
  const PaymentRequest req = wx_payment("wx-later-query");
  const auto created = create_order(s, req);
  REQUIRE(s.emulator.pay(json_string(created, "client_key")) == 200);
  expect_paid(s, req);
  CHECK(s.emulator.ledger().at("notifications").at("delivered").as_int64() == 0);
}

TEST_CASE("wechatpay: the user pays later, learnt from the notification before any query") {
  if (skip_without_emulator()) return;
  // The first query would come 5-10 s after the order: only the notification can be quicker.
  Setup s(WxOptions{.retry = "{max_attempts: 10, initial_backoff: 10s, max_backoff: 10s, give_up_after: 1h}"});
  const PaymentRequest req = wx_payment("wx-later-callback");
  const auto created = create_order(s, req);
  REQUIRE(s.emulator.pay(json_string(created, "client_key")) == 200);
  const auto view = expect_paid(s, req, 4s);
  CHECK(json_int(view, "attempt_count").value_or(0) == 1);
}

TEST_CASE("wechatpay: every fault on the order's creation gives one order, paid once") {
  if (skip_without_emulator()) return;
  Setup s;
  const std::pair<std::string, int> faults[] = {{"fail_before_commit", 0},
                                                {"commit_then_5xx", 0},
                                                {"commit_then_hang", 3000},
                                                {"delayed_commit", 1000},
                                                {"latency", 500}};
  for (const auto& fault : faults) {
    const std::string mode = fault.first;
    CAPTURE(mode);
    s.emulator.set_fault(mode, 1, fault.second, "^/v3/pay/transactions/native$");
    const PaymentRequest req = wx_payment("wx-fault-" + mode);
    const auto created = create_order(s, req);
    REQUIRE(s.emulator.pay(json_string(created, "client_key")) == 200);
    expect_paid(s, req, 25s);
  }
  CHECK(s.emulator.schema_problems().as_array().empty());
}

TEST_CASE("wechatpay: a spent budget closes the order, confirms it closed, and fails the payment") {
  if (skip_without_emulator()) return;
  Setup s(WxOptions{.retry = wx_short_retry, .close_not_before_s = 2, .callbacks = true});
  const PaymentRequest req = wx_payment("wx-closed");
  REQUIRE(post_payment(s.daemon.port(), acme_token, req).status == 201);
  const auto view = wait_for_state(s.daemon.port(), acme_token, req.operation_id, "FAILED_FINAL", 15s);
  REQUIRE_MESSAGE(json_string(view, "state") == "FAILED_FINAL", s.describe(view));
  CHECK(failure_code_of(view) == "CLOSED");
  CHECK(reconciliation_of(view).is_null());
  const std::string key = json_string(view, "client_key");
  CHECK(orders_at_vendor(s.emulator, key).size() == 1);
  CHECK(trade_state_at_vendor(s.emulator, key) == "CLOSED");
  CHECK(transaction_id_at_vendor(s.emulator, key).empty());
  PayorchRecords records(s.daemon);
  CHECK(records.probe().count("SELECT count(*) FROM payments WHERE id = ? AND vendor_closed_at IS NOT NULL",
                              {json_string(view, "id")}) == 1);
  const auto stats = s.stats();
  CHECK(stats.at("closes").as_int64() == 1);
  CHECK(stats.at("early_closes_refused").as_int64() == 0);
  // The user cannot pay a closed order.
  CHECK(s.emulator.pay(key) == 409);
}

TEST_CASE("wechatpay: the user pays as the budget runs out: the close is refused, a case opens, never FAILED_FINAL") {
  if (skip_without_emulator()) return;
  // No notifications: nothing but the close and its query can tell payorch about the payment.
  Setup s(WxOptions{.retry = wx_short_retry, .close_not_before_s = 2, .callbacks = false});
  const PaymentRequest req = wx_payment("wx-race");
  const auto created = create_order(s, req);
  const std::string key = json_string(created, "client_key");
  // The budget is spent (a submit and two queries); the close is at least 2 s away.
  REQUIRE(eventually(
      [&] {
        // The third call claimed, and answered by the vendor (NOTPAY) before the user pays:
        // otherwise that query could find the order paid and settle it SUCCEEDED.
        return json_int(fetch_payment(s.daemon.port(), acme_token, req.operation_id), "attempt_count").value_or(0) >= 3 &&
               s.stats().at("requests").as_int64() >= 3;
      },
      10s));
  CHECK(s.stats().at("closes").as_int64() == 0);
  REQUIRE(s.emulator.pay(key) == 200);

  std::vector<std::string> seen;
  const auto view = wait_for_payment(s.daemon.port(), acme_token, req.operation_id, is_settled, 15s, &seen);
  const auto rec = reconciliation_of(view);
  REQUIRE_MESSAGE(rec.is_object(), s.describe(view));
  CHECK(json_string(rec, "reason") == "retry_budget_exhausted");
  CHECK(json_string(rec, "status") == "open");
  CHECK(json_string(view, "state") != "FAILED_FINAL");
  for (const std::string& state : seen) CHECK(state != "FAILED_FINAL");
  CHECK(trade_state_at_vendor(s.emulator, key) == "SUCCESS");
  const std::string evidence = evidence_of_open_case(s, view);
  CHECK_MESSAGE(evidence.find("\"vendor_fence\"") != std::string::npos, evidence);
  CHECK_MESSAGE(evidence.find("ORDERPAID") != std::string::npos, evidence);
  CHECK(s.stats().at("closes").as_int64() == 1);
}

TEST_CASE("wechatpay: no close before close_not_before, and no case while waiting for it") {
  if (skip_without_emulator()) return;
  Setup s(WxOptions{.retry = wx_short_retry, .close_not_before_s = 3, .callbacks = true});
  const PaymentRequest req = wx_payment("wx-close-later");
  const auto started = std::chrono::steady_clock::now();
  REQUIRE(post_payment(s.daemon.port(), acme_token, req).status == 201);
  bool case_meanwhile = false;
  std::int64_t closes_before_final = 0;
  const auto view = wait_for_payment(
      s.daemon.port(), acme_token, req.operation_id,
      [&](const boost::json::value& v) {
        if (!reconciliation_of(v).is_null()) case_meanwhile = true;
        if (json_string(v, "state") == "FAILED_FINAL") return true;
        closes_before_final = s.stats().at("closes").as_int64();
        return false;
      },
      20s);
  const auto elapsed = std::chrono::steady_clock::now() - started;
  REQUIRE_MESSAGE(json_string(view, "state") == "FAILED_FINAL", s.describe(view));
  CHECK_FALSE(case_meanwhile);
  CHECK(elapsed >= 3s);
  CHECK(closes_before_final <= 1);
  const auto stats = s.stats();
  CHECK(stats.at("early_closes_refused").as_int64() == 0);
  CHECK(stats.at("closes").as_int64() == 1);
  CHECK(trade_state_at_vendor(s.emulator, json_string(view, "client_key")) == "CLOSED");
}

TEST_CASE("wechatpay: refunds through every fault, one refund at WeChat Pay each") {
  if (skip_without_emulator()) return;
  Setup s;
  const PaymentRequest req = wx_payment("wx-refunds");
  const auto created = create_order(s, req);
  REQUIRE(s.emulator.pay(json_string(created, "client_key")) == 200);
  const auto paid = expect_paid(s, req);
  const std::pair<std::string, int> faults[] = {
      {"commit_then_5xx", 0}, {"fail_before_commit", 0}, {"commit_then_hang", 3000}, {"delayed_commit", 1000}};
  for (const auto& fault : faults) {
    const std::string mode = fault.first;
    CAPTURE(mode);
    s.emulator.set_fault(mode, 1, fault.second, "^/v3/refund/domestic/refunds$");
    const std::string refund_id = unique_operation_id("wx-refund-" + mode);
    REQUIRE(post_refund(s.daemon.port(), acme_token, req.operation_id, refund_id, 200).status == 201);
    const auto refund = wait_for_refund_state(s.daemon.port(), acme_token, refund_id, "SUCCEEDED", 25s);
    REQUIRE_MESSAGE(json_string(refund, "state") == "SUCCEEDED",
                    boost::json::serialize(refund) << "\nledger " << boost::json::serialize(s.emulator.ledger()));
    int at_vendor = 0;
    const boost::json::value ledger = s.emulator.ledger();
    for (const auto& r : ledger.at("refunds").as_array()) {
      if (r.at("out_refund_no").as_string() != json_string(refund, "client_key")) continue;
      ++at_vendor;
      CHECK(r.at("status").as_string() == "SUCCESS");
      CHECK(r.at("out_trade_no").as_string() == json_string(paid, "client_key"));
    }
    CHECK(at_vendor == 1);
  }
  CHECK(json_int(fetch_payment(s.daemon.port(), acme_token, req.operation_id), "amount_refunded_minor").value_or(0) ==
        800);
  CHECK(s.emulator.schema_problems().as_array().empty());
}

TEST_CASE("wechatpay: duplicate and out-of-order notifications are applied once") {
  if (skip_without_emulator()) return;
  Setup s;
  // Every notification held, then sent twice each, newest first: the refund's before the
  // payment's, both after payorch learnt them by query.
  s.switches(R"({"duplicate_notifications":true,"hold_notifications":true})");
  const PaymentRequest req = wx_payment("wx-dup");
  const auto created = create_order(s, req);
  REQUIRE(s.emulator.pay(json_string(created, "client_key")) == 200);
  const auto paid = expect_paid(s, req);
  const std::string refund_id = unique_operation_id("wx-dup-refund");
  REQUIRE(post_refund(s.daemon.port(), acme_token, req.operation_id, refund_id, 500).status == 201);
  const auto refund = wait_for_refund_state(s.daemon.port(), acme_token, refund_id, "SUCCEEDED", 20s);
  REQUIRE(json_string(refund, "state") == "SUCCEEDED");
  CHECK(s.emulator.ledger().at("notifications").at("pending").as_int64() == 2);

  s.release_notifications(true);
  const boost::json::value ledger = s.emulator.ledger();
  CHECK_MESSAGE(ledger.at("notifications").at("delivered").as_int64() == 2, boost::json::serialize(ledger));
  CHECK(s.stats().at("notification_posts").as_int64() >= 4);

  const auto after = fetch_payment(s.daemon.port(), acme_token, req.operation_id);
  CHECK(json_string(after, "state") == "SUCCEEDED");
  CHECK(json_int(after, "amount_refunded_minor").value_or(0) == 500);
  CHECK(json_string(fetch_refund(s.daemon.port(), acme_token, refund_id), "state") == "SUCCEEDED");
  PayorchRecords records(s.daemon);
  CHECK(records.count_events(json_string(paid, "id"), "payment.succeeded") == 1);
  const std::vector<std::string> repeated = records.repeated_events();
  for (const std::string& r : repeated) CHECK_MESSAGE(false, "repeated event " << r);
}

TEST_CASE("wechatpay: an operator's failed_final is carried out by the close and its query; a paid order opens a new case") {
  if (skip_without_emulator()) return;
  Setup s(WxOptions{.retry = wx_short_retry, .close_not_before_s = 2, .callbacks = false});
  // The first close of each payment fails (500 before the vendor did anything): a case each.
  s.emulator.set_fault("fail_before_commit", 2, 0, "/close$");
  const PaymentRequest unpaid = wx_payment("wx-op-unpaid");
  const PaymentRequest paid = wx_payment("wx-op-paid");
  for (const PaymentRequest* req : {&unpaid, &paid})
    REQUIRE(post_payment(s.daemon.port(), acme_token, *req).status == 201);
  const auto unpaid_case = wait_for_payment(s.daemon.port(), acme_token, unpaid.operation_id, is_settled, 15s);
  const auto paid_case = wait_for_payment(s.daemon.port(), acme_token, paid.operation_id, is_settled, 15s);
  REQUIRE_MESSAGE(reconciliation_of(unpaid_case).is_object(), s.describe(unpaid_case));
  REQUIRE_MESSAGE(reconciliation_of(paid_case).is_object(), s.describe(paid_case));
  CHECK(evidence_of_open_case(s, unpaid_case).find("\"vendor_fence\"") != std::string::npos);
  const std::string paid_key = json_string(paid_case, "client_key");
  // Meanwhile the second order is paid by its user.
  REQUIRE(s.emulator.pay(paid_key) == 200);

  const Headers admin{{"Authorization", std::string("Bearer ") + admin_token},
                      {"Content-Type", "application/json"}};
  for (const boost::json::value* v : {&unpaid_case, &paid_case}) {
    const std::string case_id = json_string(reconciliation_of(*v), "case_id");
    const HttpResponse resolved = http_request(s.daemon.port(), "POST", "/v1/reconciliation/" + case_id + "/resolve",
                                               admin, R"({"outcome":"failed_final","note":"customer gave up"})");
    REQUIRE_MESSAGE(resolved.status == 200, resolved.describe());
    CHECK(json_string(resolved.json().at("payment"), "state") != "FAILED_FINAL");
  }

  const auto failed = wait_for_state(s.daemon.port(), acme_token, unpaid.operation_id, "FAILED_FINAL", 15s);
  REQUIRE_MESSAGE(json_string(failed, "state") == "FAILED_FINAL", s.describe(failed));
  CHECK(trade_state_at_vendor(s.emulator, json_string(failed, "client_key")) == "CLOSED");

  const std::string first_case = json_string(reconciliation_of(paid_case), "case_id");
  std::vector<std::string> seen;
  const auto reopened = wait_for_payment(
      s.daemon.port(), acme_token, paid.operation_id,
      [&](const boost::json::value& v) {
        const auto rec = reconciliation_of(v);
        return rec.is_object() && json_string(rec, "status") == "open" && json_string(rec, "case_id") != first_case;
      },
      15s, &seen);
  const auto rec = reconciliation_of(reopened);
  REQUIRE_MESSAGE(rec.is_object(), s.describe(reopened));
  CHECK(json_string(rec, "case_id") != first_case);
  CHECK(json_string(rec, "status") == "open");
  CHECK(json_string(reopened, "state") != "FAILED_FINAL");
  for (const std::string& state : seen) CHECK(state != "FAILED_FINAL");
  CHECK(trade_state_at_vendor(s.emulator, paid_key) == "SUCCESS");
  const std::string evidence = evidence_of_open_case(s, reopened);
  CHECK_MESSAGE(evidence.find("ORDERPAID") != std::string::npos, evidence);
}
