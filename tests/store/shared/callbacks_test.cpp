// Vendor callbacks through store::Tx, on each driver (store/callbacks.h): duplicates, final
// statuses on every state, pending, amount mismatches, unknown references, open system cases,
// a worker's lease overtaken — and the same callback, or reports about one payment or one
// unknown reference, arriving at once.
#include <doctest/doctest.h>

#include <boost/json/parse.hpp>
#include <string>
#include <vector>

#include "core/clock.h"
#include "support/store_fixture.h"
#include "support/store_under_test.h"
#include "store/shared/side_by_side.h"

namespace payorch::test {
namespace {

using store::CallbackOutcome;
using store::CallbackResult;
using store::CallbackStatus;
using store::CasResult;
using store::CaseStatus;
using store::ReconciliationCase;
using store::TransitionUpdate;
using store::Tx;
using store::VendorCallback;
using store::WriteStatus;

constexpr UnixMillis t0 = 1'700'000'000'000;

// What a callback may write, read through the store and beside it.
struct Snapshot {
  std::vector<UnixMillis> payments_updated;
  std::int64_t outbox, cases, evidence, inbox;
  bool operator==(const Snapshot&) const = default;
};

struct Callbacks {
  StoreUnderTest& s;
  SeededRandom rng{7};
  int next_op = 0;
  int next_event = 0;
  std::vector<std::string> payments{};  // every payment intake() made, for snapshot()

  Payment intake() {
    const std::string op = "op-" + std::to_string(++next_op);
    Payment p = s.committed([&](Tx& tx) { return tx.record_intake(intake_request(op), t0, rng).payment; });
    payments.push_back(p.id);
    return p;
  }

  Payment reload(const Payment& p) { return s.payment(p.id); }

  void apply(const Payment& p, Trigger trigger, CaseReason reason = CaseReason::retry_budget_exhausted) {
    const auto t = transition(reload(p).state, trigger, reason);
    REQUIRE(t);
    CHECK(s.committed([&](Tx& tx) {
      return tx.apply_transition(p.id, std::nullopt, *t, TransitionUpdate{}, t0 + 1'000, rng);
    }) == CasResult::applied);
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
    return s.committed([&](Tx& tx) { return tx.record_callback(cb, now, rng); });
  }

  std::vector<ReconciliationCase> cases() {
    return s.read([](Tx& tx) { return tx.list_cases(std::nullopt, 1000, std::nullopt); }).cases;
  }

  std::optional<ReconciliationCase> find_case(const std::string& id) {
    return s.read([&](Tx& tx) { return tx.find_case(id); });
  }

  // The payment's open case (its latest case, when that is open).
  std::optional<ReconciliationCase> open_case(const Payment& p) {
    const Payment now = reload(p);
    if (!now.reconciliation || now.reconciliation->status != "open") return std::nullopt;
    return find_case(now.reconciliation->case_id);
  }

  Snapshot snapshot() {
    Snapshot out{{}, s.count_rows("outbox"), s.count_rows("reconciliation_cases"), 0,
                 s.count_rows("callback_inbox")};
    for (const auto& id : payments) out.payments_updated.push_back(s.payment(id).updated_at);
    for (const auto& c : cases()) out.evidence += static_cast<std::int64_t>(c.evidence.size());
    return out;
  }

  std::int64_t events(const Payment& p, std::string_view type = "") {
    std::int64_t n = 0;
    for (const auto& e : s.read([](Tx& tx) { return tx.list_events("acme", 0, 1000); }).events)
      n += e.payment_id == p.id && (type.empty() || e.type == type);
    return n;
  }

  std::int64_t inbox_rows(const std::string& where) { return s.count_rows("callback_inbox WHERE " + where); }
  std::string inbox_result(const std::string& event_id) {
    for (const char* r : {"applied", "duplicate", "confirmed", "ignored_pending", "late_contradiction",
                          "mismatch", "unknown_reference", "received"})
      if (inbox_rows("provider = 'sim' AND event_id = '" + event_id + "' AND result = '" + r + "'") == 1)
        return r;
    return "";
  }
};

}  // namespace

TEST_CASE_TEMPLATE("shared store: a duplicate callback event id writes nothing at all", D, PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  Callbacks t{*s};
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

TEST_CASE_TEMPLATE("shared store: six retries of one callback make one state change and one event", D,
                   PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  Callbacks t{*s};
  Payment p = t.intake();
  auto cb = t.callback(p, CallbackStatus::succeeded, "evt_coupon");
  CHECK(t.send(cb).result == CallbackResult::applied);
  const Payment after_first = t.reload(p);
  for (int i = 0; i < 5; ++i) CHECK(t.send(cb, t0 + 6'000 + i).result == CallbackResult::duplicate);
  CHECK(t.events(p, "payment.succeeded") == 1);
  CHECK(t.events(p) == 2);  // payment.created, payment.succeeded
  CHECK(t.reload(p).updated_at == after_first.updated_at);
  CHECK(s->count_rows("callback_inbox") == 1);

  // The same news under new event ids only confirms.
  for (int i = 0; i < 5; ++i) {
    auto out = t.send(t.callback(p, CallbackStatus::succeeded), t0 + 7'000 + i);
    CHECK(out.result == CallbackResult::confirmed);
    CHECK(out.payment_id == p.id);
    CHECK_FALSE(out.event);
  }
  CHECK(t.events(p, "payment.succeeded") == 1);
  CHECK(t.reload(p).updated_at == after_first.updated_at);
  CHECK(t.inbox_rows("result = 'confirmed'") == 5);
}

TEST_CASE_TEMPLATE("shared store: callbacks succeeded / declined decide PROCESSING and UNKNOWN", D,
                   PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  Callbacks t{*s};
  for (PaymentState from : {PaymentState::processing, PaymentState::unknown}) {
    for (CallbackStatus status : {CallbackStatus::succeeded, CallbackStatus::declined}) {
      CAPTURE(to_string(from));
      CAPTURE(to_string(status));
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
      CHECK(t.inbox_rows("payment_id = '" + p.id + "'") == 1);
    }
  }
  CHECK(s->count_rows("reconciliation_cases") == 0);

  // A decline without a code fails the payment as 'declined'.
  Payment p = t.intake();
  auto cb = t.callback(p, CallbackStatus::declined);
  cb.decline_code.reset();
  CHECK(t.send(cb).result == CallbackResult::applied);
  CHECK(t.reload(p).failure_code == "declined");
}

TEST_CASE_TEMPLATE("shared store: a pending callback never moves a payment", D, PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  Callbacks t{*s};
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

  // After succeeded: a lower status arriving late writes only its inbox row.
  CHECK(t.send(t.callback(p, CallbackStatus::succeeded)).result == CallbackResult::applied);
  const Snapshot done = t.snapshot();
  CHECK(t.send(t.callback(p, CallbackStatus::pending), t0 + 9'000).result == CallbackResult::ignored_pending);
  CHECK(t.reload(p).state == PaymentState::succeeded);
  Snapshot later = t.snapshot();
  CHECK(later.inbox == done.inbox + 1);
  later.inbox = done.inbox;
  CHECK(later == done);
}

TEST_CASE_TEMPLATE("shared store: a callback contradicting a terminal state opens one late_contradiction", D,
                   PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  Callbacks t{*s};
  Payment p = t.intake();
  t.apply(p, Trigger::submit_declined);

  auto first = t.callback(p, CallbackStatus::succeeded);
  auto out = t.send(first, t0 + 10'000);
  CHECK(out.result == CallbackResult::late_contradiction);
  CHECK(out.event == EventType::escalated);
  REQUIRE(out.case_id);
  CHECK(t.reload(p).state == PaymentState::failed_final);
  CHECK(t.events(p, "payment.escalated") == 1);
  auto c = t.find_case(*out.case_id);
  REQUIRE(c);
  CHECK(c->reason == "late_contradiction");
  CHECK(c->status == CaseStatus::open);
  CHECK(c->payment_id == p.id);
  CHECK(c->tenant_id == "acme");
  CHECK(c->provider == "sim");
  REQUIRE(c->evidence.size() == 1);
  const auto& e = c->evidence[0].as_object();
  CHECK(e.at("source").as_string() == "callback");
  CHECK(e.at("finding").as_string() == "late_contradiction");
  CHECK(e.at("provider").as_string() == "sim");
  CHECK(e.at("event_id").as_string() == first.event_id);
  CHECK(e.at("reference").as_string() == p.client_key);
  CHECK(e.at("status").as_string() == "succeeded");
  CHECK(e.at("amount_minor").as_int64() == 1000);
  CHECK(e.at("currency").as_string() == "EUR");
  REQUIRE(first.vendor_reference);
  CHECK(e.at("vendor_reference").as_string() == *first.vendor_reference);
  CHECK(e.at("decline_code").is_null());
  CHECK(e.at("payload").as_string() == first.payload);
  CHECK(e.at("at").as_string() == format_rfc3339(t0 + 10'000));

  // Another contradicting event: evidence on the same case, no second case or event.
  auto again = t.send(t.callback(p, CallbackStatus::succeeded), t0 + 11'000);
  CHECK(again.result == CallbackResult::late_contradiction);
  CHECK(again.case_id == out.case_id);
  CHECK_FALSE(again.event);
  CHECK(t.events(p, "payment.escalated") == 1);
  CHECK(s->count_rows("reconciliation_cases") == 1);
  c = t.find_case(*out.case_id);
  REQUIRE(c);
  CHECK(c->evidence.size() == 2);

  // Agreeing news confirms and writes nothing to the payment or the case.
  CHECK(t.send(t.callback(p, CallbackStatus::declined), t0 + 12'000).result == CallbackResult::confirmed);
  c = t.find_case(*out.case_id);
  REQUIRE(c);
  CHECK(c->evidence.size() == 2);
  CHECK(t.reload(p).state == PaymentState::failed_final);
  CHECK(t.reload(p).updated_at == t0 + 10'000);  // written by the escalation only
}

TEST_CASE_TEMPLATE("shared store: a callback amount or currency other than the intent is a callback_mismatch case",
                   D, PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  Callbacks t{*s};
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
    auto c = t.open_case(p);
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
    const auto joined = t.open_case(p);
    REQUIRE(joined);
    CHECK(joined->evidence.size() == 2);
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
    const auto opened = t.open_case(p);
    REQUIRE(opened);
    CHECK(opened->reason == "callback_mismatch");
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
    auto c = t.open_case(p);
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

TEST_CASE_TEMPLATE("shared store: a callback naming an unknown client_key is held in a case with no payment", D,
                   PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  Callbacks t{*s};
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
  CHECK(t.inbox_rows("payment_id IS NULL") == 1);

  auto c = t.find_case(*out.case_id);
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
  CHECK(c->evidence[0].at("finding").as_string() == "unknown_reference");
  CHECK(c->evidence[0].at("payload").as_string() == cb.payload);

  // A later event about the same reference joins the open case.
  VendorCallback later = t.callback(p, CallbackStatus::declined);
  later.client_key = cb.client_key;
  auto out2 = t.send(later, t0 + 21'000);
  CHECK(out2.case_id == out.case_id);
  c = t.find_case(*out.case_id);
  REQUIRE(c);
  CHECK(c->evidence.size() == 2);

  // Our key, named under another provider, is not ours either.
  VendorCallback elsewhere = t.callback(p, CallbackStatus::succeeded);
  elsewhere.provider = "other";
  auto out3 = t.send(elsewhere);
  CHECK(out3.result == CallbackResult::unknown_reference);
  CHECK(out3.case_id != out.case_id);
  REQUIRE(out3.case_id);
  c = t.find_case(*out3.case_id);
  REQUIRE(c);
  CHECK(c->provider == "other");
  CHECK(t.reload(p).state == PaymentState::processing);
}

TEST_CASE_TEMPLATE("shared store: a final callback resolves an open system case with the callback as evidence", D,
                   PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  Callbacks t{*s};
  for (CaseReason reason : {CaseReason::retry_budget_exhausted, CaseReason::unrecoverable_contract,
                            CaseReason::key_retention_expiring}) {
    CAPTURE(to_string(reason));
    Payment p = t.intake();
    t.apply(p, Trigger::submit_ambiguous);
    t.apply(p, Trigger::give_up, reason);
    const auto opened = t.open_case(p);
    REQUIRE(opened);
    const std::string case_id = opened->id;

    auto cb = t.callback(p, CallbackStatus::succeeded);
    auto out = t.send(cb, t0 + 30'000);
    CHECK(out.result == CallbackResult::applied);
    CHECK(out.event == EventType::succeeded);
    CHECK(out.case_id == case_id);
    CHECK(t.reload(p).state == PaymentState::succeeded);
    auto c = t.find_case(case_id);
    REQUIRE(c);
    CHECK(c->status == CaseStatus::resolved);
    CHECK(c->resolved_by == "system");
    CHECK(c->outcome == "succeeded");
    CHECK(c->resolved_at == t0 + 30'000);
    CHECK(c->note == "resolved by a verified vendor callback");
    REQUIRE(c->evidence.size() == 1);
    CHECK(c->evidence[0].at("event_id").as_string() == cb.event_id);
    CHECK(t.events(p, "payment.succeeded") == 1);
    // The event announces the payment with its case already resolved.
    const auto events = s->read([](Tx& tx) { return tx.list_events("acme", 0, 1000); }).events;
    REQUIRE_FALSE(events.empty());
    CHECK(events.back().payment_id == p.id);
    CHECK(boost::json::parse(events.back().payload).at("payment").at("reconciliation").at("status").as_string() ==
          "resolved");
  }
}

TEST_CASE_TEMPLATE("shared store: a case that is not the system's stays open and gets the callback", D,
                   PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  Callbacks t{*s};
  Payment p = t.intake();
  t.apply(p, Trigger::submit_key_mismatch);  // UNKNOWN + vendor_key_mismatch
  const auto opened = t.open_case(p);
  REQUIRE(opened);
  CHECK(opened->reason == "vendor_key_mismatch");
  CHECK(t.events(p, "payment.unknown") == 1);
  CHECK(t.events(p, "payment.escalated") == 1);  // after the state's own event
  auto out = t.send(t.callback(p, CallbackStatus::declined));
  CHECK(out.result == CallbackResult::applied);
  CHECK(out.case_id == opened->id);
  CHECK(t.reload(p).state == PaymentState::failed_final);
  auto c = t.find_case(opened->id);
  REQUIRE(c);
  CHECK(c->status == CaseStatus::open);
  CHECK(c->evidence.size() == 1);
}

TEST_CASE_TEMPLATE("shared store: a callback overtakes a worker's lease; the worker's late answer is fenced out", D,
                   PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  Callbacks t{*s};
  Payment p = t.intake();
  const auto leases = s->committed(
      [&](Tx& tx) { return tx.claim_due("worker-1", t0 + 1'000, Millis{30'000}, {{"sim", 1}}, 1); });
  REQUIRE(leases.size() == 1);
  const std::int64_t fence = leases[0].fence;

  auto out = t.send(t.callback(p, CallbackStatus::succeeded), t0 + 2'000);
  CHECK(out.result == CallbackResult::applied);
  Payment now = t.reload(p);
  CHECK(now.state == PaymentState::succeeded);
  CHECK_FALSE(now.lease_owner);
  CHECK(now.fence == fence + 1);  // the callback fences out the worker in flight

  auto submit_succeeded = transition(PaymentState::processing, Trigger::submit_succeeded);
  REQUIRE(submit_succeeded);
  TransitionUpdate u;
  u.next_attempt_at = t0 + 3'000;
  u.last_submit_ended_at = t0 + 3'000;
  CHECK(s->committed([&](Tx& tx) {
    return tx.apply_transition(p.id, fence, *submit_succeeded, u, t0 + 3'000, t.rng);
  }) == CasResult::stale_fence);
  CHECK(t.events(p, "payment.succeeded") == 1);
  CHECK(t.reload(p).updated_at == t0 + 2'000);
}

TEST_CASE_TEMPLATE("shared store: one callback delivered twice at once is applied once", D, PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  Callbacks t{*s};
  Payment p = t.intake();
  const VendorCallback cb = t.callback(p, CallbackStatus::succeeded, "evt_twice");
  std::vector<CallbackOutcome> outs(2);
  std::vector<std::function<void(Tx&)>> jobs;
  for (int i = 0; i < 2; ++i)
    jobs.push_back([&, i](Tx& tx) {
      SeededRandom rng(50 + i);
      outs[i] = tx.record_callback(cb, t0 + 5'000 + i, rng);
    });
  for (const auto& r : run_side_by_side(s->store(), std::move(jobs)))
    CHECK_MESSAGE(r.status == WriteStatus::committed, r.error);
  int applied = 0, duplicate = 0;
  for (const auto& o : outs) {
    applied += o.result == CallbackResult::applied;
    duplicate += o.result == CallbackResult::duplicate;
    CHECK(o.payment_id == p.id);
  }
  CHECK(applied == 1);
  CHECK(duplicate == 1);
  CHECK(s->count_rows("callback_inbox") == 1);
  CHECK(t.inbox_result("evt_twice") == "applied");
  CHECK(t.events(p, "payment.succeeded") == 1);
  CHECK(t.reload(p).state == PaymentState::succeeded);
  CHECK(s->transitions_seen().size() == 1);
}

TEST_CASE_TEMPLATE("shared store: two mismatching callbacks about one payment at once open one case", D,
                   PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  Callbacks t{*s};
  Payment p = t.intake();
  std::vector<VendorCallback> cbs;
  for (int i = 0; i < 2; ++i) {
    cbs.push_back(t.callback(p, CallbackStatus::succeeded));
    cbs.back().amount_minor = 900 + i;
  }
  std::vector<CallbackOutcome> outs(2);
  std::vector<std::function<void(Tx&)>> jobs;
  for (int i = 0; i < 2; ++i)
    jobs.push_back([&, i](Tx& tx) {
      SeededRandom rng(60 + i);
      outs[i] = tx.record_callback(cbs[i], t0 + 5'000, rng);
    });
  for (const auto& r : run_side_by_side(s->store(), std::move(jobs)))
    CHECK_MESSAGE(r.status == WriteStatus::committed, r.error);
  CHECK(outs[0].result == CallbackResult::mismatch);
  CHECK(outs[1].result == CallbackResult::mismatch);
  CHECK(outs[0].case_id == outs[1].case_id);
  CHECK(outs[0].event.has_value() != outs[1].event.has_value());  // one escalation
  CHECK(s->count_rows("reconciliation_cases") == 1);
  CHECK(t.events(p, "payment.escalated") == 1);
  const auto c = t.open_case(p);
  REQUIRE(c);
  CHECK(c->evidence.size() == 2);
}

TEST_CASE_TEMPLATE("shared store: two callbacks about one unknown reference at once share one case", D,
                   PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  Callbacks t{*s};
  Payment p = t.intake();
  std::vector<VendorCallback> cbs;
  for (int i = 0; i < 2; ++i) {
    cbs.push_back(t.callback(p, CallbackStatus::succeeded));
    cbs.back().client_key = "ck_NOBODYHASTHISKEY000000000";
  }
  std::vector<CallbackOutcome> outs(2);
  std::vector<std::function<void(Tx&)>> jobs;
  for (int i = 0; i < 2; ++i)
    jobs.push_back([&, i](Tx& tx) {
      SeededRandom rng(70 + i);
      outs[i] = tx.record_callback(cbs[i], t0 + 5'000, rng);
    });
  for (const auto& r : run_side_by_side(s->store(), std::move(jobs)))
    CHECK_MESSAGE(r.status == WriteStatus::committed, r.error);
  CHECK(outs[0].result == CallbackResult::unknown_reference);
  CHECK(outs[1].result == CallbackResult::unknown_reference);
  REQUIRE(outs[0].case_id);
  CHECK(outs[0].case_id == outs[1].case_id);
  CHECK(s->count_rows("reconciliation_cases") == 1);
  const auto c = t.find_case(*outs[0].case_id);
  REQUIRE(c);
  CHECK(c->evidence.size() == 2);
}

}  // namespace payorch::test
