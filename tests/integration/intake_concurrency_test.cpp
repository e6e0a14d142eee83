// Many clients send the same intent at the same instant: the database's unique constraint
// decides, so exactly one request creates the payment and every other one is a replay of it —
// never a second row, never a "duplicate" that is really a busy database.
#include <doctest/doctest.h>

#include <functional>
#include <latch>
#include <map>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "support/daemon.h"
#include "support/http_client.h"
#include "support/payorch_api.h"
#include "support/database_probe.h"

using namespace payorch::test;

namespace {

// `clients` connections to payorchd, all open before any request: then `request(i)` is posted
// on connection i, every client released at the same instant. The answers, by client.
std::vector<HttpResponse> post_together(const Daemon& daemon, int clients,
                                        const std::function<PaymentRequest(int)>& request) {
  std::vector<std::unique_ptr<HttpConnection>> connections;
  for (int i = 0; i < clients; ++i) {
    connections.push_back(std::make_unique<HttpConnection>(daemon.port()));
    REQUIRE_MESSAGE(connections.back()->is_open(), connections.back()->connect_error());
  }
  std::vector<HttpResponse> responses(clients);
  std::latch go(clients);
  {
    std::vector<std::jthread> threads;
    for (int i = 0; i < clients; ++i)
      threads.emplace_back([&, i] {
        const PaymentRequest req = request(i);
        go.arrive_and_wait();
        responses[i] = post_payment(*connections[i], acme_token, req);
      });
  }
  return responses;
}

}  // namespace

TEST_CASE("intake concurrency: 64 simultaneous POSTs of one key make one payment") {
  constexpr int clients = 64;
  Daemon daemon;
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail());
  const PaymentRequest req{.operation_id = "op-stampede", .amount_minor = 5000};

  const std::vector<HttpResponse> responses = post_together(daemon, clients, [&](int) { return req; });

  std::map<unsigned, int> by_status;
  std::set<std::string> ids, client_keys;
  int replays = 0;
  for (const HttpResponse& r : responses) {
    ++by_status[r.status];
    if (r.status != 200 && r.status != 201) {
      FAIL_CHECK("unexpected answer: " << r.describe());
      continue;
    }
    const auto view = r.json();
    CHECK(view_mismatch(view, req) == "");
    ids.insert(json_string(view, "id"));
    client_keys.insert(json_string(view, "client_key"));
    if (r.status == 200) {
      if (r.header("Idempotent-Replayed") == "true") ++replays;
    } else {
      CHECK(r.header("Idempotent-Replayed") != "true");
    }
  }
  CHECK(by_status[201] == 1);
  CHECK(by_status[200] == clients - 1);
  CHECK(replays == clients - 1);
  CHECK(ids.size() == 1);
  CHECK(client_keys.size() == 1);

  DatabaseProbe db(daemon);
  CHECK(db.count("SELECT count(*) FROM payments") == 1);
  CHECK(db.count("SELECT count(*) FROM outbox WHERE type = 'payment.created'") == 1);
  CHECK(db.count("SELECT count(*) FROM outbox") == 1);
  CHECK(db.count("SELECT count(*) FROM idempotency_conflicts") == 0);
}

TEST_CASE("intake concurrency: simultaneous POSTs of distinct keys all commit once") {
  constexpr int clients = 32;
  Daemon daemon;
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail());

  const auto request = [](int i) {
    return PaymentRequest{.operation_id = "op-burst-" + std::to_string(i), .amount_minor = 100 + i};
  };
  const std::vector<HttpResponse> responses = post_together(daemon, clients, request);
  std::set<std::string> ids;
  for (int i = 0; i < clients; ++i) {
    CHECK_MESSAGE(responses[i].status == 201, responses[i].describe());
    if (responses[i].status != 201) continue;
    CHECK(view_mismatch(responses[i].json(), request(i)) == "");
    ids.insert(json_string(responses[i].json(), "id"));
  }
  CHECK(ids.size() == clients);
  DatabaseProbe db(daemon);
  CHECK(db.count("SELECT count(*) FROM payments") == clients);
  CHECK(db.count("SELECT count(DISTINCT client_key) FROM payments") == clients);
  CHECK(db.count("SELECT count(*) FROM outbox WHERE type = 'payment.created'") == clients);
}
