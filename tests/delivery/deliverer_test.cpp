// Push delivery (src/delivery) against an in-process webhook receiver, on a real SQLite file
// with the real writer, with a manual clock: what is pushed, how it is signed, the order per
// payment, backoff measured on the clock, stop(), and the retention purges.
#include <doctest/doctest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/json/parse.hpp>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "delivery/deliverer.h"
#include "core/signature.h"
#include "store/database.h"
#include "store/outbox.h"
#include "store/payments.h"
#include "store/sqlite_store.h"
#include "support/daemon.h"
#include "support/store_fixture.h"
#include "support/webhook_receiver.h"

using namespace payorch;
using namespace std::chrono_literals;
using payorch::test::eventually;
using payorch::test::ReceivedWebhook;
using payorch::test::WebhookReceiver;

namespace {

constexpr const char* secret = "acme-webhook-secret";

// A migrated database, the writer and read pool on it, and an io_context on its own thread.
struct Fixture {
  Fixture() {
    writer = std::make_unique<store::Writer>(file.path(), store::WriterOptions{});
    writer->start();
    reads = std::make_unique<store::ReadPool>(file.path(), 2, Millis(1'000));
    store = std::make_unique<store::SqliteStore>(*writer, *reads);

    cfg.engine.poll_interval = 20ms;
    config::Webhook hook;
    hook.url = receiver.url();
    hook.secret = secret;
    hook.timeout = 2s;
    hook.initial_backoff = 100ms;
    hook.max_backoff = 400ms;
    cfg.tenants.push_back(config::Tenant{"acme", "acme-token-0001", hook});
    cfg.tenants.push_back(config::Tenant{"globex", "globex-token-01", std::nullopt});
    io_thread = std::thread([this] {
      auto guard = boost::asio::make_work_guard(ioc);
      ioc.run();
    });
  }
  ~Fixture() {
    // The deliverer's handlers run on io_thread and the writer's completions post to its
    // strand: both stop before it is destroyed (destroying it first raced with a running timer
    // handler that re-armed its timer).
    ioc.stop();
    io_thread.join();
    writer->stop();
    deliverer.reset();
    reads.reset();
  }

  delivery::Deliverer& start() {
    deliverer = std::make_unique<delivery::Deliverer>(
        delivery::Deliverer::Deps{cfg, *store, clock, rng, ioc, metrics});
    deliverer->start();
    return *deliverer;
  }

  Payment payment(const std::string& tenant, const std::string& name) {
    const Payment p = test::sample_payment(tenant, name, clock.now_ms());
    store::insert_payment(*file.db, p);
    return p;
  }
  std::string event(const Payment& p, EventType type) {
    return store::insert_outbox_event(*file.db, type, p, clock.now_ms(), ids_rng);
  }
  store::OutboxEvent row(const std::string& event_id) {
    auto e = store::find_event(*file.db, event_id);
    REQUIRE(e.has_value());
    return *e;
  }
  bool delivered(const std::string& event_id) { return row(event_id).delivered_at.has_value(); }

  test::TempDatabase file{"delivery", 1'000};  // first: outlives the writer and the reads
  std::unique_ptr<store::Writer> writer;
  std::unique_ptr<store::ReadPool> reads;
  std::unique_ptr<store::SqliteStore> store;
  WebhookReceiver receiver;
  config::Config cfg;
  ManualClock clock{1'700'000'000'000};
  SeededRandom rng{7};      // the deliverer's (jitter)
  SeededRandom ids_rng{8};  // the test's (event ids)
  Metrics metrics;
  boost::asio::io_context ioc;
  std::thread io_thread;
  std::unique_ptr<delivery::Deliverer> deliverer;
};

// "" when `r` carries a valid Payorch-Signature over its body for `t_expected`.
std::string signature_problem(const ReceivedWebhook& r, std::int64_t t_expected) {
  const std::string sig = r.header("payorch-signature");
  const std::string prefix = "t=" + std::to_string(t_expected) + ",v1=";
  if (!sig.starts_with(prefix)) return "unexpected signature header: " + sig;
  if (verify_timestamped(sig, r.body, secret, t_expected, 0).result != SignatureVerdict::Result::valid)
    return "bad v1: " + sig;
  return "";
}

}  // namespace

TEST_CASE("webhook_backoff: doubles from initial, capped, jitter takes at most 20 %") {
  using delivery::webhook_backoff;
  CHECK(webhook_backoff(1, 1s, 5min, 0.0) == 1s);
  CHECK(webhook_backoff(2, 1s, 5min, 0.0) == 2s);
  CHECK(webhook_backoff(5, 1s, 5min, 0.0) == 16s);
  CHECK(webhook_backoff(9, 1s, 5min, 0.0) == 256s);
  CHECK(webhook_backoff(10, 1s, 5min, 0.0) == 5min);
  CHECK(webhook_backoff(1'000'000, 1s, 5min, 0.0) == 5min);
  CHECK(webhook_backoff(0, 1s, 5min, 0.0) == 1s);
  CHECK(webhook_backoff(1, 1s, 5min, 0.5) == 900ms);
  CHECK(webhook_backoff(1, 1s, 5min, 0.999) > 800ms);
  CHECK(webhook_backoff(10, 1s, 5min, 0.999) >= 4min);
}

TEST_CASE("deliverer: every event pushed once, signed, byte for byte, in order per payment") {
  Fixture f;
  std::map<std::string, std::vector<std::string>> by_payment;  // payment -> event ids in order
  for (const std::string name : {"a", "b", "c"}) {
    const Payment p = f.payment("acme", name);
    by_payment[p.id].push_back(f.event(p, EventType::created));
    by_payment[p.id].push_back(f.event(p, EventType::succeeded));
  }
  const std::string globex_event = f.event(f.payment("globex", "g"), EventType::created);

  f.start();
  REQUIRE(f.receiver.wait_until([](const auto& r) { return r.size() >= 6; }));
  for (const auto& [payment, ids] : by_payment)
    for (const auto& id : ids) CHECK(eventually([&] { return f.delivered(id); }));
  // Nothing more: no repeats, and the tenant without a webhook is never pushed.
  for (int i = 0; i < 5; ++i) f.deliverer->poke();
  CHECK_FALSE(eventually([&] { return f.receiver.count() > 6; }, 200ms));
  CHECK_FALSE(f.delivered(globex_event));

  const auto received = f.receiver.received();
  REQUIRE(received.size() == 6);
  std::map<std::string, std::size_t> arrival;  // event id -> index
  for (std::size_t i = 0; i < received.size(); ++i) {
    const ReceivedWebhook& r = received[i];
    const std::string id = r.header("payorch-event-id");
    CAPTURE(id);
    const store::OutboxEvent e = f.row(id);
    CHECK(r.method == "POST");
    CHECK(r.target == "/hooks/payorch");
    CHECK(r.header("content-type") == "application/json");
    CHECK(r.header("payorch-event-type") == e.type);
    CHECK(r.body == e.payload);
    CHECK(boost::json::parse(r.body).at("id").as_string() == id);
    CHECK(signature_problem(r, f.clock.now_ms() / 1000) == "");
    CHECK(e.attempts == 1);
    CHECK(e.delivered_at == f.clock.now_ms());
    CHECK(arrival.emplace(id, i).second);
  }
  for (const auto& [payment, ids] : by_payment) CHECK(arrival.at(ids[0]) < arrival.at(ids[1]));
  CHECK(f.metrics.value("payorch_webhook_deliveries_total", {{"result", "delivered"}}) == 6);
  CHECK(f.metrics.value("payorch_webhook_deliveries_total", {{"result", "failed"}}) == 0);
}

TEST_CASE("deliverer: a failed push waits out its backoff on the clock, then is retried") {
  Fixture f;
  const Payment p = f.payment("acme", "a");
  const std::string created = f.event(p, EventType::created);
  const std::string succeeded = f.event(p, EventType::succeeded);
  f.receiver.fail_next(2, 503);
  f.start();

  // Attempt 1: 503. Retry after 100 ms less up to 20 % jitter, measured on the clock.
  REQUIRE(eventually([&] { return f.row(created).attempts == 1; }));
  store::OutboxEvent e = f.row(created);
  CHECK(e.last_error == "HTTP 503");
  REQUIRE(e.next_attempt_at.has_value());
  CHECK(*e.next_attempt_at - f.clock.now_ms() >= 80);
  CHECK(*e.next_attempt_at - f.clock.now_ms() <= 100);
  // The clock has not moved: nothing is due, whatever the pokes (the later event waits too).
  f.deliverer->poke();
  CHECK_FALSE(eventually([&] { return f.receiver.count() > 1; }, 150ms));

  // Attempt 2: 503 again, backoff doubled.
  f.clock.advance(100ms);
  f.deliverer->poke();
  REQUIRE(eventually([&] { return f.row(created).attempts == 2; }));
  e = f.row(created);
  CHECK(*e.next_attempt_at - f.clock.now_ms() >= 160);
  CHECK(*e.next_attempt_at - f.clock.now_ms() <= 200);

  // Attempt 3: delivered; then the payment's next event goes.
  f.clock.advance(200ms);
  f.deliverer->poke();
  REQUIRE(eventually([&] { return f.delivered(succeeded); }));
  e = f.row(created);
  CHECK(e.attempts == 3);
  CHECK(e.delivered_at == f.clock.now_ms());
  CHECK_FALSE(e.last_error.has_value());
  const auto received = f.receiver.received();
  REQUIRE(received.size() == 4);
  for (std::size_t i = 0; i < 3; ++i) CHECK(received[i].header("payorch-event-id") == created);
  CHECK(received[3].header("payorch-event-id") == succeeded);
  CHECK(f.metrics.value("payorch_webhook_deliveries_total", {{"result", "failed"}}) == 2);
  CHECK(f.metrics.value("payorch_webhook_deliveries_total", {{"result", "delivered"}}) == 2);
}

TEST_CASE("deliverer: a receiver that is down is retried until it is back on the same port") {
  Fixture f;
  f.receiver.go_down();
  const std::string created = f.event(f.payment("acme", "a"), EventType::created);
  f.start();
  REQUIRE(eventually([&] { return f.row(created).attempts == 1; }));
  CHECK(f.row(created).last_error.value_or("").starts_with("not_sent:"));
  CHECK(f.receiver.count() == 0);

  f.receiver.come_back();
  f.clock.advance(1s);
  f.deliverer->poke();
  REQUIRE(eventually([&] { return f.delivered(created); }));
  CHECK(f.row(created).attempts == 2);
  CHECK(f.receiver.count() == 1);
}

TEST_CASE("deliverer: stop() waits for the pushes in flight and records them; then pushes nothing") {
  Fixture f;
  f.receiver.delay_answers(300ms);
  const Payment p = f.payment("acme", "a");
  const std::string created = f.event(p, EventType::created);
  f.start();
  REQUIRE(f.receiver.wait_until([](const auto& r) { return r.size() == 1; }));
  CHECK(f.deliverer->in_flight() == 1);

  std::promise<void> stopped;
  f.deliverer->stop([&] { stopped.set_value(); });
  auto done = stopped.get_future();
  REQUIRE(done.wait_for(5s) == std::future_status::ready);
  // Its result was committed before stop() finished.
  CHECK(f.delivered(created));
  CHECK(f.deliverer->in_flight() == 0);

  f.event(p, EventType::succeeded);
  f.deliverer->poke();
  CHECK_FALSE(eventually([&] { return f.receiver.count() > 1; }, 150ms));
}

TEST_CASE("deliverer: pushes in flight are bounded, per tenant too, so one backlog holds up no other") {
  Fixture f;
  f.cfg.tenants[1].webhook = f.cfg.tenants[0].webhook;  // globex pushes to the same receiver
  f.receiver.delay_answers(400ms);
  for (int i = 0; i < 12; ++i) f.event(f.payment("acme", "a" + std::to_string(i)), EventType::created);
  const std::string globex = f.event(f.payment("globex", "g"), EventType::created);
  f.start();

  // acme's 12 due events take its 8 slots; globex's one goes out beside them.
  REQUIRE(f.receiver.wait_until([](const auto& r) { return r.size() >= 9; }));
  CHECK_FALSE(eventually([&] { return f.receiver.count() > 9; }, 100ms));
  std::map<std::string, int> by_tenant;
  for (const auto& r : f.receiver.received())
    ++by_tenant[f.row(r.header("payorch-event-id")).tenant_id];
  CHECK(by_tenant["acme"] == 8);
  CHECK(by_tenant["globex"] == 1);
  CHECK(f.deliverer->in_flight() == 9);
  // The rest follow as slots free up.
  REQUIRE(f.receiver.wait_until([](const auto& r) { return r.size() == 13; }));
  CHECK(eventually([&] { return f.deliverer->in_flight() == 0; }));
  CHECK(f.delivered(globex));
}

TEST_CASE("retention: windows measured back from the clock, purged in batches, metrics counted") {
  Fixture f;
  f.cfg.retention.callback_inbox = std::chrono::hours(24);
  f.cfg.retention.delivered_events = std::chrono::hours(1);
  const Payment p = f.payment("acme", "a");
  std::vector<std::string> old_ids;
  {
    store::Transaction tx(*f.file.db);
    for (int i = 0; i < 1'100; ++i) {
      old_ids.push_back(f.event(p, EventType::processing));
      store::mark_delivered(*f.file.db, old_ids.back(), f.clock.now_ms());
    }
    for (int i = 0; i < 600; ++i)
      f.file.db->prepare(
             "INSERT INTO callback_inbox (provider, event_id, received_at, payload, result)"
             " VALUES ('sim', ?, ?, '{}', 'applied')")
          .bind(1, "evt_vendor_" + std::to_string(i))
          .bind(2, f.clock.now_ms())
          .run();
    tx.commit();
  }
  const std::string undelivered = f.event(p, EventType::unknown);

  delivery::Retention retention(f.cfg, *f.store, f.clock, f.ioc, f.metrics);
  auto run = [&] {
    std::promise<std::pair<int, int>> result;
    retention.run_once([&](int inbox, int events) { result.set_value({inbox, events}); });
    auto fut = result.get_future();
    REQUIRE(fut.wait_for(10s) == std::future_status::ready);
    return fut.get();
  };

  // Nothing is old enough yet.
  CHECK(run() == std::pair{0, 0});
  // Past the events' window, inside the inbox's.
  f.clock.advance(std::chrono::hours(1) + 1ms);
  const std::uint64_t transactions = f.writer->transactions();
  CHECK(run() == std::pair{0, 1'100});
  CHECK(f.writer->transactions() - transactions >= 3);  // 500 + 500 + 100, one job each
  for (const auto& id : {old_ids.front(), old_ids.back()})
    CHECK_FALSE(store::find_event(*f.file.db, id).has_value());
  CHECK(store::find_event(*f.file.db, undelivered).has_value());
  // Past the inbox's window too.
  f.clock.advance(std::chrono::hours(23));
  CHECK(run() == std::pair{600, 0});
  CHECK(store::find_event(*f.file.db, undelivered).has_value());
  CHECK(store::find_payment_by_id(*f.file.db, p.id).has_value());
  CHECK(f.metrics.value("payorch_retention_purged_total", {{"table", "outbox"}}) == 1'100);
  CHECK(f.metrics.value("payorch_retention_purged_total", {{"table", "callback_inbox"}}) == 600);
}
