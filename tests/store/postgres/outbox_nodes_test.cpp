// The outbox on PostgreSQL with several writers and several nodes (store/postgres/outbox.h),
// with real sessions interleaved by hand:
// - the feed never skips an event whose transaction commits after a reader paged past events
//   written later (the seq it took at insert is lower than theirs), and keeps a payment's events
//   in order;
// - due_deliveries claims what it returns, so another node's selection passes over an event while
//   it is pushed, and a payment's later events wait for the earlier one, on any node.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "store/postgres/migrations.h"
#include "store/postgres/outbox.h"
#include "store/postgres/transaction.h"
#include "support/postgres_cluster.h"
#include "two_sessions.h"

namespace payorch::store::pg {
namespace {

constexpr UnixMillis t0 = 1'700'000'000'000;

// A migrated database, sessions a and b (TwoSessions: table t to write first when a test needs a
// transaction id taken before the event), and payments pay_1 … pay_4 of acme.
struct Rig : TwoSessions {
  // How long a node's claim holds its events back (a push's longest time).
  static constexpr Millis claim_for{11'000};
  explicit Rig(const std::string& url) : TwoSessions(url), reader(url) {
    migrate(a, embedded_migrations(), t0);
    for (int i = 1; i <= 4; ++i)
      a.exec("INSERT INTO payments (id, tenant_id, operation_type, operation_id, provider,"
             " client_key, request_digest, amount_minor, currency, payee, source, state,"
             " next_attempt_at, created_at, updated_at) VALUES ($1, 'acme', 'payment', $1, 'sim',"
             " 'ck_' || $1, 'sha256:x', 100, 'EUR', 'merchant-1', 'tok_ok', 'PROCESSING', $2, $2, $2)",
             {"pay_" + std::to_string(i), t0});
  }
  // An event of `payment`, due at t0, as the store writes it; its seq.
  static std::int64_t write_event(Connection& c, const std::string& event_id, const std::string& payment) {
    return c.exec("INSERT INTO outbox (event_id, tenant_id, payment_id, type, payload, created_at,"
                  " next_attempt_at) VALUES ($1, 'acme', $2, 'payment.created', '{}', $3, $3)"
                  " RETURNING seq",
                  {event_id, payment, t0})
        .integer(0, 0);
  }
  // A page of acme's feed as PgStore reads it: in a REPEATABLE READ READ ONLY transaction.
  EventPage page(std::int64_t after, int limit = 10) {
    reader.exec("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    EventPage p = list_events(reader, "acme", after, limit);
    reader.exec("COMMIT");
    return p;
  }
  // A consumer following the feed: every page from `cursor` on, its event ids, the cursor moved.
  std::vector<std::string> follow(std::int64_t& cursor) {
    std::vector<std::string> out;
    for (;;) {
      const EventPage p = page(cursor, 1);
      if (!p.next_cursor) return out;
      CHECK(*p.next_cursor > cursor);
      cursor = *p.next_cursor;
      for (const auto& e : p.events) out.push_back(e.event_id);
    }
  }
  // due_deliveries on `c` in a transaction of its own (as a write job runs it), committed.
  static std::vector<std::string> claim(Connection& c, UnixMillis now, int limit = 10) {
    c.exec("BEGIN");
    std::vector<std::string> out = claim_open(c, now, limit);
    c.exec("COMMIT");
    return out;
  }
  // The same inside c's open transaction, left open.
  static std::vector<std::string> claim_open(Connection& c, UnixMillis now, int limit = 10) {
    std::vector<std::string> out;
    for (const auto& e : due_deliveries(c, {"acme"}, now, limit, claim_for, {})) out.push_back(e.event_id);
    return out;
  }
  Connection reader;
};

using Ids = std::vector<std::string>;

}  // namespace

TEST_CASE("pg feed: an event committed after a later seq is not skipped by a reader paging") {
  auto db = test::postgres_database_or_skip();
  if (!db) return;
  Rig rig(db->url());
  std::int64_t cursor = 0;

  // a takes the lower seq and stays open; b takes a higher one and commits.
  rig.a.exec("BEGIN");
  const std::int64_t seq_a = Rig::write_event(rig.a, "evt_a", "pay_1");
  rig.b.exec("BEGIN");
  const std::int64_t seq_b = Rig::write_event(rig.b, "evt_b", "pay_2");
  rig.b.exec("COMMIT");
  REQUIRE(seq_a < seq_b);
  // By seq the reader would get evt_b now and page past seq_a. The feed holds evt_b back while
  // a transaction older than it is open.
  CHECK(rig.follow(cursor) == Ids{});
  rig.a.exec("COMMIT");
  CHECK(rig.follow(cursor) == (Ids{"evt_a", "evt_b"}));

  // The other way round: b took its transaction id first (a write elsewhere), a its seq first;
  // b commits while a is open. evt_b may be returned at once, and evt_a, committed later,
  // still comes after the cursor.
  rig.b.exec("BEGIN");
  rig.b.exec("UPDATE t SET v = v + 1 WHERE id = 1");
  rig.a.exec("BEGIN");
  const std::int64_t seq_c = Rig::write_event(rig.a, "evt_c", "pay_3");
  const std::int64_t seq_d = Rig::write_event(rig.b, "evt_d", "pay_4");
  REQUIRE(seq_c < seq_d);
  rig.b.exec("COMMIT");
  CHECK(rig.follow(cursor) == Ids{"evt_d"});
  rig.a.exec("COMMIT");
  CHECK(rig.follow(cursor) == Ids{"evt_c"});
  CHECK(rig.follow(cursor) == Ids{});

  // Every event, once, from the start, in the order it was returned.
  std::int64_t from_start = 0;
  CHECK(rig.follow(from_start) == (Ids{"evt_a", "evt_b", "evt_d", "evt_c"}));
  CHECK(from_start == cursor);
}

TEST_CASE("pg feed: the events of one transaction page in order, and a rolled-back one leaves no gap") {
  auto db = test::postgres_database_or_skip();
  if (!db) return;
  Rig rig(db->url());
  rig.a.exec("BEGIN");
  for (int i = 1; i <= 3; ++i) Rig::write_event(rig.a, "evt_" + std::to_string(i), "pay_1");
  rig.a.exec("COMMIT");
  rig.a.exec("BEGIN");
  Rig::write_event(rig.a, "evt_gone", "pay_2");
  rig.a.exec("ROLLBACK");
  rig.a.exec("BEGIN");
  Rig::write_event(rig.a, "evt_4", "pay_2");
  rig.a.exec("COMMIT");
  std::int64_t cursor = 0;
  CHECK(rig.follow(cursor) == (Ids{"evt_1", "evt_2", "evt_3", "evt_4"}));
  const EventPage all = rig.page(0);
  REQUIRE(all.events.size() == 4);
  CHECK(all.events[0].seq + 1 == all.events[1].seq);  // one transaction: consecutive positions
  CHECK(*all.next_cursor == all.events.back().seq);
}

TEST_CASE("pg feed: a payment's event whose transaction id is below its last event's is run again") {
  auto db = test::postgres_database_or_skip();
  if (!db) return;
  Rig rig(db->url());
  // b takes its transaction id first (as a callback does with its inbox row), a writes pay_1's
  // event and commits, then b writes pay_1's next event: by id it would sort before a's. It is
  // refused as a serialization failure, and run again with a new id it comes after.
  int runs = 0;
  const TxResult r = run_transaction(rig.b, Isolation::read_committed, RetryPolicy{.max_attempts = 3},
                                     [&](Connection& c) {
                                       c.exec("UPDATE t SET v = v + 1 WHERE id = 1");
                                       if (++runs == 1) Rig::write_event(rig.a, "evt_1", "pay_1");
                                       Rig::write_event(c, "evt_2", "pay_1");
                                     });
  CHECK(r.status == TxStatus::committed);
  CHECK(runs == 2);
  std::int64_t cursor = 0;
  CHECK(rig.follow(cursor) == (Ids{"evt_1", "evt_2"}));

  // Events of other payments are not held to it.
  rig.b.exec("BEGIN");
  rig.b.exec("UPDATE t SET v = v + 1 WHERE id = 1");
  Rig::write_event(rig.a, "evt_3", "pay_2");
  Rig::write_event(rig.b, "evt_4", "pay_3");
  rig.b.exec("COMMIT");
  CHECK(rig.follow(cursor) == (Ids{"evt_4", "evt_3"}));
}

TEST_CASE("pg pushes: a node's selection passes over the events another node claimed") {
  auto db = test::postgres_database_or_skip();
  if (!db) return;
  Rig rig(db->url());
  // pay_1: two events, in order; pay_2 and pay_3: one each.
  for (const auto& [event, payment] : std::vector<std::pair<std::string, std::string>>{
           {"evt_1a", "pay_1"}, {"evt_1b", "pay_1"}, {"evt_2", "pay_2"}, {"evt_3", "pay_3"}})
    Rig::write_event(rig.a, event, payment);
  const UnixMillis now = t0 + 10;

  // Node a selects two while node b selects in between: b skips the rows a has locked, and
  // evt_1b, whose payment's earlier event a holds.
  rig.a.exec("BEGIN");
  CHECK(Rig::claim_open(rig.a, now, 2) == (Ids{"evt_1a", "evt_2"}));
  CHECK(Rig::claim(rig.b, now) == Ids{"evt_3"});
  rig.a.exec("COMMIT");
  // Committed claims: nothing is due until they lapse.
  CHECK(Rig::claim(rig.b, now + 1) == Ids{});
  // A read-only look selects without claiming, and claimed events are not due in it either.
  rig.reader.exec("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
  CHECK(due_deliveries(rig.reader, {"acme"}, now + 1, 10, Rig::claim_for, {}).empty());
  rig.reader.exec("COMMIT");

  // a delivers evt_1a: the payment's next event is due, on any node.
  CHECK(mark_delivered(rig.a, "evt_1a", now + 5));
  CHECK(Rig::claim(rig.b, now + 6) == Ids{"evt_1b"});
  // a's push of evt_2 fails: its retry time replaces the claim.
  CHECK(mark_delivery_failed(rig.a, "evt_2", "HTTP 503", now + 100));
  CHECK(Rig::claim(rig.b, now + 100) == Ids{"evt_2"});
  // b dies while pushing evt_3 and evt_1b: once the claims lapse, a takes them again.
  const UnixMillis lapsed = now + 6 + Rig::claim_for.count();
  CHECK(Rig::claim(rig.a, now + Rig::claim_for.count() - 1) == Ids{});
  CHECK(Rig::claim(rig.a, lapsed) == (Ids{"evt_1b", "evt_3"}));
  const auto row = find_event(rig.a, "evt_3");
  REQUIRE(row.has_value());
  CHECK(row->next_attempt_at == lapsed + Rig::claim_for.count());
  CHECK(row->attempts == 0);
}

}  // namespace payorch::store::pg
