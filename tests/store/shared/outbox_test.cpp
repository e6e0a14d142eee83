// The outbox and retention through store::Tx, on each driver (store/outbox.h): the tenant's
// feed in seq order with its cursor, the push queue (due, per payment in order, in-flight
// pushes skipped), delivery marks, the backlog, and the purges that touch only what they may.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "support/store_fixture.h"
#include "support/store_under_test.h"

namespace payorch::test {
namespace {

using store::OutboxEvent;
using store::Tx;
using store::WriteStatus;

constexpr UnixMillis t0 = 1'700'000'000'000;

// Payments created at t0, t0+1, ... for acme (op-0, op-1, ...) and one for globex at t0+10;
// returns acme's payment ids in creation order.
std::vector<std::string> created_payments(StoreUnderTest& s, int n) {
  SeededRandom rng(5);
  std::vector<std::string> ids;
  for (int i = 0; i < n; ++i) {
    const JobResult r = s.run([&](Tx& tx) {
      ids.push_back(tx.record_intake(intake_request("op-" + std::to_string(i)), t0 + i, rng).payment.id);
    });
    REQUIRE(r.status == WriteStatus::committed);
  }
  store::IntakeRequest other = intake_request("op-0");
  other.tenant_id = "globex";
  REQUIRE(s.run([&](Tx& tx) { tx.record_intake(other, t0 + 10, rng); }).status == WriteStatus::committed);
  return ids;
}

std::vector<std::string> payment_ids(const std::vector<OutboxEvent>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) out.push_back(e.payment_id);
  return out;
}

}  // namespace

TEST_CASE_TEMPLATE("shared store: list_events pages a tenant's feed in seq order", D, PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  const auto ids = created_payments(*s, 3);

  const auto first = s->read([](Tx& tx) { return tx.list_events("acme", 0, 2); });
  REQUIRE(first.events.size() == 2);
  CHECK(payment_ids(first.events) == std::vector<std::string>{ids[0], ids[1]});
  CHECK(first.events[0].seq < first.events[1].seq);
  REQUIRE(first.next_cursor.has_value());
  CHECK(*first.next_cursor == first.events.back().seq);
  const OutboxEvent& e = first.events[0];
  CHECK(e.tenant_id == "acme");
  CHECK(e.type == "payment.created");
  CHECK(e.created_at == t0);
  CHECK(e.next_attempt_at == t0);
  CHECK(e.attempts == 0);
  CHECK_FALSE(e.delivered_at.has_value());
  CHECK(e.payload.find(e.event_id) != std::string::npos);

  const auto second = s->read([&](Tx& tx) { return tx.list_events("acme", *first.next_cursor, 2); });
  CHECK(payment_ids(second.events) == std::vector<std::string>{ids[2]});
  REQUIRE(second.next_cursor);
  const auto after_last = s->read([&](Tx& tx) { return tx.list_events("acme", *second.next_cursor, 2); });
  CHECK(after_last.events.empty());
  CHECK_FALSE(after_last.next_cursor.has_value());
  CHECK(s->read([](Tx& tx) { return tx.list_events("globex", 0, 10); }).events.size() == 1);

  const auto found = s->read([&](Tx& tx) { return tx.find_event(e.event_id); });
  REQUIRE(found.has_value());
  CHECK(found->seq == e.seq);
  CHECK(found->payload == e.payload);
  CHECK_FALSE(s->read([](Tx& tx) { return tx.find_event("evt_missing"); }).has_value());
}

TEST_CASE_TEMPLATE("shared store: due_deliveries, delivery marks and the backlog", D, PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  const auto ids = created_payments(*s, 3);
  const std::vector<std::string> acme{"acme"};
  static constexpr Millis claim{60'000};  // unused in a read
  const auto due = [&](UnixMillis now, int limit, std::vector<std::string> exclude = {}) {
    return payment_ids(s->read([&](Tx& tx) { return tx.due_deliveries(acme, now, limit, claim, exclude); }));
  };
  CHECK(due(t0 - 1, 10).empty());
  CHECK(due(t0 + 1, 10) == std::vector<std::string>{ids[0], ids[1]});
  CHECK(due(t0 + 5, 10) == ids);
  CHECK(due(t0 + 5, 2) == std::vector<std::string>{ids[0], ids[1]});
  CHECK(s->read([](Tx& tx) { return tx.due_deliveries({}, t0 + 5, 10, claim); }).empty());
  CHECK(s->read([&](Tx& tx) { return tx.due_deliveries(acme, t0 + 5, 0, claim); }).empty());
  CHECK(s->read([](Tx& tx) { return tx.due_deliveries({"acme", "globex"}, t0 + 20, 10, claim); }).size() == 4);

  const auto events = s->read([](Tx& tx) { return tx.list_events("acme", 0, 10); }).events;
  REQUIRE(events.size() == 3);
  CHECK(due(t0 + 5, 10, {events[0].event_id}) == std::vector<std::string>{ids[1], ids[2]});

  const auto backlog = s->read([&](Tx& tx) { return tx.outbox_backlog(acme); });
  CHECK(backlog.pending == 3);
  CHECK(backlog.oldest_pending_at == t0);
  CHECK(s->read([](Tx& tx) { return tx.outbox_backlog({}); }).pending == 0);

  CHECK(s->committed([&](Tx& tx) { return tx.mark_delivered(events[0].event_id, t0 + 50); }));
  CHECK_FALSE(s->committed([&](Tx& tx) { return tx.mark_delivered(events[0].event_id, t0 + 60); }));
  CHECK_FALSE(s->committed([](Tx& tx) { return tx.mark_delivered("evt_missing", t0 + 60); }));
  CHECK(s->committed([&](Tx& tx) { return tx.mark_delivery_failed(events[1].event_id, "HTTP 503", t0 + 1000); }));
  CHECK_FALSE(s->committed([&](Tx& tx) { return tx.mark_delivery_failed(events[0].event_id, "late", t0 + 1000); }));
  CHECK(due(t0 + 100, 10) == std::vector<std::string>{ids[2]});
  CHECK(due(t0 + 1000, 10) == std::vector<std::string>{ids[1], ids[2]});

  const auto delivered = s->read([&](Tx& tx) { return tx.find_event(events[0].event_id); });
  REQUIRE(delivered.has_value());
  CHECK(delivered->delivered_at == t0 + 50);
  CHECK(delivered->attempts == 1);
  CHECK_FALSE(delivered->last_error.has_value());
  const auto failed = s->read([&](Tx& tx) { return tx.find_event(events[1].event_id); });
  REQUIRE(failed.has_value());
  CHECK_FALSE(failed->delivered_at.has_value());
  CHECK(failed->attempts == 1);
  CHECK(failed->last_error == "HTTP 503");
  CHECK(failed->next_attempt_at == t0 + 1000);

  const auto after = s->read([&](Tx& tx) { return tx.outbox_backlog(acme); });
  CHECK(after.pending == 2);
  CHECK(after.oldest_pending_at == t0 + 1);
}

TEST_CASE_TEMPLATE("shared store: the purges remove only old delivered events and old inbox rows", D,
                   PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  created_payments(*s, 3);
  const auto events = s->read([](Tx& tx) { return tx.list_events("acme", 0, 10); }).events;
  REQUIRE(s->committed([&](Tx& tx) { return tx.mark_delivered(events[0].event_id, t0 + 50); }));
  REQUIRE(s->committed([&](Tx& tx) { return tx.mark_delivered(events[1].event_id, t0 + 60); }));

  CHECK(s->committed([](Tx& tx) { return tx.purge_delivered_events(t0 + 50, 10); }) == 0);
  CHECK(s->committed([](Tx& tx) { return tx.purge_delivered_events(t0 + 100, 1); }) == 1);
  CHECK(s->committed([](Tx& tx) { return tx.purge_delivered_events(t0 + 100, 10); }) == 1);
  CHECK(s->committed([](Tx& tx) { return tx.purge_delivered_events(t0 + 100, 10); }) == 0);
  CHECK(s->count_rows("outbox") == 2);  // the undelivered event of acme and globex's
  CHECK_FALSE(s->read([&](Tx& tx) { return tx.find_event(events[0].event_id); }).has_value());
  CHECK(s->read([&](Tx& tx) { return tx.find_event(events[2].event_id); }).has_value());

  for (int i = 1; i <= 3; ++i)
    s->exec("INSERT INTO callback_inbox (provider, event_id, received_at, payment_id, payload, result)"
            " VALUES ('sim', 'cb-" + std::to_string(i) + "', " + std::to_string(i * 100) +
            ", NULL, '{}', 'matched')");
  CHECK(s->committed([](Tx& tx) { return tx.purge_callback_inbox(250, 1); }) == 1);
  CHECK(s->committed([](Tx& tx) { return tx.purge_callback_inbox(250, 10); }) == 1);
  CHECK(s->committed([](Tx& tx) { return tx.purge_callback_inbox(250, 10); }) == 0);
  CHECK(s->count_rows("callback_inbox") == 1);
}

}  // namespace payorch::test
