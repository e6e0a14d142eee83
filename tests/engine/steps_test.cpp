// engine/steps: the claim round and the recording of vendor answers on a real database file,
// for what happens around a claim that is never sent and an answer that arrives too late.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "engine/steps.h"
#include "store/payments.h"
#include "store/leases.h"
#include "store/transitions.h"
#include "store/cases.h"
#include "store/exposure.h"
#include "store/intake.h"
#include "store/resolution.h"
#include "store/sqlite_store.h"
#include "support/store_fixture.h"

using namespace payorch;
using namespace payorch::store;
using namespace std::chrono_literals;

namespace {

constexpr UnixMillis t0 = 1'700'000'000'000;

struct StepsDb {
  StepsDb() {
    contract.recovery = RecoveryMode::lookup;
    contract.not_found_final_after = Millis(30s);
    contract.key_retention = 24h;
    contract.request_timeout = 10s;
    contract.lease = 30s;
    contracts["sim"] = contract;
  }
  test::TempDatabase file{"steps", t0};
  Db* db = file.db.get();
  store::SqliteTx sqlite{*db};  // the steps' view of it
  SeededRandom rng{7};
  Contract contract;
  std::map<std::string, Contract> contracts;

  Payment intake(const std::string& operation_id) { return test::created_payment(*db, operation_id, t0, rng); }

  // One claim round at `now`; the payments it gave up on and wants fenced go to `fences`.
  std::vector<engine::Call> claim(UnixMillis now, std::vector<engine::FenceCall>* fences = nullptr) {
    engine::ClaimRound round;
    round.owner = "worker-1";
    round.now = now;
    round.lease = contract.lease;
    round.max = 10;
    round.contracts = &contracts;
    round.quotas = {{"sim", 10}};
    Transaction tx(*db);
    auto calls = engine::claim_round(sqlite, round, rng, fences);
    tx.commit();
    return calls;
  }

  CasResult record(const engine::Call& call, providers::VendorResult result, UnixMillis now) {
    Transaction tx(*db);
    auto r = engine::record_outcome(sqlite, call, result, now, 0.5, rng, nullptr);
    tx.commit();
    return r;
  }

  std::vector<std::string> events(const Payment& p) {
    auto st = db->prepare("SELECT type FROM outbox WHERE payment_id = ? ORDER BY seq");
    st.bind(1, p.id);
    std::vector<std::string> out;
    while (st.step()) out.push_back(st.col_text(0));
    return out;
  }

  Payment reload(const Payment& p) { return test::stored_payment(*db, p.id); }
};

providers::VendorResult answer(VendorOutcome o, std::optional<std::string> reference = std::nullopt) {
  providers::VendorResult r;
  r.outcome = o;
  r.vendor_reference = std::move(reference);
  r.http_status = 200;
  r.detail = "test answer";
  return r;
}

}  // namespace

TEST_CASE("a claim never sent is undone: the payment stays PROCESSING, never an interrupted submit") {
  StepsDb t;
  Payment p = t.intake("op-unsent");
  auto calls = t.claim(t0 + 1'000);
  REQUIRE(calls.size() == 1);
  CHECK(calls[0].call == CallKind::submit);
  CHECK(t.reload(p).attempt_count == 1);
  CHECK(exposure(*t.db).size() == 1);  // a submit marked started counts as exposed

  {
    Transaction tx(*t.db);
    engine::unclaim(t.sqlite, calls[0], t0 + 2'000);
    tx.commit();
  }
  Payment after = t.reload(p);
  CHECK(after.state == PaymentState::processing);
  CHECK(after.next_action == NextAction::submit);
  CHECK(after.attempt_count == 0);
  CHECK_FALSE(after.first_submit_at);
  CHECK_FALSE(after.last_submit_started_at);
  CHECK_FALSE(after.lease_owner);
  CHECK(after.next_attempt_at == t0 + 2'000);
  CHECK(exposure(*t.db).empty());
  CHECK(exposure_differences(*t.db).empty());

  // The next claim sends it as a first submit: no UNKNOWN, no payment.unknown.
  auto again = t.claim(t0 + 3'000);
  REQUIRE(again.size() == 1);
  CHECK(again[0].call == CallKind::submit);
  CHECK(t.reload(p).state == PaymentState::processing);
  CHECK(t.reload(p).attempt_count == 1);
  CHECK(t.events(p) == std::vector<std::string>{"payment.created"});

  // A claim whose lease was taken over meanwhile is not undone: the marks stay.
  {
    Transaction tx(*t.db);
    REQUIRE(claim_lease(*t.db, p.id, "worker-2", t0 + 40'000, 30s));
    engine::unclaim(t.sqlite, again[0], t0 + 40'001);
    tx.commit();
  }
  CHECK(t.reload(p).attempt_count == 1);
  CHECK(t.reload(p).last_submit_started_at == t0 + 3'000);
}

TEST_CASE("a stale final answer reaching a payment held in a case becomes that case's evidence") {
  StepsDb t;
  Payment p = t.intake("op-held");
  auto calls = t.claim(t0 + 1'000);
  REQUIRE(calls.size() == 1);
  // While the call is out, a callback about the payment disagrees on the amount: a case holds
  // it (no lease: the fence moves on).
  {
    Transaction tx(*t.db);
    hold_with_evidence(*t.db, t.reload(p), mismatch_escalation(PaymentState::processing),
                       boost::json::object{{"source", "callback"}, {"amount_minor", 999}}, t0 + 2'000, t.rng);
    tx.commit();
  }
  CHECK(t.record(calls[0], answer(VendorOutcome::succeeded, "ch_late"), t0 + 3'000) ==
        CasResult::stale_fence);
  Payment after = t.reload(p);
  CHECK(after.state == PaymentState::processing);  // a human decides, not the stale worker
  auto open = find_open_case(*t.db, p.id);
  REQUIRE(open);
  CHECK(open->reason == "callback_mismatch");
  REQUIRE(open->evidence.size() == 2);
  const auto& vendor = open->evidence[1].as_object();
  CHECK(vendor.at("source").as_string() == "vendor");
  CHECK(vendor.at("what").as_string() == "succeeded");
  CHECK(vendor.at("vendor_reference").as_string() == "ch_late");
  CHECK(vendor.at("fence").as_int64() == calls[0].fence);

  // A non-final answer (pending) adds nothing.
  CHECK(t.record(calls[0], answer(VendorOutcome::pending, "ch_late"), t0 + 4'000) == CasResult::stale_fence);
  CHECK(test::stored_open_case(*t.db, p.id).evidence.size() == 2);
}

TEST_CASE("a submit the vendor refuses for a reused key announces both UNKNOWN and the case") {
  StepsDb t;
  Payment p = t.intake("op-key");
  auto calls = t.claim(t0 + 1'000);
  REQUIRE(calls.size() == 1);
  CHECK(t.record(calls[0], answer(VendorOutcome::key_mismatch), t0 + 2'000) == CasResult::applied);
  CHECK(t.reload(p).state == PaymentState::unknown);
  auto open = find_open_case(*t.db, p.id);
  REQUIRE(open);
  CHECK(open->reason == "vendor_key_mismatch");
  CHECK(t.events(p) == std::vector<std::string>{"payment.created", "payment.unknown", "payment.escalated"});
}

TEST_CASE("fence_wanted: payments that may have been charged, given up for budget, key retention or contract") {
  Payment p;
  p.first_submit_at = t0;
  CHECK(engine::fence_wanted(p, CaseReason::retry_budget_exhausted));
  CHECK(engine::fence_wanted(p, CaseReason::key_retention_expiring));
  CHECK(engine::fence_wanted(p, CaseReason::unrecoverable_contract));
  // The vendor holds another request under this reference: cancelling by it could void that one.
  CHECK_FALSE(engine::fence_wanted(p, CaseReason::vendor_key_mismatch));
  CHECK_FALSE(engine::fence_wanted(p, CaseReason::late_contradiction));
  CHECK_FALSE(engine::fence_wanted(p, CaseReason::callback_mismatch));
  CHECK_FALSE(engine::fence_wanted(p, CaseReason::payment_corrected));
  Payment never_sent;  // no submit ever started
  CHECK_FALSE(engine::fence_wanted(never_sent, CaseReason::retry_budget_exhausted));
  Payment refund = p;
  refund.refund_of = RefundOf{};
  CHECK_FALSE(engine::fence_wanted(refund, CaseReason::retry_budget_exhausted));
}

TEST_CASE("fence_evidence: the fence's answer, the case reason and the attempt count") {
  Payment p;
  p.attempt_count = 3;
  providers::VendorResult r = answer(VendorOutcome::pending, "PSP123");
  r.http_status = 201;
  const auto e = engine::fence_evidence(p, CaseReason::key_retention_expiring, r, t0);
  CHECK(e.at("source").as_string() == "vendor_fence");
  CHECK(e.at("what").as_string() == "pending");
  CHECK(e.at("case_reason").as_string() == "key_retention_expiring");
  CHECK(e.at("http_status").as_int64() == 201);
  CHECK(e.at("vendor_reference").as_string() == "PSP123");
  CHECK(e.at("attempt_count").as_int64() == 3);
  CHECK(e.at("detail").as_string() == "test answer");
  const auto bare = engine::fence_evidence(p, CaseReason::retry_budget_exhausted,
                                           answer(VendorOutcome::ambiguous), t0);
  CHECK_FALSE(bare.contains("vendor_reference"));
}

TEST_CASE("give-ups report the payments to fence: from record_outcome and from the claim round, once each") {
  StepsDb t;
  // record_outcome: a lookup the adapter cannot make gives up (unrecoverable_contract) in the
  // transaction that records the answer.
  Payment unsupported = t.intake("op-unsupported");
  auto calls = t.claim(t0 + 1'000);
  REQUIRE(calls.size() == 1);
  std::vector<engine::FenceCall> fences;
  auto record = [&](const engine::Call& c, VendorOutcome o, UnixMillis at) {
    Transaction tx(*t.db);
    const CasResult r = engine::record_outcome(t.sqlite, c, answer(o), at, 0.5, t.rng, nullptr, &fences);
    tx.commit();
    return r;
  };
  CHECK(record(calls[0], VendorOutcome::ambiguous, t0 + 2'000) == CasResult::applied);
  CHECK(fences.empty());  // UNKNOWN, recovery goes on
  auto query = t.claim(t0 + 10'000);
  REQUIRE(query.size() == 1);
  CHECK(query[0].call == CallKind::query);
  CHECK(record(query[0], VendorOutcome::unsupported, t0 + 10'500) == CasResult::applied);
  REQUIRE(fences.size() == 1);
  CHECK(fences[0].payment.id == unsupported.id);
  CHECK(fences[0].payment.client_key == unsupported.client_key);
  CHECK(fences[0].reason == CaseReason::unrecoverable_contract);
  CHECK(t.reload(unsupported).state == PaymentState::unknown);
  REQUIRE(find_open_case(*t.db, unsupported.id));

  // A key mismatch opens its case without a fence.
  t.contract.give_up_after = 10s;
  t.contracts["sim"] = t.contract;
  Payment mismatched = t.intake("op-mismatch");
  Payment late = t.intake("op-late");
  auto second = t.claim(t0 + 12'000);
  REQUIRE(second.size() == 2);
  fences.clear();
  for (const auto& c : second)
    record(c, c.payment.id == mismatched.id ? VendorOutcome::key_mismatch : VendorOutcome::ambiguous, t0 + 13'000);
  CHECK(fences.empty());
  CHECK(test::stored_open_case(*t.db, mismatched.id).reason == "vendor_key_mismatch");
  CHECK(t.reload(late).state == PaymentState::unknown);

  // The claim round: give_up_after has passed since the first submit of `late`.
  CHECK(t.claim(t0 + 30'000, &fences).empty());
  REQUIRE(fences.size() == 1);
  CHECK(fences[0].payment.id == late.id);
  CHECK(fences[0].reason == CaseReason::retry_budget_exhausted);
  CHECK(t.reload(late).state == PaymentState::unknown);  // the fence is the caller's, later
  REQUIRE(find_open_case(*t.db, late.id));
  CHECK(test::stored_open_case(*t.db, late.id).reason == "retry_budget_exhausted");

  // After a restart: both given-up payments are owed a fence (the key mismatch never is), until
  // their case carries a fence's answer; a provider without a fence is owed nothing.
  auto owed_ids = [&](const std::vector<std::string>& providers) {
    Transaction tx(*t.db);
    std::vector<std::string> ids;
    for (const auto& f : engine::fences_owed(t.sqlite, providers)) ids.push_back(f.payment.id);
    std::sort(ids.begin(), ids.end());
    tx.commit();
    return ids;
  };
  std::vector<std::string> both{unsupported.id, late.id};
  std::sort(both.begin(), both.end());
  CHECK(owed_ids({"sim"}) == both);
  CHECK(owed_ids({"adyen"}).empty());
  CHECK(owed_ids({}).empty());
  {
    Transaction tx(*t.db);
    REQUIRE(t.sqlite.append_open_case_evidence(
        late.id, engine::fence_evidence(t.reload(late), CaseReason::retry_budget_exhausted,
                                        answer(VendorOutcome::pending), t0 + 31'000),
        t0 + 31'000));
    tx.commit();
  }
  CHECK(owed_ids({"sim"}) == std::vector<std::string>{unsupported.id});
}

namespace {

// A payment whose budget (max_attempts 1) is spent by one pending submit, under a confirmed
// close with close_not_before 5 min. Returns the claim round's calls at `at`.
struct ClosingDb : StepsDb {
  ClosingDb() {
    contract.confirmed_close = true;
    contract.close_not_before = Millis(5min);
    contract.max_attempts = 1;
    contract.not_found_final_after.reset();
    contracts["sim"] = contract;
  }
  UnixMillis submitted_at = t0 + 2'000;
  Payment pending_payment(const std::string& operation_id) {
    Payment p = intake(operation_id);
    auto calls = claim(t0 + 1'000);
    REQUIRE(calls.size() == 1);
    REQUIRE(record(calls[0], answer(VendorOutcome::pending), submitted_at) == CasResult::applied);
    return reload(p);
  }
  std::vector<std::string> evidence_sources(const Payment& p) {
    std::vector<std::string> out;
    auto open = find_open_case(*db, p.id);
    if (!open) return out;
    for (const auto& e : open->evidence) out.emplace_back(e.as_object().at("source").as_string());
    return out;
  }
};

}  // namespace

TEST_CASE("confirmed close: a spent budget closes at the vendor, then a query confirms closed and unpaid: FAILED_FINAL") {
  ClosingDb t;
  Payment p = t.pending_payment("op-close");
  std::vector<engine::FenceCall> fences;
  // Before close_not_before has passed since the submit ended: rescheduled, no case, no call.
  CHECK(t.claim(t.submitted_at + 60'000, &fences).empty());
  CHECK(t.reload(p).next_attempt_at == t.submitted_at + 5 * 60'000);
  CHECK_FALSE(find_open_case(*t.db, p.id));
  auto close = t.claim(t.submitted_at + 5 * 60'000, &fences);
  REQUIRE(close.size() == 1);
  CHECK(close[0].call == CallKind::close);
  CHECK(close[0].stopping == CaseReason::retry_budget_exhausted);
  const UnixMillis closed_at = t.submitted_at + 5 * 60'000 + 500;
  CHECK(t.record(close[0], answer(VendorOutcome::succeeded), closed_at) == CasResult::applied);
  Payment after_close = t.reload(p);
  CHECK(after_close.vendor_closed_at == closed_at);
  CHECK(after_close.state == PaymentState::processing);
  CHECK(t.events(p) == std::vector<std::string>{"payment.created"});

  auto confirm = t.claim(closed_at, &fences);
  REQUIRE(confirm.size() == 1);
  CHECK(confirm[0].call == CallKind::query);
  CHECK(confirm[0].stopping);
  providers::VendorResult closed = answer(VendorOutcome::declined);
  closed.decline_code = "CLOSED";
  CHECK(t.record(confirm[0], closed, closed_at + 100) == CasResult::applied);
  Payment done = t.reload(p);
  CHECK(done.state == PaymentState::failed_final);
  CHECK(done.failure_code == "CLOSED");
  CHECK(done.failure_message->find("retry_budget_exhausted") != std::string::npos);
  CHECK_FALSE(find_open_case(*t.db, p.id));
  CHECK(t.events(p) == std::vector<std::string>{"payment.created", "payment.failed"});
  CHECK(fences.empty());  // the close was the fence: nothing more is sent
}

TEST_CASE("confirmed close: a close refused (the order is paid) or a confirming query that is not closed-and-unpaid opens the case with the evidence") {
  ClosingDb t;
  const UnixMillis at = t.submitted_at + 5 * 60'000;
  std::vector<engine::FenceCall> fences;

  SUBCASE("the vendor refuses the close: paid at the same moment") {
    Payment p = t.pending_payment("op-paid");
    auto close = t.claim(at, &fences);
    REQUIRE(close.size() == 1);
    providers::VendorResult paid = answer(VendorOutcome::declined);
    paid.decline_code = "ORDERPAID";
    CHECK(t.record(close[0], paid, at + 100) == CasResult::applied);
    Payment held = t.reload(p);
    CHECK(held.state == PaymentState::processing);
    CHECK_FALSE(held.vendor_closed_at);
    REQUIRE(find_open_case(*t.db, p.id));
    CHECK(test::stored_open_case(*t.db, p.id).reason == "retry_budget_exhausted");
    CHECK(t.evidence_sources(p) == std::vector<std::string>{"vendor_fence"});
    CHECK(t.claim(at + 200, &fences).empty());  // automatic work has stopped
  }
  SUBCASE("the close is accepted, the query does not confirm") {
    for (VendorOutcome o : {VendorOutcome::succeeded, VendorOutcome::pending, VendorOutcome::not_found,
                            VendorOutcome::ambiguous}) {
      CAPTURE(to_string(o));
      Payment p = t.pending_payment("op-query-" + std::string(to_string(o)));
      auto close = t.claim(at, &fences);
      REQUIRE(close.size() == 1);
      CHECK(t.record(close[0], answer(VendorOutcome::succeeded), at + 100) == CasResult::applied);
      auto confirm = t.claim(at + 100, &fences);
      REQUIRE(confirm.size() == 1);
      CHECK(t.record(confirm[0], answer(o, "tx_1"), at + 200) == CasResult::applied);
      Payment held = t.reload(p);
      CHECK(held.state == PaymentState::processing);
      REQUIRE(find_open_case(*t.db, p.id));
      // The accepted close and what the query said, both on the case.
      CHECK(t.evidence_sources(p) == std::vector<std::string>{"vendor_fence", "vendor"});
      CHECK(t.events(p) == std::vector<std::string>{"payment.created", "payment.escalated"});
      // No fence is owed after a restart: the case has the close's answer.
      Transaction tx(*t.db);
      CHECK(engine::fences_owed(t.sqlite, {"sim"}).empty());
      tx.commit();
    }
  }
  CHECK(fences.empty());
}

TEST_CASE("confirmed close: a stale worker's close answer changes nothing") {
  ClosingDb t;
  Payment p = t.pending_payment("op-stale-close");
  const UnixMillis at = t.submitted_at + 5 * 60'000;
  auto close = t.claim(at, nullptr);
  REQUIRE(close.size() == 1);
  // The lease lapses and another worker claims: the first worker's answer is stale.
  auto again = t.claim(at + 31'000, nullptr);
  REQUIRE(again.size() == 1);
  CHECK(again[0].fence > close[0].fence);
  CHECK(t.record(close[0], answer(VendorOutcome::succeeded), at + 32'000) == CasResult::stale_fence);
  CHECK_FALSE(t.reload(p).vendor_closed_at);
  CHECK(t.record(again[0], answer(VendorOutcome::succeeded), at + 32'000) == CasResult::applied);
  CHECK(t.reload(p).vendor_closed_at == at + 32'000);
}

TEST_CASE("confirmed close: an operator's failed_final is carried out by the close and its confirming query") {
  ClosingDb t;
  const UnixMillis at = t.submitted_at + 5 * 60'000;
  // The budget is spent and the close gets no answer: a case for a human.
  Payment p = t.pending_payment("op-operator");
  auto close = t.claim(at, nullptr);
  REQUIRE(close.size() == 1);
  CHECK(t.record(close[0], answer(VendorOutcome::ambiguous), at + 100) == CasResult::applied);
  auto open = find_open_case(*t.db, p.id);
  REQUIRE(open);

  Resolution failed;
  failed.outcome = ResolutionOutcome::failed_final;
  failed.note = "the customer never scanned the code";
  failed.by = "alice";
  ResolveResult r;
  {
    Transaction tx(*t.db);
    r = resolve_case(*t.db, open->id, failed, t.contract, at + 1'000, t.rng);
    tx.commit();
  }
  REQUIRE(std::holds_alternative<Resolved>(r));
  // The case is closed; the payment is not FAILED_FINAL yet, and automatic work resumes.
  Payment stopping = t.reload(p);
  CHECK(stopping.state == PaymentState::processing);
  CHECK(stopping.stop_requested_at == at + 1'000);
  CHECK(stopping.fence > close[0].fence);
  CHECK_FALSE(find_open_case(*t.db, p.id));

  SUBCASE("the vendor closes it and shows it unpaid: FAILED_FINAL") {
    auto again = t.claim(at + 1'000, nullptr);
    REQUIRE(again.size() == 1);
    CHECK(again[0].call == CallKind::close);
    CHECK(t.record(again[0], answer(VendorOutcome::succeeded), at + 1'100) == CasResult::applied);
    auto confirm = t.claim(at + 1'100, nullptr);
    REQUIRE(confirm.size() == 1);
    CHECK(confirm[0].call == CallKind::query);
    CHECK(t.record(confirm[0], answer(VendorOutcome::declined), at + 1'200) == CasResult::applied);
    CHECK(t.reload(p).state == PaymentState::failed_final);
  }
  SUBCASE("the user paid meanwhile: the close is refused and a new case opens, never FAILED_FINAL") {
    auto again = t.claim(at + 1'000, nullptr);
    REQUIRE(again.size() == 1);
    CHECK(t.record(again[0], answer(VendorOutcome::declined), at + 1'100) == CasResult::applied);
    CHECK(t.reload(p).state == PaymentState::processing);
    REQUIRE(find_open_case(*t.db, p.id));
    CHECK(test::stored_open_case(*t.db, p.id).id != open->id);
  }
  SUBCASE("without a confirmed close, failed_final is recorded at once") {
    Payment q = t.pending_payment("op-direct");
    Contract plain = t.contract;
    plain.confirmed_close = false;
    auto c2 = t.claim(at, nullptr);
    REQUIRE(c2.size() == 1);
    CHECK(t.record(c2[0], answer(VendorOutcome::ambiguous), at + 100) == CasResult::applied);
    Transaction tx(*t.db);
    auto r2 = resolve_case(*t.db, test::stored_open_case(*t.db, q.id).id, failed, plain, at + 2'000, t.rng);
    tx.commit();
    REQUIRE(std::holds_alternative<Resolved>(r2));
    CHECK(t.reload(q).state == PaymentState::failed_final);
    CHECK_FALSE(t.reload(q).stop_requested_at);
  }
}

TEST_CASE("confirmed close: a retry after an operator's stop withdraws it") {
  ClosingDb t;
  const UnixMillis at = t.submitted_at + 5 * 60'000;
  Payment p = t.pending_payment("op-stop-then-retry");
  auto close = t.claim(at, nullptr);
  REQUIRE(close.size() == 1);
  CHECK(t.record(close[0], answer(VendorOutcome::ambiguous), at + 100) == CasResult::applied);
  auto resolve = [&](ResolutionOutcome outcome, UnixMillis when) {
    Resolution r;
    r.outcome = outcome;
    r.note = "test";
    r.by = "alice";
    Transaction tx(*t.db);
    auto result = resolve_case(*t.db, test::stored_open_case(*t.db, p.id).id, r, t.contract, when, t.rng);
    tx.commit();
    REQUIRE(std::holds_alternative<Resolved>(result));
  };
  resolve(ResolutionOutcome::failed_final, at + 1'000);
  // The user paid meanwhile: the close is refused, a new case opens; the operator retries.
  auto again = t.claim(at + 1'000, nullptr);
  REQUIRE(again.size() == 1);
  CHECK(t.record(again[0], answer(VendorOutcome::declined), at + 1'100) == CasResult::applied);
  resolve(ResolutionOutcome::retry, at + 2'000);
  CHECK_FALSE(t.reload(p).stop_requested_at);
  auto retried = t.claim(at + 2'000, nullptr);
  REQUIRE(retried.size() == 1);
  CHECK(retried[0].call != CallKind::close);  // a fresh budget, no stop: what retry resumes
  CHECK_FALSE(retried[0].stopping);
}

TEST_CASE("fits_in_lease: a call is sent only if every request it makes ends before its lease lapses") {
  engine::Call call;
  call.contract.request_timeout = 10s;
  const UnixMillis now = 1'700'000'000'000;
  CHECK_FALSE(engine::fits_in_lease(call, now));  // no lease at all
  call.payment.lease_expires_at = now + 15'000;
  CHECK(engine::fits_in_lease(call, now));
  CHECK(engine::fits_in_lease(call, now + 5'000));
  CHECK_FALSE(engine::fits_in_lease(call, now + 5'001));
  // Two requests in a row (WeChat Pay's refund, Alipay's close): 20 s are needed.
  call.contract.requests_per_call = 2;
  CHECK_FALSE(engine::fits_in_lease(call, now));
  call.payment.lease_expires_at = now + 20'000;
  CHECK(engine::fits_in_lease(call, now));
}
