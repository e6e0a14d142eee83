// Refunds against the real daemon and demo vendor (docs/refunds.md), the vendor's ledger checked
// each time: the answers of the refund intake, DEFERRED until the payment succeeded (or
// FAILED_FINAL with it), the money rule under concurrent requests, and refunds in the views
// and the feed.
#include <doctest/doctest.h>

#include <atomic>
#include <thread>

#include "support/daemon.h"
#include "support/engine_checks.h"
#include "support/payorch_api.h"
#include "support/vendor_sim.h"

using namespace payorch::test;
using namespace std::chrono_literals;


TEST_CASE("refunds: a SUCCEEDED payment's refund is sent once; replays, reuse, 404 and the money rule") {
  VendorSim sim;
  Daemon daemon(engine_daemon_config({{.base_url = sim.base_url(), .retry = roomy_retry}}));
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail() << "\nsim log:\n" << sim.log_tail());

  const PaymentRequest pay{.operation_id = unique_operation_id("rf-pay"), .amount_minor = 10000};
  REQUIRE(post_payment(daemon.port(), acme_token, pay).status == 201);
  const auto paid = wait_for_state(daemon.port(), acme_token, pay.operation_id, "SUCCEEDED", 5s);
  REQUIRE(json_string(paid, "state") == "SUCCEEDED");
  CHECK(json_int(paid, "amount_refunded_minor") == 0);

  const std::string op = unique_operation_id("rf-1");
  const HttpResponse created = post_refund(daemon.port(), acme_token, pay.operation_id, op, 3000);
  REQUIRE_MESSAGE(created.status == 201, created.describe());
  CHECK(created.header("Location") == "/v1/refunds/" + op);
  const auto view = created.json();
  CHECK(json_string(view, "state") == "PROCESSING");
  CHECK(json_string(view, "id").starts_with("re_"));
  CHECK(json_string(view, "client_key").starts_with("ck_"));
  CHECK(json_string(view, "payment_id") == json_string(paid, "id"));
  CHECK(json_string(view, "payment_operation_id") == pay.operation_id);
  CHECK(json_string(view, "currency") == "EUR");
  CHECK(json_string(view, "reason") == "customer asked");
  CHECK(json_string(view, "request_digest").starts_with("sha256:"));

  const auto done = wait_for_refund_state(daemon.port(), acme_token, op, "SUCCEEDED", 5s);
  REQUIRE(json_string(done, "state") == "SUCCEEDED");
  CHECK(refund_ledger_status(sim, done) == "succeeded");
  CHECK(json_string(done, "vendor_reference").starts_with("rf_"));
  CHECK(json_int(done, "attempt_count") == 1);
  CHECK(json_int(fetch_payment(daemon.port(), acme_token, pay.operation_id), "amount_refunded_minor") == 3000);

  // The same request again: 200, the same refund, nothing sent again.
  const HttpResponse replay = post_refund(daemon.port(), acme_token, pay.operation_id, op, 3000);
  CHECK(replay.status == 200);
  CHECK(replay.header("Idempotent-Replayed") == "true");
  CHECK(json_string(replay.json(), "id") == json_string(view, "id"));
  // The key with another amount: 422, the stored refund unchanged.
  CHECK(is_problem(post_refund(daemon.port(), acme_token, pay.operation_id, op, 3001), 422, "idempotency-key-reused"));
  // No such payment (for this tenant): 404.
  CHECK(is_problem(post_refund(daemon.port(), acme_token, "no-such-payment", unique_operation_id("rf-x"), 1), 404, "not-found"));
  // The money rule: 7000 is left, 7001 is refused with what remains, 7000 fits exactly.
  const HttpResponse over = post_refund(daemon.port(), acme_token, pay.operation_id, unique_operation_id("rf-over"), 7001);
  CHECK(is_problem(over, 422, "refund-exceeds-payment"));
  CHECK(json_int(over.json(), "remaining_minor") == 7000);
  const std::string rest = unique_operation_id("rf-rest");
  REQUIRE(post_refund(daemon.port(), acme_token, pay.operation_id, rest, 7000).status == 201);
  CHECK(json_string(wait_for_refund_state(daemon.port(), acme_token, rest, "SUCCEEDED", 5s), "state") == "SUCCEEDED");
  CHECK(is_problem(post_refund(daemon.port(), acme_token, pay.operation_id, unique_operation_id("rf-more"), 1), 422,
                   "refund-exceeds-payment"));

  // The payment's refunds, oldest first; the payment's refunded total.
  const HttpResponse list = http_request(daemon.port(), "GET", "/v1/payments/" + pay.operation_id + "/refunds",
                                         tenant_headers(acme_token));
  REQUIRE(list.status == 200);
  const boost::json::value listed = list.json();
  const auto& data = listed.as_object().at("data").as_array();
  REQUIRE(data.size() == 2);
  CHECK(json_string(data[0], "operation_id") == op);
  CHECK(json_string(data[1], "operation_id") == rest);
  CHECK(json_int(fetch_payment(daemon.port(), acme_token, pay.operation_id), "amount_refunded_minor") == 10000);
  const std::int64_t at_vendor = refunded_at_vendor(sim, json_string(paid, "vendor_reference"));
  CHECK(at_vendor == 10000);

  // The feed: refund events, with the refund view, after the payment's.
  PayorchRecords records(daemon);
  CHECK(records.event_types(json_string(view, "id")) == "refund.created, refund.succeeded");
  // A refund is not a payment: GET /v1/payments/{refund op} is 404, and the list shows payments only.
  CHECK(get_payment(daemon.port(), acme_token, op).status == 404);
  const HttpResponse payments = http_request(daemon.port(), "GET", "/v1/payments", tenant_headers(acme_token));
  const boost::json::value payment_list = payments.json();
  for (const auto& p : payment_list.as_object().at("data").as_array())
    CHECK(json_string(p, "id").starts_with("pay_"));
}

TEST_CASE("refunds: DEFERRED while the payment is pending, sent once it succeeded") {
  VendorSim sim({"--pending-delay", "1500ms"});
  Daemon daemon(engine_daemon_config({{.base_url = sim.base_url(), .retry = roomy_retry}}));
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail() << "\nsim log:\n" << sim.log_tail());

  const PaymentRequest pay{.operation_id = unique_operation_id("rf-pend"), .amount_minor = 5000,
                           .source = "tok_pending"};
  REQUIRE(post_payment(daemon.port(), acme_token, pay).status == 201);
  const std::string op = unique_operation_id("rf-deferred");
  const HttpResponse created = post_refund(daemon.port(), acme_token, pay.operation_id, op, 2000);
  REQUIRE_MESSAGE(created.status == 201, created.describe());
  CHECK(json_string(created.json(), "state") == "DEFERRED");
  // Deferred: nothing at the vendor while the payment is not SUCCEEDED.
  const std::string refund_key = json_string(created.json(), "client_key");
  CHECK(sim.count_refunds(refund_key) == 0);

  std::vector<std::string> seen;
  const auto done = wait_for_refund_state(daemon.port(), acme_token, op, "SUCCEEDED", 10s, &seen);
  std::string states;
  for (const std::string& st : seen) states += st + " ";
  INFO("refund states seen: " << states);
  REQUIRE(json_string(done, "state") == "SUCCEEDED");
  CHECK(seen.front() == "DEFERRED");
  CHECK(refund_ledger_status(sim, done) == "succeeded");
  // The vendor refunds only a succeeded charge (it declines a refund of a pending one with
  // charge_not_refundable): a refund that succeeded there was sent after the payment succeeded.
  const auto payment = fetch_payment(daemon.port(), acme_token, pay.operation_id);
  CHECK(json_string(payment, "state") == "SUCCEEDED");
  CHECK(json_int(payment, "amount_refunded_minor") == 2000);
  PayorchRecords records(daemon);
  // DEFERRED → PROCESSING is written in the payment's own transaction (the same commit).
  const auto moved = records.probe().query(
      "SELECT (SELECT updated_at FROM payments WHERE operation_id = ? AND operation_type = 'payment')"
      " AS paid_at, (SELECT created_at FROM outbox WHERE payment_id = ? AND type = 'refund.processing')"
      " AS released_at",
      {pay.operation_id, json_string(done, "id")});
  REQUIRE(moved.size() == 1);
  CHECK(moved[0].at("paid_at") == moved[0].at("released_at"));
  CHECK(records.event_types(json_string(done, "id")).starts_with("refund.created, refund.processing"));
}

TEST_CASE("refunds: DEFERRED refunds of a declined payment fail with payment_failed, never sent") {
  VendorSim sim;
  Daemon daemon(engine_daemon_config({{.base_url = sim.base_url(), .retry = roomy_retry}}));
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail() << "\nsim log:\n" << sim.log_tail());

  // The decline is held back 1.5 s at the vendor, so the payment is PROCESSING meanwhile.
  sim.add_fault("latency", 1, 1500, std::string("tok_decline"));
  const PaymentRequest pay{.operation_id = unique_operation_id("rf-decl"), .amount_minor = 4000,
                           .source = "tok_decline"};
  REQUIRE(post_payment(daemon.port(), acme_token, pay).status == 201);
  const std::string a = unique_operation_id("rf-d1"), b = unique_operation_id("rf-d2");
  const HttpResponse ra = post_refund(daemon.port(), acme_token, pay.operation_id, a, 1000);
  const HttpResponse rb = post_refund(daemon.port(), acme_token, pay.operation_id, b, 3000);
  REQUIRE_MESSAGE(ra.status == 201, ra.describe());
  REQUIRE_MESSAGE(rb.status == 201, rb.describe());
  CHECK(json_string(ra.json(), "state") == "DEFERRED");
  CHECK(json_string(rb.json(), "state") == "DEFERRED");
  // Both DEFERRED refunds together already reserve the whole payment.
  CHECK(is_problem(post_refund(daemon.port(), acme_token, pay.operation_id, unique_operation_id("rf-d3"), 1), 422,
                   "refund-exceeds-payment"));

  REQUIRE(json_string(wait_for_state(daemon.port(), acme_token, pay.operation_id, "FAILED_FINAL", 10s), "state") ==
          "FAILED_FINAL");
  for (const std::string& op : {a, b}) {
    const auto r = fetch_refund(daemon.port(), acme_token, op);
    CHECK(json_string(r, "state") == "FAILED_FINAL");
    CHECK(failure_code_of(r) == "payment_failed");
    CHECK(json_int(r, "attempt_count") == 0);
    CHECK(sim.count_refunds(json_string(r, "client_key")) == 0);
  }
  // A FAILED_FINAL payment takes no refund.
  CHECK(is_problem(post_refund(daemon.port(), acme_token, pay.operation_id, unique_operation_id("rf-d4"), 1), 409,
                   "payment-not-refundable"));
}

TEST_CASE("refunds: 50 concurrent refunds of 3% each: exactly the ones that fit are accepted") {
  VendorSim sim;
  Daemon daemon(engine_daemon_config({{.base_url = sim.base_url(), .retry = roomy_retry}}));
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail() << "\nsim log:\n" << sim.log_tail());

  const PaymentRequest pay{.operation_id = unique_operation_id("rf-conc"), .amount_minor = 10000};
  REQUIRE(post_payment(daemon.port(), acme_token, pay).status == 201);
  const auto paid = wait_for_state(daemon.port(), acme_token, pay.operation_id, "SUCCEEDED", 5s);
  REQUIRE(json_string(paid, "state") == "SUCCEEDED");

  constexpr int n = 50;
  std::vector<unsigned> statuses(n, 0);
  std::vector<std::string> ops(n);
  for (int i = 0; i < n; ++i) ops[i] = unique_operation_id("rf-c");
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i)
    threads.emplace_back([&, i] {
      while (!go.load()) std::this_thread::yield();
      statuses[i] = post_refund(daemon.port(), acme_token, pay.operation_id, ops[i], 300).status;  // its own connection
    });
  go = true;
  for (auto& t : threads) t.join();
  int accepted = 0, refused = 0;
  for (unsigned s : statuses) {
    if (s == 201) ++accepted;
    else if (s == 422) ++refused;
  }
  // 33 × 300 = 9900 fits in 10000; a 34th would not.
  CHECK(accepted == 33);
  CHECK(refused == n - 33);
  for (int i = 0; i < n; ++i)
    if (statuses[i] == 201) CHECK(json_string(wait_for_refund_state(daemon.port(), acme_token, ops[i], "SUCCEEDED", 10s), "state") == "SUCCEEDED");
  const std::int64_t at_vendor = refunded_at_vendor(sim, json_string(paid, "vendor_reference"));
  CHECK(at_vendor == 9900);
  CHECK(at_vendor <= pay.amount_minor);
  CHECK(json_int(fetch_payment(daemon.port(), acme_token, pay.operation_id), "amount_refunded_minor") == 9900);
}

TEST_CASE("refunds: Prefer: wait holds the answer until the refund is terminal") {
  VendorSim sim({"--pending-delay", "1s"});
  Daemon daemon(engine_daemon_config({{.base_url = sim.base_url(), .retry = roomy_retry}}));
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail() << "\nsim log:\n" << sim.log_tail());

  // A refund of a tok_pending charge is itself pending at the vendor for --pending-delay.
  const PaymentRequest pay{.operation_id = unique_operation_id("rfw-pay"), .amount_minor = 2000,
                           .source = "tok_pending"};
  REQUIRE(post_payment(daemon.port(), acme_token, pay).status == 201);
  REQUIRE(json_string(wait_for_state(daemon.port(), acme_token, pay.operation_id, "SUCCEEDED", 10s), "state") ==
          "SUCCEEDED");
  Headers headers = tenant_headers(acme_token);
  headers.emplace_back("Prefer", "wait=8");
  const std::string op = unique_operation_id("rfw-refund");
  const HttpResponse created = http_request(daemon.port(), "POST", "/v1/payments/" + pay.operation_id + "/refunds",
                                            headers, refund_json(op, 500), 15s);
  REQUIRE_MESSAGE(created.status == 201, created.describe());
  CHECK(created.header("Preference-Applied") == "wait=8");
  CHECK(json_string(created.json(), "state") == "SUCCEEDED");
  // GET with the same preference answers at once for a terminal refund.
  const HttpResponse got = http_request(daemon.port(), "GET", "/v1/refunds/" + op, headers);
  CHECK(got.status == 200);
  CHECK(json_string(got.json(), "state") == "SUCCEEDED");
}
