// The operator console's server side (docs/console.md) on a real payorchd: the page and its
// assets with their security headers, the provider caps /status shows beside the exposure, and a
// case view's allowed_outcomes, which the page's resolve form offers. The page in a browser is
// tests/console.
#include <doctest/doctest.h>

#include <boost/json.hpp>

#include "support/daemon.h"
#include "support/engine_checks.h"
#include "support/http_client.h"
#include "support/payorch_api.h"
#include "support/ports.h"
#include "support/vendor_sim.h"

using namespace payorch::test;
using namespace std::chrono_literals;

namespace {

HttpResponse admin_get(std::uint16_t port, const std::string& target) {
  return http_request(port, "GET", target, {{"Authorization", std::string("Bearer ") + admin_token}});
}

void check_console_headers(const HttpResponse& r) {
  CHECK(r.header("Content-Security-Policy") ==
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
        "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; "
        "frame-ancestors 'none'");
  CHECK(r.header("X-Content-Type-Options") == "nosniff");
  CHECK(r.header("X-Frame-Options") == "DENY");
  CHECK(r.header("Referrer-Policy") == "no-referrer");
}

}  // namespace

TEST_CASE("console: the page and its assets come from the binary with the console's headers") {
  Daemon daemon;
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail());

  for (const char* target : {"/console", "/console/", "/console/index.html"}) {
    CAPTURE(target);
    const HttpResponse page = http_request(daemon.port(), "GET", target);
    REQUIRE_MESSAGE(page.status == 200, page.describe());
    CHECK(page.header("Content-Type") == "text/html; charset=utf-8");
    CHECK(page.body.find("<script src=\"/console/console.js\" defer></script>") != std::string::npos);
    check_console_headers(page);
  }
  const HttpResponse js = http_request(daemon.port(), "GET", "/console/console.js");
  REQUIRE(js.status == 200);
  CHECK(js.header("Content-Type") == "text/javascript; charset=utf-8");
  CHECK(js.body.find("sessionStorage") != std::string::npos);
  check_console_headers(js);
  const HttpResponse css = http_request(daemon.port(), "GET", "/console/console.css");
  REQUIRE(css.status == 200);
  CHECK(css.header("Content-Type") == "text/css; charset=utf-8");

  // Only the embedded files: a dot-dot name is just another unknown name.
  CHECK(is_problem(http_request(daemon.port(), "GET", "/console/../status"), 404, "not-found"));
  const HttpResponse unknown = http_request(daemon.port(), "GET", "/console/admin.js");
  CHECK(is_problem(unknown, 404, "not-found"));
  check_console_headers(unknown);
  const HttpResponse post = http_request(daemon.port(), "POST", "/console", {}, "x");
  CHECK(is_problem(post, 405, "method-not-allowed"));
  CHECK(post.header("Allow") == "GET");
  // Not a prefix match: /consoles is no console path.
  CHECK(http_request(daemon.port(), "GET", "/consoles").status == 404);
}

TEST_CASE("console: /status shows each provider's caps; a case view says what resolve takes now") {
  RefusingPort nowhere;
  SimProviderConfig down{.base_url = "http://127.0.0.1:" + std::to_string(nowhere.port()),
                         .retry = "{max_attempts: 2, initial_backoff: 100ms, max_backoff: 200ms, give_up_after: 1h}",
                         .risk = "{max_unknown_count: 7, max_unknown_amount_minor: 123456}"};
  Daemon daemon(engine_daemon_config({down}));
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail());

  const HttpResponse status = http_request(daemon.port(), "GET", "/status");
  REQUIRE(status.status == 200);
  const boost::json::value body = status.json();
  const auto& providers = body.at("providers").as_array();
  REQUIRE(providers.size() == 1);
  const auto& risk = providers[0].at("risk");
  CHECK(risk.at("max_unknown_count") == 7);
  CHECK(risk.at("max_unknown_amount_minor") == 123456);

  const PaymentRequest req{.operation_id = unique_operation_id("console-case")};
  REQUIRE(post_payment(daemon.port(), acme_token, req).status == 201);
  const auto view = wait_for_case(daemon.port(), acme_token, req.operation_id, 8s);
  const std::string case_id = json_string(reconciliation_of(view), "case_id");
  REQUIRE(!case_id.empty());

  // PROCESSING, never sent, key retained: every outcome.
  const HttpResponse open = admin_get(daemon.port(), "/v1/reconciliation/" + case_id);
  REQUIRE_MESSAGE(open.status == 200, open.describe());
  const boost::json::value open_view = open.json();
  CHECK(boost::json::serialize(open_view.at("allowed_outcomes")) == R"(["succeeded","failed_final","retry"])");
  CHECK(open_view.at("retry_refused").is_null());

  const HttpResponse resolved = http_request(
      daemon.port(), "POST", "/v1/reconciliation/" + case_id + "/resolve",
      {{"Authorization", std::string("Bearer ") + admin_token}, {"Content-Type", "application/json"}},
      R"({"outcome":"failed_final","note":"never reached the vendor"})");
  REQUIRE_MESSAGE(resolved.status == 200, resolved.describe());
  // Closed: nothing more to choose.
  const HttpResponse closed = admin_get(daemon.port(), "/v1/reconciliation/" + case_id);
  REQUIRE(closed.status == 200);
  const boost::json::value closed_view = closed.json();
  CHECK(closed_view.at("allowed_outcomes").as_array().empty());
  CHECK(closed_view.at("status") == "resolved");
}
