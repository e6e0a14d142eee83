// SIGHUP (systemctl reload) against the real payorchd (docs/operations.md, "Rotating secrets"):
// tokens and the listener's certificate are read again from their files and used from the next
// request or handshake on, while requests keep being answered across the reloads; a reload that
// cannot load keeps every running value and says why in the log; settings other than secrets
// are reported as needing a restart.
#include <doctest/doctest.h>

#include <signal.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include <boost/beast/http/verb.hpp>
#include <boost/json/parse.hpp>

#include "core/signature.h"
#include "support/daemon.h"
#include "support/http_client.h"
#include "support/log_audit.h"
#include "support/payorch_api.h"
#include "support/test_cert.h"
#include "support/tls_client.h"
#include "support/vendor_callbacks.h"
#include "support/webhook_receiver.h"

using namespace payorch::test;
using namespace std::chrono_literals;

namespace {

// The first of "event=config.reloaded" and "event=config.reload_failed" that a SIGHUP makes
// payorchd log, with every line logged after the signal; fails the test when neither comes.
struct Reload {
  bool reloaded = false;
  std::string log;  // what the daemon logged since the signal
};

Reload sighup(Daemon& daemon) {
  const std::size_t before = read_file(daemon.log_path()).size();
  REQUIRE(::kill(daemon.pid(), SIGHUP) == 0);
  Reload r;
  const bool done = eventually([&] {
    r.log = read_file(daemon.log_path()).substr(before);
    return r.log.find(" event=config.reloaded ") != std::string::npos ||
           r.log.find(" event=config.reload_failed ") != std::string::npos;
  }, 10s);
  REQUIRE_MESSAGE(done, "no reload logged after SIGHUP:\n" << daemon.log_tail());
  std::this_thread::sleep_for(50ms);  // a failed reload may log one line per problem
  r.log = read_file(daemon.log_path()).substr(before);
  r.reloaded = r.log.find(" event=config.reloaded ") != std::string::npos;
  return r;
}

unsigned status_as(std::uint16_t port, const std::string& token) {
  return http_request(port, "GET", "/v1/payments", {{"Authorization", "Bearer " + token}}).status;
}

DaemonConfig acme_token_from_file() {
  DaemonConfig config;
  config.tenants =
      "tenants:\n"
      "  - {id: acme, token_file: \"{dir}/secrets/acme.token\"}\n"
      "  - {id: globex, token: \"globex-token-123\"}";
  return config;
}

// Requests sent over and over, on a kept-alive connection and on new ones, until stopped:
// every one must be answered 200.
class RequestLoop {
public:
  explicit RequestLoop(std::uint16_t port) : thread_([this, port] { run(port); }) {}
  ~RequestLoop() { stop(); }
  void stop() {
    stopping_ = true;
    if (thread_.joinable()) thread_.join();
  }
  int answered() const { return answered_; }
  int failed() const { return failed_; }
  const std::string& first_failure() const { return first_failure_; }

private:
  void run(std::uint16_t port) {
    const Headers globex{{"Authorization", std::string("Bearer ") + globex_token}};
    auto kept = std::make_unique<HttpConnection>(port);
    while (!stopping_) {
      const bool fresh = answered_ % 4 == 3;
      const HttpResponse r = fresh ? http_request(port, "GET", "/v1/payments", globex)
                                   : kept->request("GET", "/v1/payments", globex);
      if (r.status == 200) {
        ++answered_;
      } else {
        if (failed_++ == 0) first_failure_ = r.describe();
        kept = std::make_unique<HttpConnection>(port);
      }
    }
  }

  std::atomic<bool> stopping_{false};
  std::atomic<int> answered_{0};
  std::atomic<int> failed_{0};
  std::string first_failure_;
  std::thread thread_;
};

}  // namespace

TEST_CASE("reload: a rotated token file takes effect at SIGHUP, with requests answered throughout"
          * doctest::test_suite("driver-free")) {
  Daemon daemon(acme_token_from_file());
  const std::string token_file = daemon.dir() + "/secrets/acme.token";
  write_file(token_file, "acme-token-rotation-0\n");
  log_audit::register_secret("acme-token-rotation-0", "acme's first rotated token");
  daemon.start();
  const std::uint16_t port = daemon.port();
  INFO("payorchd log:\n" << daemon.log_tail());
  CHECK(status_as(port, "acme-token-rotation-0") == 200);

  RequestLoop loop(port);
  for (int i = 1; i <= 3; ++i) {
    const std::string old_token = "acme-token-rotation-" + std::to_string(i - 1);
    const std::string new_token = "acme-token-rotation-" + std::to_string(i);
    log_audit::register_secret(new_token, "acme's rotated token");
    write_file(token_file, new_token + "\n");
    CHECK(status_as(port, old_token) == 200);  // nothing changes before the signal
    const Reload r = sighup(daemon);
    REQUIRE_MESSAGE(r.reloaded, r.log);
    CHECK(r.log.find("tenant_tokens=2") != std::string::npos);
    CHECK(status_as(port, old_token) == 401);
    CHECK(status_as(port, new_token) == 200);
  }
  std::this_thread::sleep_for(100ms);
  loop.stop();
  CHECK_MESSAGE(loop.failed() == 0, loop.first_failure());
  CHECK(loop.answered() > 10);
  CHECK(daemon.running());
}

TEST_CASE("reload: a file that does not load keeps every running value and logs why"
          * doctest::test_suite("driver-free")) {
  Daemon daemon(acme_token_from_file());
  const std::string token_file = daemon.dir() + "/secrets/acme.token";
  write_file(token_file, "acme-token-kept-01\n");
  log_audit::register_secret("acme-token-kept-01", "acme's token");
  daemon.start();
  const std::uint16_t port = daemon.port();
  INFO("payorchd log:\n" << daemon.log_tail());
  const std::string config = read_file(daemon.config_path());

  // The token file is gone: the line that names it, and the running token still works.
  std::filesystem::remove(token_file);
  Reload r = sighup(daemon);
  CHECK_FALSE(r.reloaded);
  CHECK_MESSAGE(r.log.find("level=error event=config.reload_failed") != std::string::npos, r.log);
  CHECK_MESSAGE(r.log.find(daemon.config_path() + ":") != std::string::npos, r.log);
  CHECK_MESSAGE(r.log.find("tenants[0].token_file") != std::string::npos, r.log);
  CHECK(status_as(port, "acme-token-kept-01") == 200);

  // Not YAML at all.
  write_file(token_file, "acme-token-never-01\n");
  log_audit::register_secret("acme-token-never-01", "a token of a refused reload");
  write_file(daemon.config_path(), config + "\nserver: [\n");
  r = sighup(daemon);
  CHECK_FALSE(r.reloaded);
  CHECK_MESSAGE(r.log.find("YAML syntax error") != std::string::npos, r.log);
  CHECK(status_as(port, "acme-token-kept-01") == 200);
  CHECK(status_as(port, "acme-token-never-01") == 401);

  // Loads, with a setting that needs a restart: named, not applied; the token is.
  write_file(daemon.config_path(),
             config + "\nretention: {callback_inbox: 31d, delivered_events: 7d}\n");
  r = sighup(daemon);
  CHECK_MESSAGE(r.reloaded, r.log);
  CHECK_MESSAGE(r.log.find("level=warn event=config.reload_needs_restart") != std::string::npos, r.log);
  CHECK_MESSAGE(r.log.find("sections=retention") != std::string::npos, r.log);
  CHECK(status_as(port, "acme-token-kept-01") == 401);
  CHECK(status_as(port, "acme-token-never-01") == 200);
  CHECK(daemon.running());
}

namespace {

TlsClient::Request get_payments(std::string_view token) {
  TlsClient::Request req{boost::beast::http::verb::get, "/v1/payments", 11};
  req.set("Authorization", "Bearer " + std::string(token));
  return req;
}

}  // namespace

TEST_CASE("reload: a rotated certificate is used from the next handshake on; a bad one is refused"
          * doctest::test_suite("driver-free")) {
  const TestCert first = make_self_signed_cert("IP:127.0.0.1");
  const TestCert second = make_self_signed_cert("IP:127.0.0.1");
  DaemonConfig config;
  config.server = tls_server_section();
  Daemon daemon(config);
  write_tls_files(daemon.dir(), first.cert_pem, first.key_pem);
  daemon.start();
  const std::uint16_t port = daemon.port();
  INFO("payorchd log:\n" << daemon.log_tail());
  TlsClientOptions trust_first;
  trust_first.trusted_cert_pem = first.cert_pem;
  TlsClientOptions trust_second;
  trust_second.trusted_cert_pem = second.cert_pem;

  // A connection made before the rotation keeps its certificate and its session.
  TlsClient before(port, trust_first);
  REQUIRE_FALSE(before.connect_error().failed());
  REQUIRE_FALSE(before.handshake().failed());

  write_tls_files(daemon.dir(), second.cert_pem, second.key_pem);
  Reload r = sighup(daemon);
  REQUIRE_MESSAGE(r.reloaded, r.log);
  CHECK(r.log.find("tls=true") != std::string::npos);

  std::string error;
  const auto fresh = https_request(port, trust_second, get_payments(acme_token), error);
  REQUIRE_MESSAGE(fresh.has_value(), error);
  CHECK(fresh->result_int() == 200);
  CHECK_FALSE(https_request(port, trust_first, get_payments(acme_token), error).has_value());
  REQUIRE_FALSE(before.send(get_payments(acme_token)).failed());
  TlsClient::error_code ec;
  const auto kept = before.receive(ec);
  REQUIRE_MESSAGE(kept.has_value(), ec.message());
  CHECK(kept->result_int() == 200);

  // A certificate file that is not PEM: refused, the second certificate stays in use.
  write_file(daemon.dir() + "/tls/server.crt", "not a certificate\n");
  r = sighup(daemon);
  CHECK_FALSE(r.reloaded);
  CHECK_MESSAGE(r.log.find("server.tls.cert_file") != std::string::npos, r.log);
  const auto still = https_request(port, trust_second, get_payments(acme_token), error);
  REQUIRE_MESSAGE(still.has_value(), error);
  CHECK(still->result_int() == 200);
}

namespace {

// Whether the push of `operation_id`'s payment.created event arrived signed with `secret`.
bool pushed_signed_with(const WebhookReceiver& receiver, const std::string& payment_id,
                        const std::string& secret) {
  for (const ReceivedWebhook& r : receiver.received()) {
    if (r.body.find(payment_id) == std::string::npos) continue;
    const std::string sig = r.header("payorch-signature");
    const std::size_t comma = sig.find(",v1=");
    if (!sig.starts_with("t=") || comma == std::string::npos) return false;
    const std::int64_t t = std::stoll(sig.substr(2, comma - 2));
    return payorch::verify_timestamped(sig, r.body, secret, t, 0).result ==
           payorch::SignatureVerdict::Result::valid;
  }
  return false;
}

}  // namespace

TEST_CASE("reload: rotated webhook and vendor callback secrets sign and verify from the reload on"
          * doctest::test_suite("driver-free")) {
  const std::string webhook_old = "acme-webhook-secret-old";
  const std::string webhook_new = "acme-webhook-secret-new";
  const std::string callback_old = "sim-callback-secret-old";
  const std::string callback_new = "sim-callback-secret-new";
  for (const std::string* secret : {&webhook_old, &webhook_new, &callback_old, &callback_new})
    log_audit::register_secret(*secret, "a rotated webhook or callback secret");
  WebhookReceiver receiver;
  DaemonConfig config;
  config.tenants =
      "tenants:\n"
      "  - id: acme\n"
      "    token: \"acme-token-123\"\n"
      "    webhook: {url: \"" + receiver.url() + "\", secret_file: secrets/webhook.secret,"
      " initial_backoff: 100ms, max_backoff: 200ms}\n"
      "  - {id: globex, token: \"globex-token-123\"}";
  const std::string inline_callback = "callback: {secret: \"sim-callback-secret\",";
  REQUIRE(config.providers.find(inline_callback) != std::string::npos);
  config.providers.replace(config.providers.find(inline_callback), inline_callback.size(),
                           "callback: {secret_file: secrets/callback.secret,");
  Daemon daemon(config);
  write_file(daemon.dir() + "/secrets/webhook.secret", webhook_old + "\n");
  write_file(daemon.dir() + "/secrets/callback.secret", callback_old + "\n");
  daemon.start();
  const std::uint16_t port = daemon.port();
  INFO("payorchd log:\n" << daemon.log_tail());

  const HttpResponse first = post_payment(port, acme_token, PaymentRequest{.operation_id = "rot-1"});
  REQUIRE_MESSAGE(first.status == 201, first.describe());
  const std::string first_id = json_string(first.json(), "id");
  REQUIRE(eventually([&] { return pushed_signed_with(receiver, first_id, webhook_old); }, 10s));

  write_file(daemon.dir() + "/secrets/webhook.secret", webhook_new + "\n");
  write_file(daemon.dir() + "/secrets/callback.secret", callback_new + "\n");
  const Reload r = sighup(daemon);
  REQUIRE_MESSAGE(r.reloaded, r.log);

  const HttpResponse second = post_payment(port, acme_token, PaymentRequest{.operation_id = "rot-2"});
  REQUIRE_MESSAGE(second.status == 201, second.describe());
  const std::string second_id = json_string(second.json(), "id");
  CHECK(eventually([&] { return pushed_signed_with(receiver, second_id, webhook_new); }, 10s));
  CHECK_FALSE(pushed_signed_with(receiver, second_id, webhook_old));

  // The vendor's callbacks: the old secret no longer verifies, the new one does.
  const std::string callback =
      SimCallback::for_payment(first.json(), "evt_rotation_1", "succeeded").body();
  CHECK(is_problem(post_sim_callback(port, callback, callback_old), 401, "callback-signature-invalid"));
  const HttpResponse accepted = post_sim_callback(port, callback, callback_new);
  CHECK_MESSAGE(accepted.status == 200, accepted.describe());
}
