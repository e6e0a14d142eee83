// Query strings against the real payorchd (docs/api.md, "Query strings"): every route reads a
// query parameter as one value, so a parameter given twice is refused with 422 invalid-request
// naming it, before the route acts on either value: a list, the admin lookups by tenant_id and a
// settlement import with two providers all change and show nothing.
#include <doctest/doctest.h>

#include <iterator>
#include <string>
#include <vector>

#include "support/daemon.h"
#include "support/database_probe.h"
#include "support/http_client.h"
#include "support/payorch_api.h"

using namespace payorch::test;

namespace {

Headers bearer(std::string_view token) {
  return {{"Authorization", "Bearer " + std::string(token)}};
}

// True when `r` is a 422 invalid-request whose errors[] names exactly `field`, as repeated.
bool refused_as_repeated(const HttpResponse& r, std::string_view field) {
  if (!is_problem(r, 422, "invalid-request")) return false;
  const boost::json::value body = r.json();
  const auto& errors = body.at("errors").as_array();
  return errors.size() == 1 && json_string(errors[0], "field") == field &&
         json_string(errors[0], "code") == "repeated" &&
         json_string(body, "detail").find(std::string(field)) != std::string::npos;
}

std::string payment_state(Daemon& daemon, const std::string& payment_id) {
  DatabaseProbe db(daemon);
  return db.query("SELECT state FROM payments WHERE id = ?1", {payment_id}).at(0).at("state").value_or("");
}

}  // namespace

TEST_CASE("query: a parameter given twice is a 422 naming it, on tenant and admin routes alike") {
  DaemonConfig config;
  // A second provider, so that which of two `provider` values an import takes would matter.
  config.providers +=
      "\n"
      "  - name: sim2\n"
      "    adapter: sim\n"
      "    base_url: \"http://127.0.0.1:9\"\n"
      "    api_key: \"sim-key-5678\"\n"
      "    timeouts: {connect: 1s, request: 5s}\n"
      "    contract: {key_retention: 24h, recovery: lookup, not_found_final_after: 30s}\n"
      "    retry: {max_attempts: 5, initial_backoff: 1s, max_backoff: 30s, give_up_after: 1h}\n"
      "    risk: {max_unknown_count: 100, max_unknown_amount_minor: 100000000}\n"
      "    callback: {secret: \"sim2-callback-secret\", tolerance: 5m, retry_horizon: 24h}";
  Daemon daemon(config);
  daemon.start();
  const std::uint16_t port = daemon.port();
  INFO("payorchd log:\n" << daemon.log_tail());

  const PaymentRequest req{.operation_id = unique_operation_id("query-op"), .amount_minor = 4200};
  const HttpResponse created = post_payment(port, acme_token, req);
  REQUIRE_MESSAGE(created.status == 201, created.describe());
  const std::string payment_id = json_string(created.json(), "id");
  const std::string client_key = json_string(created.json(), "client_key");
  const std::string refund_op = unique_operation_id("query-rf");
  REQUIRE(post_refund(port, acme_token, req.operation_id, refund_op, 1000).status == 201);

  SUBCASE("tenant lists and reads") {
    const std::string targets[] = {
        "/v1/payments?state=PROCESSING&state=SUCCEEDED",
        "/v1/payments?limit=1&limit=1",
        "/v1/payments?state=PROCESSING&limit=5&st%61te=PROCESSING",
        "/v1/events?after=0&after=1",
        "/v1/events?limit=5&limit=200",
        "/v1/payments/" + req.operation_id + "?x=1&x=2",
        "/v1/payments/" + req.operation_id + "/refunds?x=1&x=1",
        "/v1/refunds/" + refund_op + "?x=&x=",
    };
    const std::string fields[] = {"state", "limit", "state", "after", "limit", "x", "x", "x"};
    for (std::size_t i = 0; i < std::size(targets); ++i) {
      CAPTURE(targets[i]);
      const HttpResponse r = http_request(port, "GET", targets[i], bearer(acme_token));
      CHECK_MESSAGE(refused_as_repeated(r, fields[i]), r.describe());
    }
    // Each given once, the same routes answer.
    const HttpResponse list = http_request(port, "GET", "/v1/payments?state=PROCESSING&limit=1", bearer(acme_token));
    CHECK_MESSAGE(list.status == 200, list.describe());
    const HttpResponse feed = http_request(port, "GET", "/v1/events?after=0&limit=5", bearer(acme_token));
    CHECK_MESSAGE(feed.status == 200, feed.describe());
  }

  SUBCASE("admin lookups: tenant_id twice names no tenant") {
    const std::string targets[] = {
        "/v1/admin/payments?operation_id=" + req.operation_id + "&tenant_id=globex&tenant_id=acme",
        "/v1/admin/timeline?operation_id=" + req.operation_id + "&tenant_id=globex&tenant_id=acme",
        "/v1/admin/refunds/" + refund_op + "?tenant_id=globex&tenant_id=acme",
        "/v1/admin/timeline?id=" + payment_id + "&id=pay_01HZZZZZZZZZZZZZZZZZZZZZZZ",
        "/v1/reconciliation?status=open&status=resolved",
    };
    const std::string fields[] = {"tenant_id", "tenant_id", "tenant_id", "id", "status"};
    for (std::size_t i = 0; i < std::size(targets); ++i) {
      CAPTURE(targets[i]);
      const HttpResponse r = http_request(port, "GET", targets[i], bearer(admin_token));
      CHECK_MESSAGE(refused_as_repeated(r, fields[i]), r.describe());
      CHECK(r.body.find(payment_id) == std::string::npos);
    }
    const HttpResponse once = http_request(
        port, "GET", "/v1/admin/payments?operation_id=" + req.operation_id + "&tenant_id=acme", bearer(admin_token));
    REQUIRE_MESSAGE(once.status == 200, once.describe());
    CHECK(once.body.find(payment_id) != std::string::npos);
  }

  SUBCASE("a settlement import with provider twice applies nothing") {
    Headers h = bearer(admin_token);
    h.emplace_back("Content-Type", "text/csv");
    const std::string csv = "reference,status,amount_minor,currency,vendor_reference\n" + client_key +
                            ",succeeded,4200,EUR,ch_query\n";
    for (const char* query : {"?provider=sim2&provider=sim", "?provider=sim&provider=sim2",
                              "?provider=sim&provider=sim"}) {
      CAPTURE(query);
      const HttpResponse r =
          http_request(port, "POST", std::string("/v1/reconciliation/import") + query, h, csv);
      CHECK_MESSAGE(refused_as_repeated(r, "provider"), r.describe());
      CHECK(payment_state(daemon, payment_id) == "PROCESSING");
    }
    // Once, the same file settles the payment.
    const HttpResponse applied = http_request(port, "POST", "/v1/reconciliation/import?provider=sim", h, csv);
    REQUIRE_MESSAGE(applied.status == 200, applied.describe());
    CHECK(json_int(applied.json(), "finalized") == 1);
    CHECK(payment_state(daemon, payment_id) == "SUCCEEDED");
  }

  SUBCASE("routes without a token too") {
    for (const char* target : {"/healthz?probe=1&probe=2", "/status?a=&a="}) {
      CAPTURE(target);
      const HttpResponse r = http_request(port, "GET", target);
      CHECK_MESSAGE(refused_as_repeated(r, target[1] == 'h' ? "probe" : "a"), r.describe());
    }
    CHECK(http_request(port, "GET", "/healthz?probe=1").status == 200);
  }
}
