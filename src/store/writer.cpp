#include "store/writer.h"

#include <vector>

#include "util/log.h"

namespace payorch::store {

std::string_view to_string(WriteStatus s) {
  switch (s) {
    case WriteStatus::committed: return "committed";
    case WriteStatus::rejected: return "rejected";
    case WriteStatus::busy: return "busy";
    case WriteStatus::failed: return "failed";
    case WriteStatus::stopped: return "stopped";
  }
  return "?";
}

Writer::Writer(const std::string& path, WriterOptions opts)
    : opts_(opts), db_(std::make_unique<Db>(path, Db::Mode::read_write)) {
  configure_connection(*db_, static_cast<int>(opts_.busy_timeout.count()));
  // Every job runs inside a savepoint (an intake inside a second one), so SQLite copies each page
  // a transaction changes into a sub-journal, for ROLLBACK TO. An intake changes about 16 pages
  // (its rows, their indexes, the kept figures), and past 64 KiB SQLite spills the sub-journal
  // to a temporary file: an open, a 60 KiB write, an unlink and a close in every transaction,
  // before its answer. The sub-journal only serves a rollback inside the open transaction, never
  // durability (the WAL does), so it stays in memory: at most the pages one batch changes.
  db_->exec("PRAGMA temp_store=MEMORY");
  // Checkpoints run inside a COMMIT, before its jobs are answered. Every 10,000 WAL pages
  // (about 40 MB) rather than SQLite's 1,000: an index page that many transactions touch (the
  // random client_key, the tenant listing) is written back once per checkpoint, not once per
  // 55 intakes, which is what keeps intake on a database of millions of payments near intake on
  // an empty one. The WAL's size is the bound on what a checkpoint does at once.
  db_->exec("PRAGMA wal_autocheckpoint=10000");
  // The pages those transactions revisit stay in memory: 16 MiB of page cache (the default is 2).
  db_->exec("PRAGMA cache_size=-16384");
}

Writer::~Writer() { stop(); }

void Writer::start() {
  std::lock_guard lock(mu_);
  if (started_) return;
  started_ = true;
  thread_ = std::thread([this] { run(); });
}

void Writer::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::size_t Writer::queued() const {
  std::lock_guard lock(mu_);
  return queue_.size();
}

void Writer::submit(Work work, Done done) {
  {
    std::lock_guard lock(mu_);
    if (!stopping_) {
      queue_.push_back(Job{std::move(work), std::move(done)});
      cv_.notify_one();
      return;
    }
  }
  done(WriteStatus::stopped, "writer stopped");
}

void Writer::run() {
  for (;;) {
    std::deque<Job> batch;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and everything queued has run
      while (!queue_.empty() && batch.size() < opts_.max_batch) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    run_batch(batch);
  }
}

void Writer::rollback() {
  if (!sqlite3_get_autocommit(db_->handle())) {
    try {
      db_->exec("ROLLBACK");
    } catch (const SqliteError&) {
    }
  }
  db_->discard_after_commit(0);  // nothing of the batch happened
}

void Writer::run_batch(std::deque<Job>& batch) {
  std::vector<WriteStatus> status(batch.size());
  std::vector<std::string> errors(batch.size());
  std::string last_error;
  bool transient = false;
  for (int attempt = 0; attempt <= opts_.busy_retries; ++attempt) {
    try {
      db_->exec("BEGIN IMMEDIATE");
      for (std::size_t i = 0; i < batch.size(); ++i) {
        db_->exec("SAVEPOINT job");
        const std::size_t mark = db_->after_commit_mark();
        try {
          batch[i].work(*db_);
          db_->exec("RELEASE job");
          status[i] = WriteStatus::committed;
          errors[i].clear();
        } catch (const SqliteError& e) {
          // A locked or failing database fails the whole transaction; anything else is this
          // job's own refusal. CANTOPEN is storage too: a statement journal (a savepoint, a
          // trigger's statements) or a temp file that cannot be created.
          if (e.busy() || e.primary() == SQLITE_IOERR || e.primary() == SQLITE_FULL ||
              e.primary() == SQLITE_CORRUPT || e.primary() == SQLITE_NOTADB ||
              e.primary() == SQLITE_CANTOPEN || e.primary() == SQLITE_NOMEM)
            throw;
          db_->exec("ROLLBACK TO job");
          db_->exec("RELEASE job");
          db_->discard_after_commit(mark);
          status[i] = WriteStatus::rejected;
          errors[i] = e.what();
        } catch (const std::exception& e) {
          db_->exec("ROLLBACK TO job");
          db_->discard_after_commit(mark);
          db_->exec("RELEASE job");
          status[i] = WriteStatus::rejected;
          errors[i] = e.what();
        }
      }
      // Crash timeline: dying before this COMMIT returns loses the whole batch and no job has
      // been answered; dying after it, every job is durable and unanswered clients retry into
      // a replay.
      db_->exec("COMMIT");
      transactions_.fetch_add(1);
      // Before the answers: whoever reads /metrics after an answer sees its effects counted.
      db_->run_after_commit();
      for (std::size_t i = 0; i < batch.size(); ++i) {
        if (status[i] == WriteStatus::committed) jobs_committed_.fetch_add(1);
        batch[i].done(status[i], errors[i]);
      }
      return;
    } catch (const SqliteError& e) {
      last_error = e.what();
      transient = e.busy();
      rollback();
      log::error("store.transaction_failed", e.what(),
                 {{"jobs", static_cast<std::uint64_t>(batch.size())}, {"attempt", attempt + 1},
                  {"busy", transient}});
      if (!transient) break;
    } catch (const std::exception& e) {
      last_error = e.what();
      transient = false;
      rollback();
      break;
    }
  }
  for (auto& job : batch) job.done(transient ? WriteStatus::busy : WriteStatus::failed, last_error);
}

}  // namespace payorch::store
