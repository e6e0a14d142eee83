// store/callbacks: every branch of record_callback on a real SQLite file — duplicates,
// final statuses on every state, pending, amount mismatches, unknown references, open system
// cases, a worker's lease — and migration 003 on a database that already holds cases.
#include <doctest/doctest.h>

#include <boost/json/parse.hpp>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "core/digest.h"
#include "core/ids.h"
#include "store/callbacks.h"
#include "store/database.h"
#include "store/intake.h"
#include "store/migrations.h"
#include "store/payments.h"
#include "store/leases.h"
#include "store/transitions.h"
#include "store/cases.h"
#include "support/enum_names.h"
#include "support/store_fixture.h"

using namespace payorch;
using namespace payorch::store;
using payorch::test::intake_request;
using namespace std::chrono_literals;

namespace {

constexpr UnixMillis t0 = 1'700'000'000'000;

std::int64_t count(Db& db, const std::string& sql, const std::string& arg = "") {
  auto st = db.prepare(sql);
  if (sql.find('?') != std::string::npos) st.bind(1, arg);
  st.step();
  return st.col_int(0);
}

// Rows of every table a callback may write, and every row change the connection made.
struct Snapshot {
  std::int64_t payments_updated, outbox, cases, evidence, inbox, total_changes;
  bool operator==(const Snapshot&) const = default;
};

struct CallbackDb {
  test::TempDatabase file{"callbacks", t0};
  Db* db = file.db.get();
  SeededRandom rng{7};
  int next_op = 0;
  int next_event = 0;

  Payment intake() {
    return test::created_payment(*db, "op-" + std::to_string(++next_op), t0, rng);
  }

  Payment reload(const Payment& p) { return *find_payment_by_id(*db, p.id); }

  void apply(const Payment& p, Trigger trigger, CaseReason reason = CaseReason::retry_budget_exhausted) {
    auto t = transition(reload(p).state, trigger, reason);
    REQUIRE(t);
    Transaction tx(*db);
    REQUIRE(apply_transition(*db, p.id, std::nullopt, *t, TransitionUpdate{}, t0 + 1'000, rng) ==
            CasResult::applied);
    tx.commit();
  }

  // What the sim vendor would send about `p`, with a fresh event id unless one is given.
  VendorCallback callback(const Payment& p, CallbackStatus status, std::string event_id = "") {
    VendorCallback cb;
    cb.provider = "sim";
    cb.event_id = event_id.empty() ? "evt_" + std::to_string(++next_event) : std::move(event_id);
    cb.client_key = p.client_key;
    cb.status = status;
    cb.vendor_reference = "ch_" + p.client_key.substr(3, 8);
    if (status == CallbackStatus::declined) cb.decline_code = "insufficient_funds";
    cb.amount_minor = p.amount_minor;
    cb.currency = p.currency;
    cb.payload = R"({"id":")" + cb.event_id + R"(","type":"charge.)" +
                 std::string(to_string(status)) + R"("})";
    return cb;
  }

  CallbackOutcome send(const VendorCallback& cb, UnixMillis now = t0 + 5'000) {
    Transaction tx(*db);
    auto out = record_callback(*db, cb, now, rng);
    tx.commit();
    return out;
  }

  Snapshot snapshot() {
    return Snapshot{count(*db, "SELECT COALESCE(SUM(updated_at), 0) FROM payments"),
                    count(*db, "SELECT COUNT(*) FROM outbox"),
                    count(*db, "SELECT COUNT(*) FROM reconciliation_cases"),
                    count(*db, "SELECT COALESCE(SUM(json_array_length(evidence)), 0) FROM reconciliation_cases"),
                    count(*db, "SELECT COUNT(*) FROM callback_inbox"),
                    count(*db, "SELECT total_changes()")};
  }

  std::int64_t events(const Payment& p, std::string_view type = "") {
    auto st = db->prepare("SELECT COUNT(*) FROM outbox WHERE payment_id = ?1 AND (?2 = '' OR type = ?2)");
    st.bind(1, p.id).bind(2, type);
    st.step();
    return st.col_int(0);
  }

  std::string inbox_result(const std::string& event_id) {
    auto st = db->prepare("SELECT result FROM callback_inbox WHERE provider = 'sim' AND event_id = ?");
    st.bind(1, event_id);
    REQUIRE(st.step());
    return st.col_text(0);
  }
};

}  // namespace

TEST_CASE("callbacks: a duplicate event id writes nothing at all") {
  CallbackDb t;
  Payment p = t.intake();
  auto first = t.callback(p, CallbackStatus::succeeded, "evt_dup");
  CHECK(t.send(first).result == CallbackResult::applied);
  const Snapshot before = t.snapshot();

  // The same delivery, and a different body under the same id: both are the event already seen.
  auto other = t.callback(p, CallbackStatus::declined, "evt_dup");
  for (const auto* cb : {&first, &other}) {
    auto out = t.send(*cb, t0 + 9'000);
    CHECK(out.result == CallbackResult::duplicate);
    CHECK(out.payment_id == p.id);  // named, for the log line, though nothing is written
    CHECK_FALSE(out.case_id);
    CHECK_FALSE(out.event);
  }
  CHECK(t.snapshot() == before);
  CHECK(t.reload(p).state == PaymentState::succeeded);
  CHECK(t.inbox_result("evt_dup") == "applied");
}

TEST_CASE("callbacks: six retries of one callback make one state change and one event") {
  CallbackDb t;
  Payment p = t.intake();
  auto cb = t.callback(p, CallbackStatus::succeeded, "evt_coupon");
  CHECK(t.send(cb).result == CallbackResult::applied);
  const Payment after_first = t.reload(p);
  for (int i = 0; i < 5; ++i) CHECK(t.send(cb, t0 + 6'000 + i).result == CallbackResult::duplicate);
  CHECK(t.events(p, "payment.succeeded") == 1);
  CHECK(t.events(p) == 2);  // payment.created, payment.succeeded
  CHECK(t.reload(p).updated_at == after_first.updated_at);
  CHECK(count(*t.db, "SELECT COUNT(*) FROM callback_inbox") == 1);

  SUBCASE("the same news under new event ids only confirms") {
    for (int i = 0; i < 5; ++i) {
      auto out = t.send(t.callback(p, CallbackStatus::succeeded), t0 + 7'000 + i);
      CHECK(out.result == CallbackResult::confirmed);
      CHECK(out.payment_id == p.id);
      CHECK_FALSE(out.event);
    }
    CHECK(t.events(p, "payment.succeeded") == 1);
    CHECK(t.reload(p).updated_at == after_first.updated_at);
    CHECK(count(*t.db, "SELECT COUNT(*) FROM callback_inbox WHERE result = 'confirmed'") == 5);
  }
}

TEST_CASE("callbacks: succeeded / declined decide PROCESSING and UNKNOWN") {
  for (PaymentState from : {PaymentState::processing, PaymentState::unknown}) {
    for (CallbackStatus status : {CallbackStatus::succeeded, CallbackStatus::declined}) {
      CAPTURE(to_string(from));
      CAPTURE(static_cast<int>(status));
      CallbackDb t;
      Payment p = t.intake();
      if (from == PaymentState::unknown) t.apply(p, Trigger::submit_ambiguous);
      auto cb = t.callback(p, status);
      auto out = t.send(cb, t0 + 8'000);
      CHECK(out.result == CallbackResult::applied);
      CHECK(out.payment_id == p.id);
      CHECK_FALSE(out.case_id);
      const bool success = status == CallbackStatus::succeeded;
      CHECK(out.event == (success ? EventType::succeeded : EventType::failed));
      Payment now = t.reload(p);
      CHECK(now.state == (success ? PaymentState::succeeded : PaymentState::failed_final));
      CHECK(now.next_action == NextAction::none);
      CHECK(now.vendor_reference == cb.vendor_reference);
      CHECK(now.updated_at == t0 + 8'000);
      if (!success) {
        CHECK(now.failure_code == "insufficient_funds");
        CHECK(now.failure_message == "declined by vendor callback");
      }
      CHECK(t.events(p, success ? "payment.succeeded" : "payment.failed") == 1);
      CHECK(t.inbox_result(cb.event_id) == "applied");
      CHECK(count(*t.db, "SELECT COUNT(*) FROM callback_inbox WHERE payment_id = ?", p.id) == 1);
      CHECK(count(*t.db, "SELECT COUNT(*) FROM reconciliation_cases") == 0);
    }
  }
}

TEST_CASE("callbacks: a decline without a code fails the payment as 'declined'") {
  CallbackDb t;
  Payment p = t.intake();
  auto cb = t.callback(p, CallbackStatus::declined);
  cb.decline_code.reset();
  CHECK(t.send(cb).result == CallbackResult::applied);
  CHECK(t.reload(p).failure_code == "declined");
}

TEST_CASE("callbacks: pending never moves a payment") {
  CallbackDb t;
  SUBCASE("on PROCESSING") {
    Payment p = t.intake();
    const Payment before = t.reload(p);
    auto cb = t.callback(p, CallbackStatus::pending);
    auto out = t.send(cb);
    CHECK(out.result == CallbackResult::ignored_pending);
    CHECK(out.payment_id == p.id);
    CHECK_FALSE(out.event);
    Payment after = t.reload(p);
    CHECK(after.state == PaymentState::processing);
    CHECK(after.next_action == before.next_action);
    CHECK(after.updated_at == before.updated_at);
    CHECK(t.events(p) == 1);
    CHECK(t.inbox_result(cb.event_id) == "ignored_pending");
  }
  SUBCASE("after succeeded (a lower status arriving late)") {
    Payment p = t.intake();
    CHECK(t.send(t.callback(p, CallbackStatus::succeeded)).result == CallbackResult::applied);
    const Snapshot before = t.snapshot();
    auto out = t.send(t.callback(p, CallbackStatus::pending), t0 + 9'000);
    CHECK(out.result == CallbackResult::ignored_pending);
    CHECK(t.reload(p).state == PaymentState::succeeded);
    Snapshot after = t.snapshot();
    CHECK(after.inbox == before.inbox + 1);  // only the inbox row
    CHECK(after.outbox == before.outbox);
    CHECK(after.payments_updated == before.payments_updated);
    CHECK(after.cases == before.cases);
  }
}

TEST_CASE("callbacks: a final status contradicting a terminal state opens one late_contradiction") {
  CallbackDb t;
  Payment p = t.intake();
  t.apply(p, Trigger::submit_declined);

  auto first = t.callback(p, CallbackStatus::succeeded);
  auto out = t.send(first, t0 + 10'000);
  CHECK(out.result == CallbackResult::late_contradiction);
  CHECK(out.event == EventType::escalated);
  REQUIRE(out.case_id);
  CHECK(t.reload(p).state == PaymentState::failed_final);
  CHECK(t.events(p, "payment.escalated") == 1);
  auto c = find_case(*t.db, *out.case_id);
  REQUIRE(c);
  CHECK(c->reason == "late_contradiction");
  CHECK(c->status == CaseStatus::open);
  CHECK(c->payment_id == p.id);
  REQUIRE(c->evidence.size() == 1);
  const auto& e = c->evidence[0].as_object();
  CHECK(e.at("source").as_string() == "callback");
  CHECK(e.at("provider").as_string() == "sim");
  CHECK(e.at("event_id").as_string() == first.event_id);
  CHECK(e.at("status").as_string() == "succeeded");
  CHECK(e.at("amount_minor").as_int64() == 1000);
  CHECK(e.at("currency").as_string() == "EUR");
  CHECK(e.at("vendor_reference").as_string() == *first.vendor_reference);
  CHECK(e.at("payload").as_string() == first.payload);
  CHECK(e.at("at").as_string() == format_rfc3339(t0 + 10'000));

  // Another contradicting event: evidence on the same case, no second case or event.
  auto again = t.send(t.callback(p, CallbackStatus::succeeded), t0 + 11'000);
  CHECK(again.result == CallbackResult::late_contradiction);
  CHECK(again.case_id == out.case_id);
  CHECK_FALSE(again.event);
  CHECK(t.events(p, "payment.escalated") == 1);
  CHECK(count(*t.db, "SELECT COUNT(*) FROM reconciliation_cases") == 1);
  CHECK(find_case(*t.db, *out.case_id)->evidence.size() == 2);

  // Agreeing news confirms and writes nothing to the payment or the case.
  CHECK(t.send(t.callback(p, CallbackStatus::declined), t0 + 12'000).result == CallbackResult::confirmed);
  CHECK(find_case(*t.db, *out.case_id)->evidence.size() == 2);
  CHECK(t.reload(p).state == PaymentState::failed_final);
  CHECK(t.reload(p).updated_at == t0 + 10'000);  // written by the escalation only
}

TEST_CASE("callbacks: an amount or currency other than the intent is a callback_mismatch case") {
  CallbackDb t;
  SUBCASE("non-terminal: status not applied, automatic work stops") {
    Payment p = t.intake();
    auto cb = t.callback(p, CallbackStatus::succeeded);
    cb.amount_minor = 999;
    auto out = t.send(cb);
    CHECK(out.result == CallbackResult::mismatch);
    CHECK(out.event == EventType::escalated);
    CHECK(out.payment_id == p.id);
    Payment now = t.reload(p);
    CHECK(now.state == PaymentState::processing);
    CHECK(now.next_action == NextAction::none);
    CHECK_FALSE(now.vendor_reference);
    auto c = find_open_case(*t.db, p.id);
    REQUIRE(c);
    CHECK(c->id == out.case_id);
    CHECK(c->reason == "callback_mismatch");
    REQUIRE(c->evidence.size() == 1);
    CHECK(c->evidence[0].at("amount_minor").as_int64() == 999);
    CHECK(t.events(p, "payment.escalated") == 1);
    CHECK(t.events(p, "payment.succeeded") == 0);
    CHECK(t.inbox_result(cb.event_id) == "mismatch");

    // Another mismatching event joins the open case.
    auto cb2 = t.callback(p, CallbackStatus::declined);
    cb2.currency = "USD";
    auto out2 = t.send(cb2);
    CHECK(out2.result == CallbackResult::mismatch);
    CHECK(out2.case_id == out.case_id);
    CHECK_FALSE(out2.event);
    CHECK(find_open_case(*t.db, p.id)->evidence.size() == 2);
    CHECK(t.events(p, "payment.escalated") == 1);
  }
  SUBCASE("terminal: the state stands") {
    Payment p = t.intake();
    t.apply(p, Trigger::submit_succeeded);
    auto cb = t.callback(p, CallbackStatus::succeeded);
    cb.currency = "USD";
    auto out = t.send(cb);
    CHECK(out.result == CallbackResult::mismatch);
    CHECK(out.event == EventType::escalated);
    CHECK(t.reload(p).state == PaymentState::succeeded);
    CHECK(find_open_case(*t.db, p.id)->reason == "callback_mismatch");
  }
  SUBCASE("an open case gets the callback as evidence, nothing else") {
    Payment p = t.intake();
    t.apply(p, Trigger::give_up, CaseReason::retry_budget_exhausted);
    const Snapshot before = t.snapshot();
    auto cb = t.callback(p, CallbackStatus::succeeded);
    cb.amount_minor = 1;
    auto out = t.send(cb);
    CHECK(out.result == CallbackResult::mismatch);
    CHECK_FALSE(out.event);
    auto c = find_open_case(*t.db, p.id);
    CHECK(c->reason == "retry_budget_exhausted");
    CHECK(c->id == out.case_id);
    Snapshot after = t.snapshot();
    CHECK(after.evidence == before.evidence + 1);
    CHECK(after.outbox == before.outbox);
    CHECK(after.payments_updated == before.payments_updated);
  }
  SUBCASE("a callback without amount and currency is not a mismatch") {
    Payment p = t.intake();
    auto cb = t.callback(p, CallbackStatus::succeeded);
    cb.amount_minor.reset();
    cb.currency.reset();
    CHECK(t.send(cb).result == CallbackResult::applied);
  }
}

TEST_CASE("callbacks: an unknown client_key is stored, answered, and held in a case with no payment") {
  CallbackDb t;
  Payment p = t.intake();
  const Snapshot before = t.snapshot();
  VendorCallback cb = t.callback(p, CallbackStatus::succeeded);
  cb.client_key = "ck_NOBODYHASTHISKEY000000000";
  auto out = t.send(cb, t0 + 20'000);
  CHECK(out.result == CallbackResult::unknown_reference);
  CHECK_FALSE(out.payment_id);
  CHECK_FALSE(out.event);
  REQUIRE(out.case_id);
  Snapshot after = t.snapshot();
  CHECK(after.outbox == before.outbox);
  CHECK(after.payments_updated == before.payments_updated);
  CHECK(after.inbox == before.inbox + 1);
  CHECK(after.cases == before.cases + 1);
  CHECK(t.inbox_result(cb.event_id) == "unknown_reference");
  CHECK(count(*t.db, "SELECT COUNT(*) FROM callback_inbox WHERE payment_id IS NULL") == 1);

  auto c = find_case(*t.db, *out.case_id);
  REQUIRE(c);
  CHECK(c->reason == "callback_mismatch");
  CHECK(c->status == CaseStatus::open);
  CHECK_FALSE(c->payment_id);
  CHECK_FALSE(c->tenant_id);
  CHECK_FALSE(c->operation_id);
  CHECK(c->provider == "sim");
  CHECK(c->reference == cb.client_key);
  CHECK(c->opened_at == t0 + 20'000);
  REQUIRE(c->evidence.size() == 1);
  CHECK(c->evidence[0].at("event_id").as_string() == cb.event_id);
  CHECK(c->evidence[0].at("payload").as_string() == cb.payload);

  // A later event about the same reference joins the open case.
  VendorCallback later = t.callback(p, CallbackStatus::declined);
  later.client_key = cb.client_key;
  auto out2 = t.send(later, t0 + 21'000);
  CHECK(out2.case_id == out.case_id);
  CHECK(find_case(*t.db, *out.case_id)->evidence.size() == 2);

  // Our key, named under another provider, is not ours either.
  VendorCallback elsewhere = t.callback(p, CallbackStatus::succeeded);
  elsewhere.provider = "other";
  auto out3 = t.send(elsewhere);
  CHECK(out3.result == CallbackResult::unknown_reference);
  CHECK(out3.case_id != out.case_id);
  CHECK(find_case(*t.db, *out3.case_id)->provider == "other");
  CHECK(t.reload(p).state == PaymentState::processing);
}

TEST_CASE("callbacks: a final status resolves an open system case with the callback as evidence") {
  for (CaseReason reason : {CaseReason::retry_budget_exhausted, CaseReason::unrecoverable_contract,
                            CaseReason::key_retention_expiring}) {
    CAPTURE(to_string(reason));
    CallbackDb t;
    Payment p = t.intake();
    t.apply(p, Trigger::submit_ambiguous);
    t.apply(p, Trigger::give_up, reason);
    const std::string case_id = find_open_case(*t.db, p.id)->id;

    auto cb = t.callback(p, CallbackStatus::succeeded);
    auto out = t.send(cb, t0 + 30'000);
    CHECK(out.result == CallbackResult::applied);
    CHECK(out.event == EventType::succeeded);
    CHECK(out.case_id == case_id);
    CHECK(t.reload(p).state == PaymentState::succeeded);
    auto c = find_case(*t.db, case_id);
    CHECK(c->status == CaseStatus::resolved);
    CHECK(c->resolved_by == "system");
    CHECK(c->outcome == "succeeded");
    CHECK(c->resolved_at == t0 + 30'000);
    REQUIRE(c->evidence.size() == 1);
    CHECK(c->evidence[0].at("event_id").as_string() == cb.event_id);
    CHECK(t.events(p, "payment.succeeded") == 1);
    // The event announces the payment with its case already resolved.
    auto st = t.db->prepare("SELECT payload FROM outbox WHERE payment_id = ? ORDER BY seq DESC LIMIT 1");
    st.bind(1, p.id);
    REQUIRE(st.step());
    CHECK(boost::json::parse(st.col_text(0)).at("payment").at("reconciliation").at("status").as_string() ==
          "resolved");
  }
}

TEST_CASE("callbacks: a case that is not the system's stays open and gets the callback") {
  CallbackDb t;
  Payment p = t.intake();
  t.apply(p, Trigger::submit_key_mismatch);  // UNKNOWN + vendor_key_mismatch
  const std::string case_id = find_open_case(*t.db, p.id)->id;
  auto out = t.send(t.callback(p, CallbackStatus::declined));
  CHECK(out.result == CallbackResult::applied);
  CHECK(out.case_id == case_id);
  CHECK(t.reload(p).state == PaymentState::failed_final);
  auto c = find_case(*t.db, case_id);
  CHECK(c->status == CaseStatus::open);
  CHECK(c->evidence.size() == 1);
}

TEST_CASE("callbacks: a callback overtakes a worker's lease; the worker's late answer is fenced out") {
  CallbackDb t;
  Payment p = t.intake();
  auto lease = claim_lease(*t.db, p.id, "worker-1", t0 + 1'000, 30s);
  REQUIRE(lease);

  auto out = t.send(t.callback(p, CallbackStatus::succeeded), t0 + 2'000);
  CHECK(out.result == CallbackResult::applied);
  Payment now = t.reload(p);
  CHECK(now.state == PaymentState::succeeded);
  CHECK_FALSE(now.lease_owner);
  CHECK(now.fence == lease->fence + 1);  // the callback fences out the worker in flight

  // The worker's submit answer arrives: its fence is stale, nothing more written.
  auto t_submit = transition(PaymentState::processing, Trigger::submit_succeeded);
  REQUIRE(t_submit);
  TransitionUpdate u;
  u.next_attempt_at = t0 + 3'000;
  u.last_submit_ended_at = t0 + 3'000;
  Transaction tx(*t.db);
  CHECK(apply_transition(*t.db, p.id, lease->fence, *t_submit, u, t0 + 3'000, t.rng) ==
        CasResult::stale_fence);
  tx.commit();
  CHECK(t.events(p, "payment.succeeded") == 1);
  CHECK(t.reload(p).updated_at == t0 + 2'000);
}

TEST_CASE("callbacks: to_string names every result") {
  CHECK(to_string(CallbackResult::applied) == "applied");
  CHECK(to_string(CallbackResult::duplicate) == "duplicate");
  CHECK(to_string(CallbackResult::confirmed) == "confirmed");
  CHECK(to_string(CallbackResult::ignored_pending) == "ignored_pending");
  CHECK(to_string(CallbackResult::late_contradiction) == "late_contradiction");
  CHECK(to_string(CallbackResult::mismatch) == "mismatch");
  CHECK(to_string(CallbackResult::unknown_reference) == "unknown_reference");
}

TEST_CASE("callbacks: every status and result has a name of its own") {
  test::check_names({CallbackStatus::succeeded, CallbackStatus::declined, CallbackStatus::pending});
  test::check_names({CallbackResult::applied, CallbackResult::duplicate, CallbackResult::confirmed,
                     CallbackResult::ignored_pending, CallbackResult::late_contradiction,
                     CallbackResult::mismatch, CallbackResult::unknown_reference});
}

TEST_CASE("migration 003: cases opened before it survive with their evidence") {
  char tmpl[] = "/tmp/payorch-mig3-XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  const std::string path = dir + "/old.db";
  SeededRandom rng(3);
  std::string open_case, resolved_case, payment_id;
  {
    Db db(path, Db::Mode::read_write_create);
    configure_connection(db, 2000);
    std::vector<Migration> before_003;
    for (const auto& m : embedded_migrations())
      if (m.version < 3) before_003.push_back(m);
    REQUIRE(migrate(db, before_003, t0) == 2);

    Transaction tx(db);
    Payment a = record_intake(db, intake_request("old-a"), t0, rng).payment;
    Payment b = record_intake(db, intake_request("old-b"), t0, rng).payment;
    payment_id = a.id;
    for (const auto* p : {&a, &b}) {
      auto give_up = transition(PaymentState::processing, Trigger::give_up);
      REQUIRE(apply_transition(db, p->id, std::nullopt, *give_up, {}, t0 + 1, rng) == CasResult::applied);
    }
    // The case reader knows only the new schema: plain SQL until the migration.
    auto case_of = [&](const Payment& p) {
      auto st = db.prepare("SELECT id FROM reconciliation_cases WHERE payment_id = ?");
      st.bind(1, p.id);
      REQUIRE(st.step());
      return st.col_text(0);
    };
    open_case = case_of(a);
    resolved_case = case_of(b);
    REQUIRE(append_evidence(db, open_case, boost::json::object{{"source", "operator"}, {"ticket", "OPS-3"}}, t0 + 2));
    db.prepare("UPDATE reconciliation_cases SET status = 'resolved', resolved_at = ?1, outcome = 'failed_final',"
               " note = 'old', resolved_by = 'alice' WHERE id = ?2")
        .bind(1, t0 + 3)
        .bind(2, resolved_case)
        .run();
    tx.commit();

    CHECK(migrate(db, embedded_migrations(), t0 + 10) >= 1);
    CHECK(schema_version(db) == embedded_migrations().back().version);
    CHECK(count(db, "SELECT COUNT(*) FROM pragma_foreign_key_check") == 0);
    CHECK(count(db, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'reconciliation_cases_v3'") == 0);
    for (const char* index : {"reconciliation_one_open", "reconciliation_by_status",
                              "reconciliation_one_open_orphan", "callback_inbox_by_received"})
      CHECK_MESSAGE(count(db, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name = ?", index) == 1,
                    index);

    auto c = find_case(db, open_case);
    REQUIRE(c);
    CHECK(c->payment_id == payment_id);
    CHECK(c->tenant_id == "acme");
    CHECK(c->provider == "sim");
    CHECK_FALSE(c->reference);
    CHECK(c->reason == "retry_budget_exhausted");
    REQUIRE(c->evidence.size() == 1);
    CHECK(c->evidence[0].at("ticket").as_string() == "OPS-3");
    auto r = find_case(db, resolved_case);
    REQUIRE(r);
    CHECK(r->status == CaseStatus::resolved);
    CHECK(r->resolved_by == "alice");
    CHECK(r->note == "old");
    CHECK(find_payment_by_id(db, payment_id)->reconciliation->case_id == open_case);

    // The constraints came through the rebuild: one open case per payment, real payments only,
    // and a case with no payment must say what the vendor named.
    auto insert = [&](const char* sql) {
      db.prepare(sql).bind(1, new_case_id(t0 + 20, rng)).bind(2, payment_id).run();
    };
    CHECK_THROWS_AS(insert("INSERT INTO reconciliation_cases (id, payment_id, reason, status, opened_at)"
                           " VALUES (?1, ?2, 'late_contradiction', 'open', 0)"),
                    SqliteError);
    CHECK_THROWS_AS(insert("INSERT INTO reconciliation_cases (id, payment_id, reason, status, opened_at)"
                           " VALUES (?1, ?2 || 'x', 'late_contradiction', 'resolved', 0)"),
                    SqliteError);
    CHECK_THROWS_AS(insert("INSERT INTO reconciliation_cases (id, payment_id, reason, status, opened_at)"
                           " VALUES (?1, NULL, 'callback_mismatch', 'open', length(?2))"),
                    SqliteError);
  }
  std::filesystem::remove_all(dir);
}
