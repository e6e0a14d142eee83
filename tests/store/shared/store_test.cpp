// How a Store answers a job, on each driver (store/store.h, store/writer.h WriteStatus): a job
// that commits is answered `committed` after its after_commit actions ran; one that throws is
// `rejected`, one that takes its work back `declined`, and neither writes nor runs an action.
#include <doctest/doctest.h>

#include <future>
#include <memory>
#include <stdexcept>

#include "support/store_fixture.h"
#include "support/store_under_test.h"

namespace payorch::test {
namespace {

using store::Tx;
using store::WriteStatus;

constexpr UnixMillis t0 = 1'700'000'000'000;

}  // namespace

TEST_CASE_TEMPLATE("shared store: a committed job's after_commit actions run before its answer", D,
                   PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  SeededRandom rng(1);
  int actions = 0;
  const JobResult r = s->run([&](Tx& tx) {
    tx.record_intake(intake_request("op-1"), t0, rng);
    tx.after_commit([&] { ++actions; });
  });
  CHECK(r.status == WriteStatus::committed);
  CHECK(r.error.empty());
  CHECK(actions == 1);
  CHECK(s->count_rows("payments") == 1);
  CHECK(s->store().health().writable);
  CHECK(s->store().health().last_commit_at.has_value());
}

TEST_CASE_TEMPLATE("shared store: a job that throws is rejected: nothing written, no action", D,
                   PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  SeededRandom rng(2);
  int actions = 0;
  const JobResult r = s->run([&](Tx& tx) {
    tx.record_intake(intake_request("op-1"), t0, rng);
    tx.after_commit([&] { ++actions; });
    throw std::runtime_error("the job refuses");
  });
  CHECK(r.status == WriteStatus::rejected);
  CHECK(r.error == "the job refuses");
  CHECK(actions == 0);
  CHECK(s->count_rows("payments") == 0);
  CHECK(s->count_rows("outbox") == 0);
  CHECK(s->store().health().writable);  // the job's refusal says nothing about the database
}

TEST_CASE_TEMPLATE("shared store: a judged job that takes its work back is declined", D,
                   PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  SeededRandom rng(3);
  int actions = 0;
  const JobResult declined = s->run_judged([&](Tx& tx) {
    tx.record_intake(intake_request("op-1"), t0, rng);
    tx.after_commit([&] { ++actions; });
    return store::Store::Verdict::take_back;
  });
  CHECK(declined.status == WriteStatus::declined);
  CHECK(actions == 0);
  CHECK(s->count_rows("payments") == 0);

  const JobResult kept = s->run_judged([&](Tx& tx) {
    tx.record_intake(intake_request("op-1"), t0, rng);
    tx.after_commit([&] { ++actions; });
    return store::Store::Verdict::keep;
  });
  CHECK(kept.status == WriteStatus::committed);
  CHECK(actions == 1);
  CHECK(s->count_rows("payments") == 1);
}

TEST_CASE_TEMPLATE("shared store: the readiness probes answer on a healthy database", D,
                   PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  auto answer = std::make_shared<std::promise<WriteStatus>>();
  s->store().probe_write([answer](WriteStatus st, const std::string&) { answer->set_value(st); });
  CHECK(answer->get_future().get() == WriteStatus::committed);
  CHECK_NOTHROW(s->store().probe_read());
  CHECK(s->store().queued() == 0);
  for (const auto& failed : s->store().storage_errors()) {
    CAPTURE(failed.first);
    CHECK(failed.second == 0);
  }
}

}  // namespace payorch::test
