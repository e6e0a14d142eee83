#pragma once
// The single writer: every write to the database goes through one connection on one thread,
// and jobs that arrive together share one transaction (group commit). A job's `done` runs only
// after COMMIT has returned — with synchronous=FULL, after the WAL is on disk — so an answer
// that depends on a write is never sent before the write is durable.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "core/clock.h"
#include "store/sqlite.h"
#include "store/storage_health.h"
#include "store/store_metrics.h"

namespace payorch::store {

struct WriterOptions {
  int busy_retries = 5;          // whole-batch retries on SQLITE_BUSY before giving up
  Millis busy_timeout{200};      // SQLite's own wait per attempt
  std::size_t max_batch = 256;   // jobs per transaction
  // Where to keep the commit mark (store/commit_mark.h); "" keeps none. The daemon keeps it.
  std::string commit_mark_path = {};
  // The mark is rewritten at most this often, and at most this long after a commit.
  Millis commit_mark_interval{1000};
  // Times in health() and the commit mark's interval; null: the system clock.
  const Clock* clock = nullptr;
  // Told about every payment state change the writer's transactions commit (Db::set_transition_observer).
  Db::TransitionObserver transitions = {};
  // Commit durations and batch sizes (store/store_metrics.h); records nothing by default.
  StoreMetrics metrics = {};
};

enum class WriteStatus {
  committed,  // the job's work is durable
  declined,   // the job took its own work back (Writer::Verdict): nothing of it is written, the others committed
  rejected,   // the job's work threw: its savepoint was rolled back, the others committed
  busy,       // the database stayed locked through every retry: nothing of the job is written
  failed,     // the transaction failed (I/O error, disk full): nothing of the job is written
  stopped,    // the writer is shutting down: the job never ran
};
std::string_view to_string(WriteStatus s);

class Writer {
public:
  // Runs on the writer thread inside SAVEPOINT; throwing rolls back this job only. It may run
  // more than once (a busy batch is retried from the start), so it must derive everything it
  // writes from the database and its inputs. Effects outside the database go through
  // Db::after_commit: they run once, after COMMIT and before any job's `done`, and only for
  // jobs whose work committed.
  using Work = std::function<void(Db&)>;
  // A job that judges what it wrote before the commit, and may take all of it back: a refusal
  // it decided on (the provider is at its risk cap), which is an answer, not an error. Taken
  // back, it is rolled back exactly as if it had thrown, and its `done` is told `declined`.
  enum class Verdict { keep, take_back };
  using JudgedWork = std::function<Verdict(Db&)>;
  // Runs on the writer thread after the outcome is known; keep it short (post elsewhere).
  using Done = std::function<void(WriteStatus, const std::string& error)>;

  Writer(const std::string& path, WriterOptions opts);
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  void start();
  // Runs the jobs already queued, then stops the thread. Later submits answer `stopped`.
  void stop();
  void submit(Work work, Done done);
  void submit_judged(JudgedWork work, Done done);

  std::uint64_t transactions() const { return transactions_.load(); }
  std::uint64_t jobs_committed() const { return jobs_committed_.load(); }
  std::size_t queued() const;
  StorageHealth health() const;
  // Failed transactions (busy through every retry, or failed), by storage_error_kind(); every
  // kind of storage_error_kinds() is present.
  std::map<std::string, std::uint64_t> storage_errors() const;

private:
  struct Job {
    JudgedWork work;
    Done done;
  };
  void run();
  void run_batch(std::deque<Job>& batch);
  // Rolls the open transaction back (if any) and drops its after-commit actions.
  void rollback();
  // Opens (again) the write connection and sets it up.
  void open();
  void record_commit(std::uint64_t seq);
  // Writes the commit mark if a commit is not in it yet and the interval has passed (or
  // `now_or_never`: at stop). Writer thread only.
  void write_mark(bool now_or_never);
  // When the mark is next due, if a commit is not in it yet. Writer thread only.
  std::optional<MonotonicTime> mark_due() const;

  WriterOptions opts_;
  std::string path_;
  const Clock* clock_;
  std::unique_ptr<Db> db_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  bool stopping_ = false;
  bool started_ = false;
  std::thread thread_;
  std::atomic<std::uint64_t> transactions_{0};
  std::atomic<std::uint64_t> jobs_committed_{0};

  HealthRecord health_;

  bool reopen_ = false;  // the connection is read-only: open a new one (writer thread only)

  // The commit mark (writer thread only): the last sequence committed and the last one marked.
  std::uint64_t committed_seq_ = 0;
  std::uint64_t marked_seq_ = 0;
  MonotonicTime marked_at_;
};

}  // namespace payorch::store
