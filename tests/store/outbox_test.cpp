// The outbox queries (store/outbox.h) on a real, migrated SQLite file: the tenant feed, the
// push queue's per-payment order, delivery bookkeeping and the retention purges.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "store/database.h"
#include "store/outbox.h"
#include "store/payments.h"
#include "support/store_fixture.h"

using namespace payorch;
using namespace payorch::store;

namespace {

struct OutboxDb : test::TempDatabase {
  OutboxDb() : TempDatabase("outbox", 1'000) {}

  // A payment of `tenant` with no events yet.
  Payment payment(const std::string& tenant, const std::string& name) {
    const Payment p = test::sample_payment(tenant, name, now);
    insert_payment(*db, p);
    return p;
  }
  std::string event(const Payment& p, EventType type) {
    return insert_outbox_event(*db, type, p, now, rng);
  }
  std::vector<std::string> due_ids(const std::vector<std::string>& tenants, int limit = 100,
                                   const std::vector<std::string>& exclude = {}) {
    std::vector<std::string> ids;
    for (const auto& e : due_deliveries(*db, tenants, now, limit, exclude)) ids.push_back(e.event_id);
    return ids;
  }
  void inbox_row(const std::string& event_id, UnixMillis received_at) {
    db->prepare(
          "INSERT INTO callback_inbox (provider, event_id, received_at, payload, result)"
          " VALUES ('sim', ?, ?, '{}', 'applied')")
        .bind(1, event_id)
        .bind(2, received_at)
        .run();
  }
  std::int64_t count(const std::string& sql) {
    auto st = db->prepare(sql);
    st.step();
    return st.col_int(0);
  }

  UnixMillis now = 1'700'000'000'000;
  SeededRandom rng{42};
};

}  // namespace

TEST_CASE("outbox: each tenant's feed in order, paged by seq") {
  OutboxDb t;
  const Payment a = t.payment("acme", "a");
  const Payment g = t.payment("globex", "g");
  const std::string a1 = t.event(a, EventType::created);
  t.event(g, EventType::created);
  const std::string a2 = t.event(a, EventType::succeeded);
  const std::string a3 = t.event(a, EventType::corrected);

  EventPage first = list_events(*t.db, "acme", 0, 2);
  REQUIRE(first.events.size() == 2);
  CHECK(first.events[0].event_id == a1);
  CHECK(first.events[1].event_id == a2);
  CHECK(first.events[0].type == "payment.created");
  CHECK(first.events[0].tenant_id == "acme");
  CHECK(first.events[0].payment_id == a.id);
  CHECK(first.events[0].payload.find(a1) != std::string::npos);
  REQUIRE(first.next_cursor.has_value());
  CHECK(*first.next_cursor == first.events[1].seq);

  EventPage second = list_events(*t.db, "acme", *first.next_cursor, 2);
  REQUIRE(second.events.size() == 1);
  CHECK(second.events[0].event_id == a3);
  EventPage empty = list_events(*t.db, "acme", second.events[0].seq, 2);
  CHECK(empty.events.empty());
  CHECK_FALSE(empty.next_cursor.has_value());

  CHECK(list_events(*t.db, "globex", 0, 10).events.size() == 1);
  CHECK(list_events(*t.db, "initech", 0, 10).events.empty());

  auto found = find_event(*t.db, a2);
  REQUIRE(found.has_value());
  CHECK(found->type == "payment.succeeded");
  CHECK(found->attempts == 0);
  CHECK_FALSE(found->delivered_at.has_value());
  CHECK(found->next_attempt_at == t.now);
  CHECK_FALSE(find_event(*t.db, "evt_missing").has_value());

  const auto of_a = events_of_payment(*t.db, a.id);
  REQUIRE(of_a.size() == 3);
  CHECK(of_a[0].event_id == a1);
  CHECK(of_a[2].event_id == a3);
}

TEST_CASE("outbox: a payment's events are due one at a time, in order") {
  OutboxDb t;
  const Payment a = t.payment("acme", "a");
  const Payment b = t.payment("acme", "b");
  const std::string a1 = t.event(a, EventType::created);
  const std::string b1 = t.event(b, EventType::created);
  const std::string a2 = t.event(a, EventType::succeeded);
  const std::string b2 = t.event(b, EventType::failed);

  // Only the oldest undelivered event of each payment, oldest first.
  CHECK(t.due_ids({"acme"}) == std::vector<std::string>{a1, b1});
  CHECK(t.due_ids({"acme"}, 1) == std::vector<std::string>{a1});

  // a1 fails: a2 still waits behind it, also while a1 backs off.
  CHECK(mark_delivery_failed(*t.db, a1, "HTTP 500", t.now + 1'000));
  CHECK(t.due_ids({"acme"}) == std::vector<std::string>{b1});
  t.now += 1'000;
  CHECK(t.due_ids({"acme"}) == std::vector<std::string>{a1, b1});

  // Delivered: the next event of that payment becomes due; a1 never again.
  CHECK(mark_delivered(*t.db, a1, t.now));
  CHECK(t.due_ids({"acme"}) == std::vector<std::string>{b1, a2});
  CHECK(mark_delivered(*t.db, b1, t.now));
  CHECK(mark_delivered(*t.db, a2, t.now));
  CHECK(t.due_ids({"acme"}) == std::vector<std::string>{b2});
  CHECK(mark_delivered(*t.db, b2, t.now));
  CHECK(t.due_ids({"acme"}).empty());
}

TEST_CASE("outbox: in-flight pushes hold back their payment's later events") {
  OutboxDb t;
  const Payment a = t.payment("acme", "a");
  const Payment b = t.payment("acme", "b");
  const std::string a1 = t.event(a, EventType::created);
  const std::string b1 = t.event(b, EventType::created);
  t.event(a, EventType::succeeded);

  CHECK(t.due_ids({"acme"}, 100, {a1}) == std::vector<std::string>{b1});
  CHECK(t.due_ids({"acme"}, 100, {a1, b1}).empty());
  // a1 delivered while its id is still listed as in flight: a2 waits until it is not.
  CHECK(mark_delivered(*t.db, a1, t.now));
  CHECK(t.due_ids({"acme"}, 100, {a1, b1}).empty());
  CHECK(t.due_ids({"acme"}, 100, {b1}).size() == 1);
}

TEST_CASE("outbox: only the given tenants' events are due, counted and scheduled") {
  OutboxDb t;
  const Payment a = t.payment("acme", "a");
  const Payment g = t.payment("globex", "g");
  const std::string a1 = t.event(a, EventType::created);
  t.now += 10;
  const std::string g1 = t.event(g, EventType::created);
  t.event(g, EventType::succeeded);

  CHECK(t.due_ids({}).empty());
  CHECK(t.due_ids({"acme"}) == std::vector<std::string>{a1});
  CHECK(t.due_ids({"globex"}) == std::vector<std::string>{g1});
  CHECK(t.due_ids({"acme", "globex"}) == std::vector<std::string>{a1, g1});
  CHECK(t.due_ids({"acme"}, 0).empty());

  OutboxBacklog none = outbox_backlog(*t.db, {});
  CHECK(none.pending == 0);
  CHECK_FALSE(none.oldest_pending_at.has_value());
  OutboxBacklog globex = outbox_backlog(*t.db, {"globex"});
  CHECK(globex.pending == 2);
  CHECK(globex.oldest_pending_at == t.now);
  OutboxBacklog both = outbox_backlog(*t.db, {"acme", "globex"});
  CHECK(both.pending == 3);
  CHECK(both.oldest_pending_at == t.now - 10);

  CHECK_FALSE(next_delivery_at(*t.db, {}).has_value());
  CHECK(next_delivery_at(*t.db, {"acme"}) == t.now - 10);
  CHECK(mark_delivery_failed(*t.db, a1, "not_sent: connection refused", t.now + 5'000));
  CHECK(next_delivery_at(*t.db, {"acme"}) == t.now + 5'000);
  CHECK(next_delivery_at(*t.db, {"acme", "globex"}) == t.now);
  CHECK(mark_delivered(*t.db, a1, t.now));
  CHECK_FALSE(next_delivery_at(*t.db, {"acme"}).has_value());
  CHECK(outbox_backlog(*t.db, {"acme"}).pending == 0);
}

TEST_CASE("outbox: attempts, errors and delivery are recorded once") {
  OutboxDb t;
  const Payment a = t.payment("acme", "a");
  const std::string a1 = t.event(a, EventType::created);

  CHECK(mark_delivery_failed(*t.db, a1, "HTTP 503", t.now + 100));
  CHECK(mark_delivery_failed(*t.db, a1, "sent_no_answer: timeout", t.now + 300));
  auto e = find_event(*t.db, a1);
  REQUIRE(e.has_value());
  CHECK(e->attempts == 2);
  CHECK(e->last_error == "sent_no_answer: timeout");
  CHECK(e->next_attempt_at == t.now + 300);
  CHECK_FALSE(e->delivered_at.has_value());

  CHECK(mark_delivered(*t.db, a1, t.now + 400));
  e = find_event(*t.db, a1);
  CHECK(e->attempts == 3);
  CHECK(e->delivered_at == t.now + 400);
  CHECK_FALSE(e->last_error.has_value());

  // Already delivered (a repeated 2xx, a late failure): nothing changes.
  CHECK_FALSE(mark_delivered(*t.db, a1, t.now + 500));
  CHECK_FALSE(mark_delivery_failed(*t.db, a1, "HTTP 500", t.now + 600));
  e = find_event(*t.db, a1);
  CHECK(e->attempts == 3);
  CHECK(e->delivered_at == t.now + 400);
  CHECK_FALSE(e->last_error.has_value());

  CHECK_FALSE(mark_delivered(*t.db, "evt_missing", t.now));
  CHECK_FALSE(mark_delivery_failed(*t.db, "evt_missing", "HTTP 500", t.now));
}

TEST_CASE("retention: purges delete old delivered events and inbox rows in batches, nothing else") {
  OutboxDb t;
  const Payment a = t.payment("acme", "a");
  std::vector<std::string> old_delivered;
  for (int i = 0; i < 5; ++i) {
    old_delivered.push_back(t.event(a, EventType::processing));
    CHECK(mark_delivered(*t.db, old_delivered.back(), t.now + i));
  }
  const std::string undelivered_old = t.event(a, EventType::unknown);
  const std::string recent = t.event(a, EventType::succeeded);
  CHECK(mark_delivered(*t.db, recent, t.now + 10'000));
  for (int i = 0; i < 5; ++i) t.inbox_row("evt_old_" + std::to_string(i), t.now + i);
  t.inbox_row("evt_recent", t.now + 10'000);

  const UnixMillis before = t.now + 5'000;
  CHECK(purge_delivered_events(*t.db, before, 2) == 2);
  CHECK(purge_delivered_events(*t.db, before, 2) == 2);
  CHECK(purge_delivered_events(*t.db, before, 2) == 1);
  CHECK(purge_delivered_events(*t.db, before, 2) == 0);
  for (const auto& id : old_delivered) CHECK_FALSE(find_event(*t.db, id).has_value());
  CHECK(find_event(*t.db, undelivered_old).has_value());
  CHECK(find_event(*t.db, recent).has_value());
  // Long after, every delivered event may go; the undelivered one stays.
  CHECK(purge_delivered_events(*t.db, t.now + 1'000'000, 500) == 1);
  CHECK(find_event(*t.db, undelivered_old).has_value());

  CHECK(purge_callback_inbox(*t.db, before, 3) == 3);
  CHECK(purge_callback_inbox(*t.db, before, 3) == 2);
  CHECK(purge_callback_inbox(*t.db, before, 3) == 0);
  CHECK(t.count("SELECT COUNT(*) FROM callback_inbox") == 1);
  CHECK(t.count("SELECT COUNT(*) FROM payments") == 1);
}

TEST_CASE("outbox: the push queue and the purges run on indexes") {
  OutboxDb t;
  auto plan = [&](const std::string& sql) {
    std::string out;
    auto st = t.db->prepare("EXPLAIN QUERY PLAN " + sql);
    while (st.step()) out += st.col_text(3) + "\n";
    return out;
  };
  // The shapes outbox.cpp uses (its statements are internal; these mirror them).
  const std::string due = plan(
      "SELECT seq FROM outbox o WHERE o.delivered_at IS NULL AND o.next_attempt_at <= 1"
      " AND o.tenant_id IN ('acme') AND NOT EXISTS (SELECT 1 FROM outbox e WHERE"
      " e.payment_id = o.payment_id AND e.seq < o.seq AND e.delivered_at IS NULL)"
      " ORDER BY o.seq LIMIT 16");
  CAPTURE(due);
  CHECK(due.find("USING INDEX outbox_due (tenant_id=? AND next_attempt_at<?)") != std::string::npos);
  CHECK(due.find("outbox_by_payment") != std::string::npos);
  const std::string purge = plan(
      "SELECT seq FROM outbox WHERE delivered_at IS NOT NULL AND delivered_at < 1 LIMIT 500");
  CAPTURE(purge);
  CHECK(purge.find("outbox_delivered") != std::string::npos);
  const std::string inbox = plan("SELECT rowid FROM callback_inbox WHERE received_at < 1 LIMIT 500");
  CAPTURE(inbox);
  CHECK(inbox.find("callback_inbox_by_received") != std::string::npos);
}
