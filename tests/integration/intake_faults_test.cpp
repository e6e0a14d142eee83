// The three intake timelines of seeds/000 (before-commit, after-commit, conflict), against the
// real payorchd: a fault before COMMIT leaves nothing behind and the retry creates the payment
// once; a response lost after COMMIT is answered by a replay of the stored payment; the same
// key with other parameters is refused, audited, and changes nothing.
#include <doctest/doctest.h>

#include <csignal>

#include "support/daemon.h"
#include "support/http_client.h"
#include "support/payorch_api.h"
#include "support/database_probe.h"

using namespace payorch::test;
using namespace std::chrono_literals;

namespace {

std::int64_t payment_rows(DatabaseProbe& db, const std::string& operation_id) {
  return db.count("SELECT count(*) FROM payments WHERE tenant_id = 'acme' AND operation_id = ?1",
                  {operation_id});
}

std::int64_t created_events(DatabaseProbe& db, const std::string& payment_id) {
  return db.count("SELECT count(*) FROM outbox WHERE payment_id = ?1 AND type = 'payment.created'",
                  {payment_id});
}

// Nothing of the intake is anywhere: no payment, no event, and the API does not know the key.
void nothing_recorded(const Daemon& daemon, const PaymentRequest& req) {
  {
    DatabaseProbe db(daemon);
    CHECK(db.count("SELECT count(*) FROM payments") == 0);
    CHECK(db.count("SELECT count(*) FROM outbox") == 0);
  }
  CHECK(get_payment(daemon.port(), acme_token, req.operation_id).status == 404);
}

// The stored row's vendor-facing identity, to compare with what the API answers.
SqlRow stored_payment(DatabaseProbe& db, const std::string& operation_id) {
  auto rows = db.query(
      "SELECT id, client_key, request_digest, amount_minor, state FROM payments "
      "WHERE tenant_id = 'acme' AND operation_id = ?1",
      {operation_id});
  REQUIRE(rows.size() == 1);
  return rows.front();
}

void check_replay_of(const HttpResponse& replay, const PaymentRequest& req, const SqlRow& row) {
  REQUIRE_MESSAGE(replay.status == 200, replay.describe());
  CHECK(replay.header("Idempotent-Replayed") == "true");
  const auto view = replay.json();
  CHECK(view_mismatch(view, req) == "");
  CHECK(json_string(view, "id") == row.at("id").value_or(""));
  CHECK(json_string(view, "client_key") == row.at("client_key").value_or(""));
  CHECK(json_string(view, "request_digest") == row.at("request_digest").value_or(""));
}

}  // namespace

TEST_CASE(
    "intake before-commit: a storage error rolls everything back; the retry creates it once") {
  // Fault loop: fail the first N commits, for N = 1..3, then the N+1st attempt succeeds.
  for (int failures = 1; failures <= 3; ++failures) {
    CAPTURE(failures);
    Daemon daemon;
    daemon.set_env("PAYORCH_FAILPOINTS", "intake.before_commit=error:" + std::to_string(failures));
    daemon.start();
    INFO("payorchd log:\n" << daemon.log_tail());
    const PaymentRequest req{.operation_id = "op-before-commit", .amount_minor = 4200};

    for (int attempt = 1; attempt <= failures; ++attempt) {
      CAPTURE(attempt);
      const HttpResponse refused = post_payment(daemon.port(), acme_token, req);
      CHECK_MESSAGE(is_problem(refused, 503, "storage-unavailable"), refused.describe());
      nothing_recorded(daemon, req);
    }

    const HttpResponse created = post_payment(daemon.port(), acme_token, req);
    REQUIRE_MESSAGE(created.status == 201, created.describe());
    CHECK(created.header("Location") == "/v1/payments/op-before-commit");
    CHECK(created.header("Idempotent-Replayed") != "true");
    const auto view = created.json();
    CHECK(view_mismatch(view, req) == "");

    DatabaseProbe db(daemon);
    CHECK(db.count("SELECT count(*) FROM payments") == 1);
    const SqlRow row = stored_payment(db, req.operation_id);
    CHECK(json_string(view, "id") == row.at("id").value_or(""));
    CHECK(json_string(view, "client_key") == row.at("client_key").value_or(""));
    CHECK(db.count("SELECT count(*) FROM outbox") == 1);
    CHECK(created_events(db, json_string(view, "id")) == 1);

    check_replay_of(post_payment(daemon.port(), acme_token, req), req, row);
  }
}

TEST_CASE("intake before-commit: the daemon dies before COMMIT; after restart nothing is there") {
  Daemon daemon;
  daemon.set_env("PAYORCH_FAILPOINTS", "intake.before_commit=crash:1");
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail());
  const PaymentRequest req{.operation_id = "op-crash-before-commit", .amount_minor = 777};

  const HttpResponse lost = post_payment(daemon.port(), acme_token, req);
  CHECK_MESSAGE(lost.status == 0, "expected the connection to die, got " << lost.describe());
  const auto exit = daemon.wait_exit(5s);
  REQUIRE_MESSAGE(exit.has_value(), "payorchd did not die at intake.before_commit=crash");
  CHECK_MESSAGE(exit->signal == SIGKILL, exit->describe());

  daemon.set_env("PAYORCH_FAILPOINTS", std::nullopt);
  daemon.restart();
  nothing_recorded(daemon, req);

  const HttpResponse created = post_payment(daemon.port(), acme_token, req);
  REQUIRE_MESSAGE(created.status == 201, created.describe());
  CHECK(view_mismatch(created.json(), req) == "");
  DatabaseProbe db(daemon);
  CHECK(db.count("SELECT count(*) FROM payments") == 1);
  CHECK(created_events(db, json_string(created.json(), "id")) == 1);
}

TEST_CASE("intake after-commit: the client drops the connection; the retry is a replay") {
  Daemon daemon;
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail());
  const PaymentRequest req{.operation_id = "op-response-lost",
                           .amount_minor = 1999,
                           .currency = "USD",
                           .payee = "shop-7",
                           .source = "tok_ok"};

  // The client sends the intent and gives up at once: it never sees the 201.
  send_and_close(daemon.port(),
                 raw_request("POST", "/v1/payments", tenant_headers(acme_token), req.to_json()));
  HttpResponse found;
  const bool committed = eventually([&] {
    found = get_payment(daemon.port(), acme_token, req.operation_id);
    return found.status == 200;
  });
  REQUIRE_MESSAGE(committed, "the intake sent on a dropped connection never committed; last GET: "
                                 << found.describe());
  CHECK(view_mismatch(found.json(), req) == "");

  DatabaseProbe db(daemon);
  const SqlRow row = stored_payment(db, req.operation_id);
  CHECK(json_string(found.json(), "id") == row.at("id").value_or(""));
  CHECK(json_string(found.json(), "client_key") == row.at("client_key").value_or(""));

  // The client retries with the same key: the stored result, never a second payment.
  for (int i = 0; i < 3; ++i)
    check_replay_of(post_payment(daemon.port(), acme_token, req), req, row);
  CHECK(payment_rows(db, req.operation_id) == 1);
  CHECK(db.count("SELECT count(*) FROM payments") == 1);
  CHECK(created_events(db, row.at("id").value_or("")) == 1);
  CHECK(db.count("SELECT count(*) FROM outbox") == 1);
}

TEST_CASE(
    "intake after-commit: the daemon dies after COMMIT, before answering; the retry is a replay") {
  Daemon daemon;
  daemon.set_env("PAYORCH_FAILPOINTS", "intake.after_commit=crash:1");
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail());
  const PaymentRequest req{.operation_id = "op-crash-after-commit",
                           .amount_minor = 31337,
                           .payee = "merchant-9",
                           .source = "tok_pending"};

  const HttpResponse lost = post_payment(daemon.port(), acme_token, req);
  CHECK_MESSAGE(lost.status == 0, "expected no answer, got " << lost.describe());
  const auto exit = daemon.wait_exit(5s);
  REQUIRE_MESSAGE(exit.has_value(), "payorchd did not die at intake.after_commit=crash");
  CHECK_MESSAGE(exit->signal == SIGKILL, exit->describe());

  // Committed before the crash: the row, its client_key and its outbox event are durable.
  std::string payment_id;
  {
    DatabaseProbe db(daemon);
    REQUIRE(payment_rows(db, req.operation_id) == 1);
    payment_id = stored_payment(db, req.operation_id).at("id").value_or("");
    CHECK(created_events(db, payment_id) == 1);
  }

  daemon.set_env("PAYORCH_FAILPOINTS", std::nullopt);
  daemon.restart();
  DatabaseProbe db(daemon);
  const SqlRow row = stored_payment(db, req.operation_id);
  CHECK(row.at("id").value_or("") == payment_id);
  check_replay_of(post_payment(daemon.port(), acme_token, req), req, row);
  CHECK(db.count("SELECT count(*) FROM payments") == 1);
  CHECK(created_events(db, payment_id) == 1);
}

TEST_CASE(
    "intake conflict: the same key with another amount is refused, audited, and changes nothing") {
  Daemon daemon;
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail());
  const PaymentRequest original{.operation_id = "op-conflict", .amount_minor = 100};
  PaymentRequest other = original;
  other.amount_minor = 200;

  const HttpResponse created = post_payment(daemon.port(), acme_token, original);
  REQUIRE_MESSAGE(created.status == 201, created.describe());
  const std::string payment_id = json_string(created.json(), "id");
  const std::string stored_digest = json_string(created.json(), "request_digest");
  REQUIRE(stored_digest == original.expected_digest());
  REQUIRE(other.expected_digest() != stored_digest);

  const HttpResponse conflict = post_payment(daemon.port(), acme_token, other);
  CHECK_MESSAGE(is_problem(conflict, 422, "idempotency-key-reused"), conflict.describe());
  // The problem names both digests.
  CHECK_MESSAGE(conflict.body.find(stored_digest) != std::string::npos, conflict.body);
  CHECK_MESSAGE(conflict.body.find(other.expected_digest()) != std::string::npos, conflict.body);

  // The stored payment is untouched.
  const HttpResponse after = get_payment(daemon.port(), acme_token, original.operation_id);
  REQUIRE_MESSAGE(after.status == 200, after.describe());
  CHECK(view_mismatch(after.json(), original) == "");
  CHECK(json_string(after.json(), "id") == payment_id);
  CHECK(json_string(after.json(), "client_key") == json_string(created.json(), "client_key"));

  DatabaseProbe db(daemon);
  CHECK(db.count("SELECT count(*) FROM payments") == 1);
  const SqlRow row = stored_payment(db, original.operation_id);
  CHECK(row.at("amount_minor") == std::optional<std::string>("100"));
  CHECK(row.at("request_digest") == stored_digest);
  CHECK(db.count("SELECT count(*) FROM outbox") == 1);

  // The refused attempt is kept for audit.
  const auto audit = db.query(
      "SELECT tenant_id, operation_type, operation_id, payment_id, stored_digest, "
      "attempted_digest FROM idempotency_conflicts");
  REQUIRE(audit.size() == 1);
  CHECK(audit[0].at("tenant_id") == std::optional<std::string>("acme"));
  CHECK(audit[0].at("operation_type") == std::optional<std::string>("payment"));
  CHECK(audit[0].at("operation_id") == std::optional<std::string>(original.operation_id));
  CHECK(audit[0].at("payment_id") == payment_id);
  CHECK(audit[0].at("stored_digest") == stored_digest);
  CHECK(audit[0].at("attempted_digest") == other.expected_digest());

  // The original intent still replays; the conflict did not poison the key.
  check_replay_of(post_payment(daemon.port(), acme_token, original), original, row);
  // The same operation_id in another tenant's scope is another intent.
  const HttpResponse globex = post_payment(daemon.port(), globex_token, other);
  CHECK_MESSAGE(globex.status == 201, globex.describe());
  CHECK(json_string(globex.json(), "id") != payment_id);
}
