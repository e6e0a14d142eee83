#pragma once
// Jobs started together, for the shared store tests of operations that several nodes may run on
// one payment at once. Each job first waits at a rendezvous for the others (at most `patience`),
// so that where the store runs jobs side by side (PostgreSQL: several job threads, each job a
// transaction of its own) they decide before any of them commits; where it runs them one at a
// time (SQLite's single writer) each waits out its patience and goes on alone.
#include <chrono>
#include <condition_variable>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <vector>

#include "support/store_under_test.h"

namespace payorch::test {

class Rendezvous {
public:
  Rendezvous(int parties, std::chrono::milliseconds patience) : parties_(parties), patience_(patience) {}

  // Waits until `parties` jobs have arrived or patience runs out. A job run again (after a
  // conflict) passes straight through.
  void arrive() {
    std::unique_lock lock(mu_);
    ++arrived_;
    cv_.notify_all();
    cv_.wait_for(lock, patience_, [&] { return arrived_ >= parties_; });
  }

private:
  std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ = 0;
  const int parties_;
  const std::chrono::milliseconds patience_;
};

// Submits every job at once, each meeting the others at a rendezvous before its work, and
// waits for every answer (a job's own results are whatever its last run left).
inline std::vector<JobResult> run_side_by_side(store::Store& store,
                                               std::vector<std::function<void(store::Tx&)>> jobs) {
  auto meet = std::make_shared<Rendezvous>(static_cast<int>(jobs.size()), std::chrono::milliseconds(300));
  std::vector<std::promise<JobResult>> answers(jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i)
    store.submit(
        [meet, job = std::move(jobs[i])](store::Tx& tx) {
          meet->arrive();
          job(tx);
        },
        [&answers, i](store::WriteStatus st, const std::string& error) {
          answers[i].set_value(JobResult{st, error});
        });
  std::vector<JobResult> out;
  for (auto& a : answers) out.push_back(a.get_future().get());
  return out;
}

}  // namespace payorch::test
