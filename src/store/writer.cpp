#include "store/writer.h"

#include <vector>

#include "core/enum_names.h"
#include "store/commit_mark.h"
#include "store/commit_sequence.h"
#include "util/log.h"
#include "util/system_clock.h"

namespace payorch::store {

namespace {

constexpr EnumNames<WriteStatus, 6> write_status_names{{
    {WriteStatus::committed, "committed"},
    {WriteStatus::declined, "declined"},
    {WriteStatus::rejected, "rejected"},
    {WriteStatus::busy, "busy"},
    {WriteStatus::failed, "failed"},
    {WriteStatus::stopped, "stopped"},
}};

const SystemClock system_clock;

}  // namespace

std::string_view to_string(WriteStatus s) { return name_of(write_status_names, s); }

Writer::Writer(const std::string& path, WriterOptions opts)
    : opts_(std::move(opts)),
      path_(path),
      clock_(opts_.clock ? opts_.clock : &system_clock),
      health_(*clock_, storage_error_kinds()),
      marked_at_(clock_->monotonic() - opts_.commit_mark_interval) {  // the first mark is due at once
  open();
}

void Writer::open() {
  auto db = std::make_unique<Db>(path_, Db::Mode::read_write);
  configure_connection(*db, static_cast<int>(opts_.busy_timeout.count()));
  // Every job runs inside a savepoint (an intake inside a second one), so SQLite copies each page
  // a transaction changes into a sub-journal, for ROLLBACK TO. An intake changes about 16 pages
  // (its rows, their indexes, the kept figures), and past 64 KiB SQLite spills the sub-journal
  // to a temporary file: an open, a 60 KiB write, an unlink and a close in every transaction,
  // before its answer. The sub-journal only serves a rollback inside the open transaction, never
  // durability (the WAL does), so it stays in memory: at most the pages one batch changes.
  db->exec("PRAGMA temp_store=MEMORY");
  // Checkpoints run inside a COMMIT, before its jobs are answered. Every 10,000 WAL pages
  // (about 40 MB) rather than SQLite's 1,000: an index page that many transactions touch (the
  // random client_key, the tenant listing) is written back once per checkpoint, not once per
  // 55 intakes, which is what keeps intake on a database of millions of payments near intake on
  // an empty one. The WAL's size is the bound on what a checkpoint does at once.
  db->exec("PRAGMA wal_autocheckpoint=10000");
  // The pages those transactions revisit stay in memory: 16 MiB of page cache (the default is 2).
  db->exec("PRAGMA cache_size=-16384");
  db->set_transition_observer(opts_.transitions);
  // SQLite opens a file it may not write read-only, silently, and never tries again on that
  // connection: every transaction fails with SQLITE_READONLY until the writer reopens it.
  if (sqlite3_db_readonly(db->handle(), "main") == 1)
    log::error("store.read_only",
               "the database file cannot be written by this process (its permissions, its "
               "folder's, or the mount): every write fails until it can be",
               {{"path", path_}});
  db_ = std::move(db);
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

StorageHealth Writer::health() const { return health_.health(); }

std::map<std::string, std::uint64_t> Writer::storage_errors() const { return health_.errors(); }

void Writer::record_commit(std::uint64_t seq) {
  committed_seq_ = seq;
  health_.committed(seq);
}

std::optional<MonotonicTime> Writer::mark_due() const {
  if (opts_.commit_mark_path.empty() || committed_seq_ <= marked_seq_) return std::nullopt;
  return marked_at_ + opts_.commit_mark_interval;
}

void Writer::write_mark(bool now_or_never) {
  const auto due = mark_due();
  const MonotonicTime now = clock_->monotonic();
  if (!due || (!now_or_never && now < *due)) return;
  // After COMMIT returned, so the mark never names a commit the database could lose in a crash.
  try {
    write_commit_mark(opts_.commit_mark_path, committed_seq_);
    marked_seq_ = committed_seq_;
  } catch (const std::exception& e) {
    // The mark only serves the start-up check; the next attempt is one interval later.
    log::warn("store.commit_mark_failed", e.what(), {{"commit_seq", committed_seq_}});
  }
  marked_at_ = now;
}

void Writer::submit(Work work, Done done) {
  submit_judged(
      [work = std::move(work)](Db& db) {
        work(db);
        return Verdict::keep;
      },
      std::move(done));
}

void Writer::submit_judged(JudgedWork work, Done done) {
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
      const auto work = [&] { return stopping_ || !queue_.empty(); };
      // Waits on the condition variable's own clock for as long as the writer's clock says.
      if (const auto due = mark_due()) cv_.wait_for(lock, *due - clock_->monotonic(), work);
      else cv_.wait(lock, work);
      if (stopping_ && queue_.empty()) break;  // everything queued has run
      while (!queue_.empty() && batch.size() < opts_.max_batch) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    if (!batch.empty()) run_batch(batch);
    write_mark(false);
  }
  write_mark(true);
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
  if (reopen_) {
    try {
      open();
      reopen_ = false;
    } catch (const std::exception& e) {
      log::error("store.reopen_failed", e.what(), {{"path", path_}});
    }
  }
  std::vector<WriteStatus> status(batch.size());
  std::vector<std::string> errors(batch.size());
  std::string last_error;
  std::string_view kind;
  bool transient = false;
  for (int attempt = 0; attempt <= opts_.busy_retries; ++attempt) {
    try {
      const MonotonicTime began = clock_->monotonic();
      db_->exec("BEGIN IMMEDIATE");
      std::int64_t kept_changes = 0;  // rows changed by the jobs whose work stays
      for (std::size_t i = 0; i < batch.size(); ++i) {
        db_->exec("SAVEPOINT job");
        const std::size_t mark = db_->after_commit_mark();
        const std::int64_t changes_before = db_->total_changes();
        // Everything the job wrote, and every after-commit action it registered, goes.
        const auto take_back = [&](WriteStatus why, std::string error) {
          db_->exec("ROLLBACK TO job");
          db_->exec("RELEASE job");
          db_->discard_after_commit(mark);
          status[i] = why;
          errors[i] = std::move(error);
        };
        try {
          if (batch[i].work(*db_) == Verdict::take_back) {
            take_back(WriteStatus::declined, "");
            continue;
          }
          db_->exec("RELEASE job");
          kept_changes += db_->total_changes() - changes_before;
          status[i] = WriteStatus::committed;
          errors[i].clear();
        } catch (const SqliteError& e) {
          // A locked, failing or read-only database fails the whole transaction; anything else
          // is this job's own refusal. CANTOPEN is storage too: a statement journal (a
          // savepoint, a trigger's statements) or a temp file that cannot be created.
          if (!storage_error_kind(e.code()).empty()) throw;
          take_back(WriteStatus::rejected, e.what());
        } catch (const std::exception& e) {
          take_back(WriteStatus::rejected, e.what());
        }
      }
      // A transaction whose kept jobs changed rows moves the commit sequence (one more page in
      // its commit). One that keeps no change writes nothing at COMMIT — no WAL frame, no fsync
      // — so it says nothing about the disk and holds nothing a lost WAL could take: not counted.
      std::optional<std::uint64_t> seq;
      if (kept_changes != 0) seq = advance_commit_sequence(*db_);
      // Crash timeline: dying before this COMMIT returns loses the whole batch and no job has
      // been answered; dying after it, every job is durable and unanswered clients retry into
      // a replay.
      db_->exec("COMMIT");
      opts_.metrics.committed(std::chrono::duration<double>(clock_->monotonic() - began).count(), batch.size());
      transactions_.fetch_add(1);
      if (seq) record_commit(*seq);
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
      kind = storage_error_kind(e.code());
      if (kind.empty()) kind = "other";
      rollback();
      log::error("store.transaction_failed", e.what(),
                 {{"jobs", static_cast<std::uint64_t>(batch.size())}, {"attempt", attempt + 1},
                  {"busy", transient}, {"kind", kind}});
      if (!transient) break;
    } catch (const std::exception& e) {
      last_error = e.what();
      transient = false;
      kind = "other";
      rollback();
      break;
    }
  }
  // SQLite never upgrades a read-only connection: the next batch opens a new one, which tries
  // to open the file for writing again, so that fixing its permissions brings the writer back
  // without a restart.
  if (kind == "readonly") reopen_ = true;
  health_.failed(kind, last_error);
  for (auto& job : batch) job.done(transient ? WriteStatus::busy : WriteStatus::failed, last_error);
}

}  // namespace payorch::store
