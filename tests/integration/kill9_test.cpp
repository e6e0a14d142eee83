// Invariant 3 (docs/contract.md §3): every intake that got a 2xx survives kill -9. Several clients stream
// distinct intents; the daemon is killed mid-stream; after a restart every acknowledged payment
// is there with exactly the fields it was acknowledged with, the file is intact, and no payment
// exists without its payment.created event (the outbox row is in the intake transaction).
#include <doctest/doctest.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "support/daemon.h"
#include "support/http_client.h"
#include "support/payorch_api.h"
#include "support/database_probe.h"

using namespace payorch::test;
using namespace std::chrono_literals;

namespace {

struct Acknowledged {
  PaymentRequest request;
  boost::json::value view;  // the 201 body
};

struct StreamResult {
  std::mutex mutex;
  std::map<std::string, PaymentRequest> sent;  // by operation_id: every intent put on the wire
  std::vector<Acknowledged> acknowledged;
  std::vector<std::string> unexpected;  // answers other than 201 before the kill
  std::atomic<int> acknowledged_count{0};
  std::atomic<int> busy{0};  // 503 storage-busy answers
};

// Posts distinct intents on one keep-alive connection until the daemon disappears.
void stream_intents(std::uint16_t port, int client, std::atomic<bool>& stop, StreamResult& out) {
  auto connection = std::make_unique<HttpConnection>(port, 5s);
  for (int i = 0; !stop.load(); ++i) {
    const PaymentRequest req{
        .operation_id = "kill9-" + std::to_string(client) + "-" + std::to_string(i),
        .amount_minor = 1 + client * 100000 + i,
        .currency = client % 2 == 0 ? "EUR" : "USD",
        .payee = "payee-" + std::to_string(client),
        .source = "tok_ok"};
    {
      std::lock_guard lock(out.mutex);
      out.sent.emplace(req.operation_id, req);
    }
    HttpResponse response = post_payment(*connection, acme_token, req);
    if (response.status == 201) {
      std::lock_guard lock(out.mutex);
      out.acknowledged.push_back({req, response.json()});
      ++out.acknowledged_count;
    } else if (response.status == 0) {
      return;  // killed (or the connection failed): this intent's fate is unknown
    } else if (is_problem(response, 503, "storage-busy")) {
      ++out.busy;  // allowed under load (docs/contract.md §2): the intent was not taken
    } else if (!stop.load()) {
      std::lock_guard lock(out.mutex);
      out.unexpected.push_back(response.describe());
    }
    if (!connection->is_open()) connection = std::make_unique<HttpConnection>(port, 5s);
  }
}

}  // namespace

TEST_CASE("kill -9 during a stream of intakes: every acknowledged payment survives intact") {
  constexpr int clients = 8;
  Daemon daemon;
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail());

  StreamResult result;
  std::atomic<bool> stop{false};
  std::vector<std::jthread> threads;
  for (int c = 0; c < clients; ++c)
    threads.emplace_back([&, c] { stream_intents(daemon.port(), c, stop, result); });

  // Kill while the stream is flowing: after plenty of acknowledgements, or 1.5 s at most.
  eventually([&] { return result.acknowledged_count.load() >= 1500; }, 1500ms);
  daemon.kill9();
  stop = true;
  threads.clear();  // joins; every client sees its connection die

  CHECK(result.unexpected.empty());
  for (const auto& u : result.unexpected) MESSAGE("unexpected answer: " << u);
  REQUIRE_MESSAGE(result.acknowledged.size() >= 10,
                  "too few intakes were acknowledged before the kill to test anything: "
                      << result.acknowledged.size());
  INFO(result.acknowledged.size() << " intakes acknowledged before kill -9, " << result.sent.size()
                                  << " sent, " << result.busy.load()
                                  << " answered 503 storage-busy");

  daemon.restart();
  auto connection = std::make_unique<HttpConnection>(daemon.port());
  int missing = 0, differing = 0;
  for (const Acknowledged& ack : result.acknowledged) {
    HttpResponse found =
        connection->request("GET", "/v1/payments/" + ack.request.operation_id,
                            {{"Authorization", std::string("Bearer ") + acme_token}});
    if (!connection->is_open()) connection = std::make_unique<HttpConnection>(daemon.port());
    if (found.status != 200) {
      if (++missing <= 5)
        FAIL_CHECK("acknowledged payment lost: " << ack.request.operation_id << ": "
                                                 << found.describe());
      continue;
    }
    const auto view = found.json();
    std::string diff = view_mismatch(view, ack.request, "");
    for (const char* field : {"id", "client_key", "request_digest", "created_at"})
      if (json_string(view, field) != json_string(ack.view, field))
        diff += std::string(field) + " differs from the 201 answer; ";
    if (!diff.empty() && ++differing <= 5) FAIL_CHECK(ack.request.operation_id << ": " << diff);
  }
  CHECK(missing == 0);
  CHECK(differing == 0);

  DatabaseProbe db(daemon);
  CHECK(db.integrity_check() == "ok");
  CHECK(db.count("SELECT count(*) FROM payments") >=
        static_cast<std::int64_t>(result.acknowledged.size()));
  // Invariant 6: the intake transaction wrote exactly one payment.created per payment.
  CHECK(db.count("SELECT count(*) FROM payments p WHERE NOT EXISTS (SELECT 1 FROM outbox o "
                 "WHERE o.payment_id = p.id AND o.type = 'payment.created')") == 0);
  CHECK(db.count("SELECT count(*) FROM (SELECT payment_id FROM outbox WHERE type = "
                 "'payment.created' GROUP BY payment_id HAVING count(*) > 1) AS repeated") == 0);
  CHECK(db.count("SELECT count(*) FROM outbox o WHERE NOT EXISTS "
                 "(SELECT 1 FROM payments p WHERE p.id = o.payment_id)") == 0);

  // Nothing was made up: every stored payment is one of the intents sent, with its values.
  int phantom = 0;
  for (const SqlRow& row : db.query("SELECT operation_id, amount_minor, currency, payee, source, "
                                    "tenant_id FROM payments")) {
    const auto it = result.sent.find(row.at("operation_id").value_or(""));
    const bool matches = it != result.sent.end() &&
                         row.at("amount_minor") == std::to_string(it->second.amount_minor) &&
                         row.at("currency") == it->second.currency &&
                         row.at("payee") == it->second.payee &&
                         row.at("source") == it->second.source && row.at("tenant_id") == "acme";
    if (!matches && ++phantom <= 5)
      FAIL_CHECK("stored payment matches no sent intent: " << row.at("operation_id").value_or("?"));
  }
  CHECK(phantom == 0);

  // The restarted daemon keeps taking intents.
  const PaymentRequest after{.operation_id = "after-kill9", .amount_minor = 1};
  const HttpResponse created = post_payment(daemon.port(), acme_token, after);
  CHECK_MESSAGE(created.status == 201, created.describe());
}
