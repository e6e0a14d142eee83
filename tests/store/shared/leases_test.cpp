// Claims and leases through store::Tx, on each driver (store/leases.h): due work claimed
// oldest first within each provider's quota, fence + 1 on every claim, a leased payment not due
// again before its lease lapses, fenced call marks, and leases given back. Two claims at once
// never take the same payment.
#include <doctest/doctest.h>

#include <algorithm>
#include <future>
#include <set>
#include <string>
#include <vector>

#include "support/store_fixture.h"
#include "support/store_under_test.h"

namespace payorch::test {
namespace {

using store::ClaimQuota;
using store::Lease;
using store::Tx;
using store::WriteStatus;

constexpr UnixMillis t0 = 1'700'000'000'000;
constexpr Millis lease{30'000};

// `n` payments of provider sim, due at t0, t0+1, ...; their ids in that order.
std::vector<std::string> due_payments(StoreUnderTest& s, int n) {
  SeededRandom rng(9);
  std::vector<std::string> ids;
  for (int i = 0; i < n; ++i)
    REQUIRE(s.run([&](Tx& tx) {
               ids.push_back(tx.record_intake(intake_request("op-" + std::to_string(i)), t0 + i, rng).payment.id);
             }).status == WriteStatus::committed);
  return ids;
}

std::vector<Lease> claim(StoreUnderTest& s, const std::string& owner, UnixMillis now,
                         const std::vector<ClaimQuota>& quotas, int max) {
  return s.committed([&](Tx& tx) { return tx.claim_due(owner, now, lease, quotas, max); });
}

std::vector<std::string> ids_of(const std::vector<Lease>& leases) {
  std::vector<std::string> out;
  for (const auto& l : leases) out.push_back(l.payment_id);
  return out;
}

}  // namespace

TEST_CASE_TEMPLATE("shared store: claim_due claims due work oldest first, within the quotas", D,
                   PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  const auto ids = due_payments(*s, 3);
  CHECK(claim(*s, "node-a", t0 - 1, {{"sim", 10}}, 10).empty());  // nothing due yet
  CHECK(claim(*s, "node-a", t0 + 10, {{"other", 10}}, 10).empty());  // not this provider
  CHECK(claim(*s, "node-a", t0 + 10, {{"sim", 0}}, 10).empty());

  const auto first = claim(*s, "node-a", t0 + 10, {{"sim", 2}}, 10);
  CHECK(ids_of(first) == std::vector<std::string>{ids[0], ids[1]});
  for (const auto& l : first) {
    CHECK(l.fence == 1);
    CHECK(l.owner == "node-a");
    CHECK(l.expires_at == t0 + 10 + lease.count());
    CHECK(l.state == PaymentState::processing);
  }
  const Payment leased = s->payment(ids[0]);
  CHECK(leased.lease_owner == "node-a");
  CHECK(leased.lease_expires_at == t0 + 10 + lease.count());
  CHECK(leased.next_attempt_at == t0 + 10 + lease.count());
  CHECK(leased.fence == 1);

  CHECK(ids_of(claim(*s, "node-b", t0 + 20, {{"sim", 10}}, 1)) == std::vector<std::string>{ids[2]});
  CHECK(claim(*s, "node-b", t0 + 20, {{"sim", 10}}, 10).empty());  // all leased

  // Once node-a's lease lapses its payments are due again, with a new fence.
  const auto again = claim(*s, "node-b", t0 + 10 + lease.count(), {{"sim", 10}}, 10);
  CHECK(ids_of(again) == std::vector<std::string>{ids[0], ids[1]});
  for (const auto& l : again) CHECK(l.fence == 2);
}

TEST_CASE_TEMPLATE("shared store: claim_due answers its leases oldest due first, not in the order the rows were written", D,
                   PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  const auto ids = due_payments(*s, 4);
  REQUIRE(claim(*s, "node-a", t0 + 10, {{"sim", 10}}, 10).size() == 4);
  // Given back due in an order that is neither their ids' nor that of the writes: ids[2],
  // ids[0], ids[3], ids[1].
  const std::vector<UnixMillis> due_at{t0 + 60, t0 + 80, t0 + 50, t0 + 70};
  for (std::size_t i = 0; i < 4; ++i) {
    const std::string& id = ids[i];
    const UnixMillis at = due_at[i];
    REQUIRE(s->committed([&](Tx& tx) { return tx.release_lease(id, 1, at); }));
  }
  const auto leases = claim(*s, "node-b", t0 + 200, {{"sim", 10}}, 3);
  CHECK(ids_of(leases) == std::vector<std::string>{ids[2], ids[0], ids[3]});
  for (const auto& l : leases) {
    CHECK(l.fence == 2);
    CHECK(l.owner == "node-b");
    CHECK(l.expires_at == t0 + 200 + lease.count());
  }
  CHECK(s->payment(ids[1]).fence == 1);  // past the round's max: not claimed
  CHECK(s->payment(ids[2]).lease_owner == "node-b");
}

TEST_CASE_TEMPLATE("shared store: call marks and lease releases are fenced", D, PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  const auto ids = due_payments(*s, 2);
  const auto leases = claim(*s, "node-a", t0 + 10, {{"sim", 10}}, 10);
  REQUIRE(leases.size() == 2);
  const std::string id = ids[0];

  CHECK_FALSE(s->committed([&](Tx& tx) { return tx.record_call_started(id, 0, true, t0 + 11, nullptr); }));
  Payment claimed = s->payment(id);
  CHECK(s->committed([&](Tx& tx) { return tx.record_call_started(id, 1, true, t0 + 11, &claimed); }));
  CHECK(claimed.attempt_count == 1);
  CHECK(claimed.first_submit_at == t0 + 11);
  CHECK(claimed.last_submit_started_at == t0 + 11);
  CHECK(s->committed([&](Tx& tx) { return tx.record_call_started(id, 1, false, t0 + 12, &claimed); }));
  CHECK(claimed.attempt_count == 2);
  CHECK(claimed.first_submit_at == t0 + 11);  // stamped once
  CHECK(claimed.last_submit_started_at == t0 + 11);  // a query is not a submit
  const Payment read_back = s->payment(id);
  CHECK(read_back.attempt_count == 2);
  CHECK(read_back.first_submit_at == t0 + 11);

  const store::CallMarks before{};
  CHECK_FALSE(s->committed([&](Tx& tx) { return tx.undo_call_started(id, 2, before, t0 + 500); }));
  CHECK(s->committed([&](Tx& tx) { return tx.undo_call_started(id, 1, before, t0 + 500); }));
  const Payment undone = s->payment(id);
  CHECK(undone.attempt_count == 0);
  CHECK_FALSE(undone.first_submit_at.has_value());
  CHECK_FALSE(undone.last_submit_started_at.has_value());
  CHECK_FALSE(undone.lease_owner.has_value());
  CHECK_FALSE(undone.lease_expires_at.has_value());
  CHECK(undone.next_attempt_at == t0 + 500);
  CHECK(undone.fence == 1);

  CHECK_FALSE(s->committed([&](Tx& tx) { return tx.release_lease(ids[1], 7, t0 + 900); }));
  CHECK(s->committed([&](Tx& tx) { return tx.release_lease(ids[1], 1, t0 + 900); }));
  const Payment released = s->payment(ids[1]);
  CHECK_FALSE(released.lease_owner.has_value());
  CHECK(released.next_attempt_at == t0 + 900);

  CHECK(claim(*s, "node-b", t0 + 1000, {{"sim", 10}}, 10).size() == 2);
  int count = -1;
  REQUIRE(s->run([&](Tx& tx) { count = tx.release_leases_of("node-b"); }).status == WriteStatus::committed);
  CHECK(count == 2);
  REQUIRE(s->run([&](Tx& tx) { count = tx.release_leases_of("node-b"); }).status == WriteStatus::committed);
  CHECK(count == 0);
  CHECK_FALSE(s->payment(ids[0]).lease_owner.has_value());
}

TEST_CASE_TEMPLATE("shared store: simultaneous claims never take the same payment", D, PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  const auto ids = due_payments(*s, 12);
  constexpr int claimants = 4;
  std::vector<std::promise<std::vector<Lease>>> claims(claimants);
  std::vector<std::vector<Lease>> results(claimants);
  for (int i = 0; i < claimants; ++i) {
    s->store().submit(
        [&, i](Tx& tx) {
          results[i] = tx.claim_due("node-" + std::to_string(i), t0 + 100, lease, {{"sim", 5}}, 5);
        },
        [&, i](WriteStatus st, const std::string& error) {
          CHECK_MESSAGE(st == WriteStatus::committed, error);
          claims[i].set_value(results[i]);
        });
  }
  std::multiset<std::string> claimed;
  for (auto& c : claims)
    for (const auto& l : c.get_future().get()) {
      CHECK(l.fence == 1);
      claimed.insert(l.payment_id);
    }
  std::set<std::string> distinct(claimed.begin(), claimed.end());
  CHECK(distinct.size() == claimed.size());  // no payment claimed twice
  CHECK(claimed.size() <= ids.size());
  // What the claims passed over is still due, and a later claim takes exactly that.
  const auto rest = claim(*s, "node-z", t0 + 100, {{"sim", 100}}, 100);
  CHECK(rest.size() + claimed.size() == ids.size());
}

}  // namespace payorch::test
