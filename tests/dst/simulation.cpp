#include "dst/simulation.h"

#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <queue>
#include <set>
#include <sstream>
#include <stdexcept>

#include "core/seeded_random.h"
#include "core/decide.h"
#include "core/digest.h"
#include "core/intent.h"
#include "core/state_machine.h"
#include "engine/steps.h"
#include "store/callbacks.h"
#include "store/database.h"
#include "store/engine_store.h"
#include "store/intake.h"
#include "store/payments.h"
#include "store/reconciliation.h"
#include "store/sqlite.h"
#include "util/log.h"

namespace payorch::dst {
namespace {

namespace fs = std::filesystem;
using providers::VendorResult;

constexpr UnixMillis second = 1000;
constexpr UnixMillis minute = 60 * second;
constexpr UnixMillis hour = 60 * minute;
const std::string provider_name = "sim";

// splitmix64 (core/seeded_random.h): the simulation's only source of decisions.
using Rng = SplitMix64;

// One run's parameters, drawn from the seed.
struct Profile {
  Contract contract;
  std::string recovery;
  int engines = 1;
  int workers = 2;
  int payments = 4;
  int max_unknown_count = 3;
  Millis poll_interval{2000};
  UnixMillis load_window = 2 * minute;
  double p_not_sent = 0, p_fail_before_commit = 0, p_commit_then_5xx = 0, p_commit_then_lost = 0,
         p_delayed_commit = 0, p_query_fault = 0, p_pending = 0, p_decline = 0, p_callback_dup = 0,
         p_callback_late = 0, p_callback_lost = 0, p_crash_in_txn = 0, p_crash_after_commit = 0,
         p_pause = 0, p_replay = 0, p_conflict = 0;
  bool operator_on = false;

  std::string describe() const {
    std::ostringstream o;
    o << "recovery=" << recovery << " key_retention=" << contract.key_retention.count() / 1000 << "s"
      << " max_attempts=" << contract.max_attempts << " give_up_after=" << contract.give_up_after.count() / 1000
      << "s engines=" << engines << " workers=" << workers << " payments=" << payments
      << " cap=" << max_unknown_count << " operator=" << operator_on << " p_crash=" << p_crash_in_txn << "/"
      << p_crash_after_commit << " p_lost=" << p_commit_then_lost << " p_5xx=" << p_commit_then_5xx
      << " p_fail_before=" << p_fail_before_commit << " p_delayed=" << p_delayed_commit
      << " p_not_sent=" << p_not_sent << " p_pending=" << p_pending << " p_pause=" << p_pause
      << " p_cb_dup=" << p_callback_dup << " p_cb_late=" << p_callback_late;
    return o.str();
  }
};

Profile draw_profile(Rng& r) {
  Profile p;
  const int mode = static_cast<int>(r.between(0, 3));
  Contract& c = p.contract;
  c.request_timeout = Millis(5 * second);
  c.lease = Millis(30 * second);
  c.initial_backoff = Millis(1 * second);
  c.max_backoff = Millis(30 * second);
  c.max_attempts = static_cast<int>(r.between(3, 10));
  c.give_up_after = Millis(r.chance(0.5) ? 10 * minute : hour);
  // Short retention in a third of the runs: keys expire at the vendor while recovery goes on.
  c.key_retention = Millis(r.chance(0.33) ? 10 * minute : 24 * hour);
  switch (mode) {
    case 0: c.recovery = RecoveryMode::lookup; c.not_found_final_after = Millis(30 * second); p.recovery = "lookup"; break;
    case 1: c.recovery = RecoveryMode::lookup; c.not_found_final_after.reset(); p.recovery = "lookup-untrusted-not-found"; break;
    case 2: c.recovery = RecoveryMode::replay; c.not_found_final_after.reset(); p.recovery = "replay"; break;
    default: c.recovery = RecoveryMode::none; c.not_found_final_after.reset(); p.recovery = "none"; break;
  }
  p.poll_interval = Millis(r.between(1, 5) * second);
  p.engines = static_cast<int>(r.between(1, 2));
  p.workers = static_cast<int>(r.between(1, 3));
  p.payments = static_cast<int>(r.between(2, 7));
  p.max_unknown_count = static_cast<int>(r.between(1, 5));
  auto rate = [&](double max) { return r.chance(0.25) ? 0.0 : r.unit() * max; };
  p.p_not_sent = rate(0.15);
  p.p_fail_before_commit = rate(0.2);
  p.p_commit_then_5xx = rate(0.2);
  p.p_commit_then_lost = rate(0.2);
  p.p_delayed_commit = rate(0.2);
  p.p_query_fault = rate(0.3);
  p.p_pending = rate(0.3);
  p.p_decline = rate(0.3);
  p.p_callback_dup = rate(0.5);
  p.p_callback_late = rate(0.3);
  p.p_callback_lost = rate(0.5);
  p.p_crash_in_txn = rate(0.04);
  p.p_crash_after_commit = rate(0.04);
  p.p_pause = rate(0.15);
  p.p_replay = rate(0.4);
  p.p_conflict = rate(0.2);
  p.operator_on = r.chance(0.5);
  return p;
}

// The template database: migrated once per process, copied for every seed.
std::string template_path() {
  static std::once_flag once;
  static std::string path;
  std::call_once(once, [] {
    const fs::path base = fs::exists("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    const fs::path dir = base / ("payorch-dst-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    path = (dir / "template.db").string();
    store::prepare_database(path, 1'700'000'000'000);
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(fs::path(path).parent_path(), ec);
    });
  });
  return path;
}

struct Row {
  std::string id;
  PaymentState state = PaymentState::processing;
  std::int64_t fence = 0;
  std::int64_t attempt_count = 0;
  UnixMillis next_attempt_at = 0;
  bool submit_in_flight = false;
  std::int64_t amount = 0;
  std::string currency;
  std::int64_t cases = 0;  // reconciliation cases ever opened for it
};

struct Snapshot {
  std::map<std::string, Row> rows;
  std::int64_t outbox_seq = 0;
};

struct Charge {
  enum class Status { pending, succeeded, declined } status = Status::pending;
  std::string key;
  providers::ChargeRequest request;
  UnixMillis first_seen = 0;
  std::string reference;
  bool forgotten = false;
};

struct Request {  // one vendor call on the wire
  engine::Call call;
  int engine = 0;
  std::uint64_t incarnation = 0;
  UnixMillis sent_at = 0;
  bool answered = false;
  VendorResult result;
};

struct IntakeOp {
  std::string tenant;
  Intent intent;
  std::string digest;
  bool acked = false;
  std::string payment_id;
};

struct Delivery {  // one vendor callback (its event id is the dedup key)
  std::string event_id;
  std::string key;
  store::CallbackStatus status = store::CallbackStatus::pending;
  std::int64_t amount = 0;
  std::string currency;
  std::string reference;
};

enum class Kind { intake, replay, conflict, vendor_receive, vendor_commit, vendor_decide, response, timeout, record, callback, operator_pass };

struct Event {
  UnixMillis at;
  std::uint64_t seq;
  Kind kind;
  std::size_t index;
  bool operator>(const Event& o) const { return at != o.at ? at > o.at : seq > o.seq; }
};

enum class TxnEnd { committed, crashed_before_commit, crashed_after_commit };

class Simulation {
public:
  explicit Simulation(const Options& o)
      : opts_(o), rng_(o.seed * 0x2545f4914f6cdd1dULL + 1), ids_(o.seed ^ 0x5eed5eedULL),
        clock_(1'750'000'000'000 + static_cast<UnixMillis>(o.seed % 1000) * hour) {
    profile_ = draw_profile(rng_);
    result_.seed = o.seed;
    result_.profile = profile_.describe();
    contracts_[provider_name] = profile_.contract;
    caps_[provider_name] = RiskCap{profile_.max_unknown_count, std::numeric_limits<std::int64_t>::max() / 2};
    const fs::path dir = fs::path(template_path()).parent_path();
    db_path_ = (dir / ("seed-" + std::to_string(o.seed) + ".db")).string();
    remove_files();
    fs::copy_file(template_path(), db_path_);
    open();
  }
  ~Simulation() {
    db_.reset();
    remove_files();
  }

  Result run() {
    if (opts_.trace) log::set_sink([this](std::string_view line) { trace_ += "    log: " + std::string(line); });
    try {
      start_time_ = clock_.now_ms();
      engines_.resize(static_cast<std::size_t>(profile_.engines));
      new_incarnation();
      plan_load();
      loop();
      final_checks();
    } catch (const std::exception& e) {
      violation(std::string("the run threw: ") + e.what());
    }
    if (opts_.trace) silence_logs();
    result_.stats.simulated_ms = clock_.now_ms() - start_time_;
    result_.trace = std::move(trace_);
    result_.fingerprint = fingerprint_;
    return std::move(result_);
  }

private:
  // ---- bookkeeping ------------------------------------------------------------------------

  void step(std::string_view what, std::uint64_t detail = 0) {
    // FNV-1a over every step: two runs of one seed must produce the same value.
    auto mix = [this](std::uint64_t v) {
      for (int i = 0; i < 8; ++i) {
        fingerprint_ ^= (v >> (i * 8)) & 0xff;
        fingerprint_ *= 0x100000001b3ULL;
      }
    };
    for (char c : what) mix(static_cast<unsigned char>(c));
    mix(static_cast<std::uint64_t>(clock_.now_ms()));
    mix(detail);
    if (opts_.trace)
      trace_ += "t+" + std::to_string(clock_.now_ms() - start_time_) + "ms " + std::string(what) + "\n";
  }

  void violation(const std::string& what) {
    result_.violations.push_back("t+" + std::to_string(clock_.now_ms() - start_time_) + "ms " + what);
    if (opts_.trace) trace_ += "  VIOLATION: " + what + "\n";
  }

  void schedule(UnixMillis at, Kind kind, std::size_t index) { queue_.push(Event{at, ++seq_, kind, index}); }

  void remove_files() {
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
      std::error_code ec;
      fs::remove(db_path_ + suffix, ec);
    }
  }

  void open() {
    db_ = std::make_unique<store::Db>(db_path_, store::Db::Mode::read_write);
    store::configure_connection(*db_, 1000);
    // One connection, as the daemon's single writer; the process is the only one on the file
    // (the instance lock), so SQLite's file locks are taken once and kept.
    db_->exec("PRAGMA locking_mode=EXCLUSIVE");
  }

  void new_incarnation() {
    ++incarnation_;
    for (std::size_t e = 0; e < engines_.size(); ++e) {
      engines_[e].owner = "sim-engine-" + std::to_string(e) + "-run-" + std::to_string(incarnation_);
      engines_[e].in_flight = 0;
      engines_[e].next_poll = clock_.now_ms();
    }
  }

  // The process dies: every connection is closed without committing, every in-memory thing is
  // gone (calls on the wire stay on the wire: the vendor is another process). It restarts at
  // once with new lease owners.
  void crash() {
    ++result_.stats.crashes;
    step("crash");
    db_.reset();
    open();
    new_incarnation();
    // Clients whose intake got no answer retry.
    for (std::size_t i = 0; i < intakes_.size(); ++i)
      if (!intakes_[i].acked && intake_outstanding_.contains(i)) schedule(clock_.now_ms() + rng_.between(200, 5 * second), Kind::intake, i);
  }

  bool faults_on() const { return !settling_; }

  // ---- reading the committed state (independent of the store's own queries) -------------

  Snapshot snapshot(store::Db& db) {
    Snapshot s;
    auto st = db.prepare(
        "SELECT id, state, fence, attempt_count, next_attempt_at, "
        "last_submit_started_at IS NOT NULL AND (last_submit_ended_at IS NULL OR last_submit_started_at > last_submit_ended_at), "
        "amount_minor, currency,"
        " (SELECT COUNT(*) FROM reconciliation_cases c WHERE c.payment_id = payments.id) FROM payments");
    while (st.step()) {
      Row r;
      r.id = st.col_text(0);
      r.state = *parse_payment_state(st.col_text(1));
      r.fence = st.col_int(2);
      r.attempt_count = st.col_int(3);
      r.next_attempt_at = st.col_int(4);
      r.submit_in_flight = st.col_int(5) != 0;
      r.amount = st.col_int(6);
      r.currency = st.col_text(7);
      r.cases = st.col_int(8);
      s.rows[r.id] = r;
    }
    auto q = db.prepare("SELECT COALESCE(MAX(seq), 0) FROM outbox");
    q.step();
    s.outbox_seq = q.col_int(0);
    return s;
  }

  static bool is_state_event(const std::string& type) {
    return type != "payment.escalated";
  }

  // Invariants checked after every committed transaction.
  void check_transaction(const Snapshot& before, const std::string& what, bool operator_resolution) {
    Snapshot after = snapshot(*db_);
    std::map<std::string, int> state_events;
    std::map<std::string, int> created_events;
    std::map<std::string, int> escalated_events;
    auto st = db_->prepare("SELECT payment_id, type FROM outbox WHERE seq > ?1");
    st.bind(1, before.outbox_seq);
    while (st.step()) {
      const std::string type = st.col_text(1);
      if (is_state_event(type)) ++state_events[st.col_text(0)];
      if (type == "payment.created") ++created_events[st.col_text(0)];
      if (type == "payment.escalated") ++escalated_events[st.col_text(0)];
    }
    for (const auto& [id, row] : after.rows) {
      auto old = before.rows.find(id);
      const bool created = old == before.rows.end();
      const bool changed = created || old->second.state != row.state;
      // Invariant 6: each state change emits exactly one outbox event, in its transaction.
      if (state_events[id] != (changed ? 1 : 0))
        violation("invariant 6: " + what + ": payment " + id + " changed state " + std::to_string(changed) +
                  " time(s) but wrote " + std::to_string(state_events[id]) + " state event(s)");
      // SPEC §6: every case opened is announced by exactly one payment.escalated.
      const std::int64_t opened = row.cases - (created ? 0 : old->second.cases);
      if (escalated_events[id] != opened)
        violation("invariant 6: " + what + ": payment " + id + " got " + std::to_string(opened) +
                  " new case(s) but " + std::to_string(escalated_events[id]) + " payment.escalated event(s)");
      if (created && created_events[id] != 1) violation("invariant 6: " + what + ": new payment " + id + " without one payment.created");
      // Invariant 4: a terminal state changes only through a reconciliation resolution.
      if (!created && is_terminal(old->second.state) && old->second.state != row.state && !operator_resolution)
        violation("invariant 4: " + what + ": terminal payment " + id + " moved " +
                  std::string(to_string(old->second.state)) + " -> " + std::string(to_string(row.state)));
    }
    for (const auto& [id, row] : before.rows)
      if (!after.rows.contains(id)) violation("payment " + id + " disappeared in " + what);
    // Invariant 8: exposure is visible (the store's figure equals the rows) and capped.
    std::map<std::string, std::pair<std::int64_t, std::int64_t>> mine;  // currency -> count, amount
    std::int64_t count = 0;
    for (const auto& [id, row] : after.rows)
      if (row.state == PaymentState::unknown || (row.state == PaymentState::processing && row.submit_in_flight)) {
        mine[row.currency].first += 1;
        mine[row.currency].second += row.amount;
        ++count;
      }
    // The kept figures (schema 005 triggers) equal both this count and the store's own recount.
    std::map<std::string, std::pair<std::int64_t, std::int64_t>> theirs;
    for (const auto& e : store::exposure(*db_)) theirs[e.currency] = {e.count, e.amount_minor};
    if (mine != theirs) violation("invariant 8: " + what + ": exposure kept differs from the payments");
    for (const auto& d : store::exposure_differences(*db_))
      violation("invariant 8: " + what + ": exposure kept differs from the recount: " + d);
    // A submit starts only while the provider is under its cap, and nothing else adds to the
    // count: it never exceeds the cap.
    if (count > profile_.max_unknown_count)
      violation("invariant 8: " + what + ": exposure " + std::to_string(count) + " over the cap " +
                std::to_string(profile_.max_unknown_count));
  }

  // Runs `body` in one transaction, as the daemon's writer would; may crash before or after the
  // commit (faults on). Checks the invariants after a commit.
  TxnEnd transact(const std::string& what, const std::function<void(store::Db&)>& body, bool operator_resolution = false) {
    Snapshot before = snapshot(*db_);
    const bool crash_before = faults_on() && rng_.chance(profile_.p_crash_in_txn);
    {
      store::Transaction tx(*db_);
      body(*db_);
      if (!crash_before) tx.commit();
    }
    if (crash_before) {
      step("crash before commit: " + what);
      crash();
      return TxnEnd::crashed_before_commit;
    }
    ++result_.stats.transactions;
    step("commit: " + what);
    check_transaction(before, what, operator_resolution);
    if (faults_on() && rng_.chance(profile_.p_crash_after_commit)) {
      step("crash after commit: " + what);
      crash();
      return TxnEnd::crashed_after_commit;
    }
    return TxnEnd::committed;
  }

  // ---- load ---------------------------------------------------------------------------------

  void plan_load() {
    static const std::vector<std::string> currencies{"EUR", "USD", "JPY"};
    static const std::vector<std::string> tenants{"acme", "globex"};
    for (int i = 0; i < profile_.payments; ++i) {
      IntakeOp op;
      op.tenant = rng_.pick(tenants);
      op.intent.operation_id = "order-" + std::to_string(i);
      op.intent.amount_minor = rng_.between(1, 500'000);
      op.intent.currency = rng_.pick(currencies);
      op.intent.payee = "payee-" + std::to_string(rng_.between(1, 9));
      op.intent.source = "tok_" + std::to_string(rng_.between(1000, 9999));
      op.digest = request_digest(op.intent);
      intakes_.push_back(op);
      const UnixMillis at = clock_.now_ms() + rng_.between(0, profile_.load_window);
      intake_outstanding_.insert(intakes_.size() - 1);
      schedule(at, Kind::intake, intakes_.size() - 1);
      if (rng_.chance(profile_.p_replay)) schedule(at + rng_.between(1, 3 * minute), Kind::replay, intakes_.size() - 1);
      if (rng_.chance(profile_.p_conflict)) schedule(at + rng_.between(1, 3 * minute), Kind::conflict, intakes_.size() - 1);
    }
    if (profile_.operator_on) schedule(clock_.now_ms() + 5 * minute, Kind::operator_pass, 0);
  }

  store::IntakeRequest intake_request(const IntakeOp& op) const {
    return store::IntakeRequest{op.tenant, op.intent, provider_name, op.digest};
  }

  void on_intake(std::size_t i) {
    IntakeOp& op = intakes_[i];
    if (op.acked) return;
    std::optional<store::IntakeOutcome> out;
    if (opts_.defect == Defect::ack_before_commit && !op.acked) {
      // The defect: the client is told "created" before the transaction commits.
      op.acked = true;
      ++result_.stats.acknowledged;
    }
    const TxnEnd end = transact("intake " + op.intent.operation_id, [&](store::Db& db) {
      out = store::record_intake(db, intake_request(op), clock_.now_ms(), ids_);
    });
    if (end != TxnEnd::committed) return;  // no answer: the client retries (see crash())
    intake_outstanding_.erase(i);
    if (out->kind == store::IntakeOutcome::Kind::conflict) {
      violation("intake " + op.intent.operation_id + " of the same body answered as a conflict");
      return;
    }
    if (!op.acked || op.payment_id.empty()) {
      if (!op.acked) ++result_.stats.acknowledged;
      op.acked = true;
      op.payment_id = out->payment.id;
    }
    for (auto& e : engines_) e.next_poll = std::min(e.next_poll, clock_.now_ms());
  }

  void on_replay(std::size_t i, bool conflict) {
    IntakeOp op = intakes_[i];
    if (!intakes_[i].acked || intakes_[i].payment_id.empty()) {
      schedule(clock_.now_ms() + minute, conflict ? Kind::conflict : Kind::replay, i);
      return;
    }
    if (conflict) {
      op.intent.amount_minor += 1;
      op.digest = request_digest(op.intent);
    }
    std::optional<store::IntakeOutcome> out;
    const TxnEnd end = transact(std::string(conflict ? "conflicting reuse " : "replay ") + op.intent.operation_id,
                                [&](store::Db& db) { out = store::record_intake(db, intake_request(op), clock_.now_ms(), ids_); });
    if (end != TxnEnd::committed) return;
    const auto want = conflict ? store::IntakeOutcome::Kind::conflict : store::IntakeOutcome::Kind::replayed;
    if (out->kind != want || out->payment.id != intakes_[i].payment_id)
      violation("intake " + op.intent.operation_id + ": a " + (conflict ? "conflicting reuse" : "replay") +
                " was not answered with the stored payment");
    ++(conflict ? result_.stats.intake_conflicts : result_.stats.intake_replays);
  }

  // ---- the engines --------------------------------------------------------------------------

  void poll(std::size_t e) {
    EngineRt& rt = engines_[e];
    const int free = profile_.workers - rt.in_flight;
    rt.next_poll = clock_.now_ms() + profile_.poll_interval.count();
    if (free <= 0) return;
    // Nothing due: no transaction (the daemon's claim would find nothing either).
    if (!anything_due()) {
      rt.next_poll = std::max(rt.next_poll, next_due());
      return;
    }
    std::vector<engine::Call> calls;
    engine::ClaimRound round;
    round.owner = rt.owner;
    round.now = clock_.now_ms();
    round.lease = profile_.contract.lease;
    round.max = free;
    round.poll_interval = profile_.poll_interval;
    round.contracts = &contracts_;
    round.quotas = {{provider_name, free}};
    round.caps = &caps_;
    const TxnEnd end = transact("claim by " + rt.owner, [&](store::Db& db) { calls = engine::claim_round(db, round, ids_); });
    if (end == TxnEnd::crashed_after_commit) return;
    if (end == TxnEnd::crashed_before_commit && opts_.defect != Defect::send_before_commit) return;
    for (const auto& call : calls) send(e, call);
  }

  bool anything_due() {
    auto st = db_->prepare(
        "SELECT 1 FROM payments WHERE state IN ('PROCESSING','UNKNOWN') AND next_action <> 'none'"
        " AND next_attempt_at <= ?1 AND (lease_owner IS NULL OR lease_expires_at <= ?1) LIMIT 1");
    st.bind(1, clock_.now_ms());
    return st.step();
  }

  // When the next claim could find something; far away when nothing is pending.
  UnixMillis next_due() {
    auto st = db_->prepare(
        "SELECT MIN(MAX(next_attempt_at, COALESCE(lease_expires_at, 0))) FROM payments"
        " WHERE state IN ('PROCESSING','UNKNOWN') AND next_action <> 'none'");
    if (st.step() && !st.col_null(0)) return std::max(st.col_int(0), clock_.now_ms());
    return clock_.now_ms() + 24 * hour;
  }

  void send(std::size_t e, const engine::Call& call) {
    Request r;
    r.call = call;
    r.engine = static_cast<int>(e);
    r.incarnation = incarnation_;
    r.sent_at = clock_.now_ms();
    requests_.push_back(r);
    const std::size_t i = requests_.size() - 1;
    ++engines_[e].in_flight;
    step(std::string("send ") + std::string(to_string(call.call)) + " " + call.payment.client_key, call.fence);
    if (faults_on() && rng_.chance(profile_.p_not_sent)) {
      ++result_.stats.vendor_faults;
      requests_[i].result = VendorResult{VendorOutcome::not_sent, {}, {}, {}, {}, 0, "connection refused"};
      schedule(clock_.now_ms() + rng_.between(1, 50), Kind::response, i);
      return;
    }
    schedule(clock_.now_ms() + rng_.between(1, 300), Kind::vendor_receive, i);
    schedule(clock_.now_ms() + call.contract.request_timeout.count(), Kind::timeout, i);
  }

  void answer_later(std::size_t i, VendorResult result) {
    requests_[i].result = std::move(result);
    schedule(clock_.now_ms() + rng_.between(1, 300), Kind::response, i);
  }

  void on_response(std::size_t i, bool timed_out) {
    Request& r = requests_[i];
    if (r.answered || r.incarnation != incarnation_) return;  // late, or its process died
    r.answered = true;
    if (timed_out) r.result = VendorResult{VendorOutcome::ambiguous, {}, {}, {}, {}, 0, "request timed out after sending"};
    UnixMillis at = clock_.now_ms();
    if (faults_on() && rng_.chance(profile_.p_pause)) {
      // The worker stalls (a long GC pause, SIGSTOP) until its lease has lapsed.
      ++result_.stats.paused_workers;
      at = r.sent_at + r.call.contract.lease.count() + rng_.between(1, 20 * second);
    }
    schedule(at, Kind::record, i);
  }

  void on_record(std::size_t i) {
    Request& r = requests_[i];
    if (r.incarnation != incarnation_) return;
    EngineRt& rt = engines_[static_cast<std::size_t>(r.engine)];
    --rt.in_flight;
    rt.next_poll = clock_.now_ms();
    const Payment was = *store::find_payment_by_id(*db_, r.call.payment.id);
    const bool stale = was.fence != r.call.fence;
    engine::Call call = r.call;
    if (opts_.defect == Defect::unfenced_outcome) call.fence = was.fence;
    const double jitter = rng_.unit();
    store::CasResult cas = store::CasResult::not_found;
    const TxnEnd end = transact("record " + std::string(to_string(r.result.outcome)) + " for " + call.payment.client_key,
                                [&](store::Db& db) { cas = engine::record_outcome(db, call, r.result, clock_.now_ms(), jitter, ids_, nullptr); });
    if (end == TxnEnd::crashed_before_commit) return;
    if (stale) {
      ++result_.stats.stale_outcomes;
      // Invariant 5: a stale lease holder's answer changes nothing it decided on.
      const Payment now = *store::find_payment_by_id(*db_, call.payment.id);
      if (now.state != was.state || now.attempt_count != was.attempt_count)
        violation("invariant 5: a stale worker (fence " + std::to_string(r.call.fence) + ", current " +
                  std::to_string(was.fence) + ") changed payment " + call.payment.id + " (" +
                  std::string(store::to_string(cas)) + ")");
    }
  }

  // ---- the vendor ---------------------------------------------------------------------------

  void expire_keys() {
    for (auto it = live_.begin(); it != live_.end();) {
      Charge& c = ledger_[it->second];
      if (c.first_seen + profile_.contract.key_retention.count() <= clock_.now_ms()) {
        c.forgotten = true;
        ++result_.stats.expired_keys;
        step("vendor forgets " + c.key);
        it = live_.erase(it);
      } else {
        ++it;
      }
    }
  }

  VendorResult answer_for(const Charge& c) const {
    VendorResult v;
    v.http_status = 200;
    v.vendor_reference = c.reference;
    v.amount_minor = c.request.amount_minor;
    v.currency = c.request.currency;
    switch (c.status) {
      case Charge::Status::succeeded: v.outcome = VendorOutcome::succeeded; v.detail = "succeeded"; break;
      case Charge::Status::declined: v.outcome = VendorOutcome::declined; v.decline_code = "card_declined"; v.detail = "declined"; break;
      case Charge::Status::pending: v.outcome = VendorOutcome::pending; v.detail = "pending"; break;
    }
    return v;
  }

  static bool same_params(const providers::ChargeRequest& a, const providers::ChargeRequest& b) {
    return a.amount_minor == b.amount_minor && a.currency == b.currency && a.payee == b.payee && a.source == b.source;
  }

  // Invariant 1: the vendor only ever hears of a key a committed row holds, with the row's
  // parameters, and with the attempt already counted. (No transaction is open between steps:
  // the connection sees exactly what is committed.)
  void check_committed_before_call(const Request& r) {
    auto st = db_->prepare(
        "SELECT amount_minor, currency, payee, source, attempt_count FROM payments WHERE client_key = ?1");
    st.bind(1, r.call.payment.client_key);
    if (!st.step()) {
      violation("invariant 1: the vendor received " + r.call.payment.client_key + " which no committed row holds");
      return;
    }
    const providers::ChargeRequest committed{r.call.payment.client_key, st.col_int(0), st.col_text(1), st.col_text(2), st.col_text(3)};
    if (!same_params(committed, engine::charge_of(r.call.payment)))
      violation("invariant 1: the vendor received other parameters than the committed row's for " + r.call.payment.client_key);
    if (st.col_int(4) < r.call.payment.attempt_count)
      violation("invariant 1: call " + std::to_string(r.call.payment.attempt_count) + " of " + r.call.payment.client_key +
                " left before its claim committed (committed attempt_count " + std::to_string(st.col_int(4)) + ")");
  }

  void commit_charge(const providers::ChargeRequest& req, std::optional<std::size_t> answer_to) {
    Charge c;
    c.key = req.client_key;
    c.request = req;
    c.first_seen = clock_.now_ms();
    c.reference = "ch_" + std::to_string(ledger_.size() + 1);
    if (rng_.chance(profile_.p_pending)) c.status = Charge::Status::pending;
    else c.status = rng_.chance(profile_.p_decline) ? Charge::Status::declined : Charge::Status::succeeded;
    ledger_.push_back(c);
    ++result_.stats.charges;
    const std::size_t idx = ledger_.size() - 1;
    live_[c.key] = idx;
    step("vendor commits " + c.key + " as " + std::to_string(static_cast<int>(c.status)));
    if (c.status == Charge::Status::pending) {
      schedule(clock_.now_ms() + rng_.between(2 * second, 5 * minute), Kind::vendor_decide, idx);
      if (rng_.chance(0.3)) send_callbacks(idx);  // a "pending" notification
    } else {
      send_callbacks(idx);
    }
    if (!answer_to) return;
    // The answer may be lost after the commit, or replaced by a 5xx.
    if (faults_on() && rng_.chance(profile_.p_commit_then_lost)) {
      ++result_.stats.vendor_faults;
      return;  // the worker times out
    }
    if (faults_on() && rng_.chance(profile_.p_commit_then_5xx)) {
      ++result_.stats.vendor_faults;
      answer_later(*answer_to, VendorResult{VendorOutcome::ambiguous, {}, {}, {}, {}, 502, "bad gateway after commit"});
      return;
    }
    answer_later(*answer_to, answer_for(ledger_[idx]));
  }

  void on_vendor_receive(std::size_t i) {
    const Request& r = requests_[i];
    ++result_.stats.vendor_requests;
    check_committed_before_call(r);
    expire_keys();
    const providers::ChargeRequest req = engine::charge_of(r.call.payment);
    const bool submit = r.call.call == CallKind::submit;
    if (!submit) {
      if (profile_.contract.recovery == RecoveryMode::none) {
        answer_later(i, VendorResult{VendorOutcome::unsupported, {}, {}, {}, {}, 0, "no lookup"});
        return;
      }
      if (faults_on() && rng_.chance(profile_.p_query_fault)) {
        ++result_.stats.vendor_faults;
        if (rng_.chance(0.5)) answer_later(i, VendorResult{VendorOutcome::ambiguous, {}, {}, {}, {}, 503, "unavailable"});
        return;  // or no answer at all
      }
      auto it = live_.find(req.client_key);
      if (it == live_.end()) answer_later(i, VendorResult{VendorOutcome::not_found, {}, {}, {}, {}, 404, "no such charge"});
      else answer_later(i, answer_for(ledger_[it->second]));
      return;
    }
    if (committing_.contains(req.client_key)) {
      ++result_.stats.vendor_faults;
      answer_later(i, VendorResult{VendorOutcome::ambiguous, {}, {}, {}, {}, 409, "a request with this key is in progress"});
      return;
    }
    auto it = live_.find(req.client_key);
    if (it != live_.end() && opts_.defect != Defect::vendor_ignores_key) {
      const Charge& c = ledger_[it->second];
      if (!same_params(c.request, req)) {
        answer_later(i, VendorResult{VendorOutcome::key_mismatch, {}, {}, {}, {}, 422, "key used with other parameters"});
        return;
      }
      if (faults_on() && rng_.chance(profile_.p_commit_then_lost)) {
        ++result_.stats.vendor_faults;
        return;
      }
      answer_later(i, answer_for(c));  // the stored result of the first request
      return;
    }
    if (faults_on() && rng_.chance(profile_.p_fail_before_commit)) {
      ++result_.stats.vendor_faults;
      answer_later(i, VendorResult{VendorOutcome::ambiguous, {}, {}, {}, {}, 500, "failed before commit"});
      return;
    }
    if (faults_on() && rng_.chance(profile_.p_delayed_commit)) {
      // Answered (5xx) or silent now, committed later: within the contract's promise that a
      // request lands no later than not_found_final_after after it ended.
      ++result_.stats.vendor_faults;
      committing_.insert(req.client_key);
      schedule(clock_.now_ms() + rng_.between(1 * second, 20 * second), Kind::vendor_commit, i);
      if (rng_.chance(0.5)) answer_later(i, VendorResult{VendorOutcome::ambiguous, {}, {}, {}, {}, 504, "gateway timeout"});
      return;
    }
    commit_charge(req, i);
  }

  void on_vendor_commit(std::size_t i) {
    const providers::ChargeRequest req = engine::charge_of(requests_[i].call.payment);
    committing_.erase(req.client_key);
    expire_keys();
    if (live_.contains(req.client_key) && opts_.defect != Defect::vendor_ignores_key) return;
    commit_charge(req, std::nullopt);
  }

  void on_vendor_decide(std::size_t idx) {
    Charge& c = ledger_[idx];
    if (c.status != Charge::Status::pending) return;
    c.status = rng_.chance(profile_.p_decline) ? Charge::Status::declined : Charge::Status::succeeded;
    step("vendor decides " + c.key);
    send_callbacks(idx);
  }

  void send_callbacks(std::size_t idx) {
    const Charge& c = ledger_[idx];
    Delivery d;
    d.event_id = "evt_" + std::to_string(deliveries_.size() + 1);
    d.key = c.key;
    d.status = c.status == Charge::Status::succeeded  ? store::CallbackStatus::succeeded
               : c.status == Charge::Status::declined ? store::CallbackStatus::declined
                                                      : store::CallbackStatus::pending;
    d.amount = c.request.amount_minor;
    d.currency = c.request.currency;
    d.reference = c.reference;
    deliveries_.push_back(d);
    const std::size_t k = deliveries_.size() - 1;
    if (rng_.chance(profile_.p_callback_lost)) return;  // the vendor never manages to deliver it
    schedule(clock_.now_ms() + rng_.between(200, 20 * second), Kind::callback, k);
    if (rng_.chance(profile_.p_callback_dup)) schedule(clock_.now_ms() + rng_.between(1 * second, 2 * minute), Kind::callback, k);
    if (rng_.chance(profile_.p_callback_late)) schedule(clock_.now_ms() + rng_.between(1 * hour, 10 * hour), Kind::callback, k);
  }

  void on_callback(std::size_t k) {
    const Delivery& d = deliveries_[k];
    ++result_.stats.callbacks;
    const bool acked_before = acked_events_.contains(d.event_id);
    if (acked_before) ++result_.stats.duplicate_callbacks;
    store::VendorCallback cb;
    cb.provider = provider_name;
    cb.event_id = d.event_id;
    if (opts_.defect == Defect::drop_callback_inbox && acked_before) cb.event_id += "-again";
    cb.client_key = d.key;
    cb.status = d.status;
    cb.vendor_reference = d.reference;
    cb.amount_minor = d.amount;
    cb.currency = d.currency;
    cb.payload = "{\"id\":\"" + d.event_id + "\"}";
    std::optional<store::CallbackOutcome> out;
    int changes_before = 0, changes_after = 0;
    const TxnEnd end = transact("callback " + d.event_id + " for " + d.key, [&](store::Db& db) {
      changes_before = sqlite3_total_changes(db.handle());
      out = store::record_callback(db, cb, clock_.now_ms(), ids_);
      changes_after = sqlite3_total_changes(db.handle());
    });
    if (end == TxnEnd::crashed_before_commit) {
      // No 2xx: the vendor retries.
      schedule(clock_.now_ms() + rng_.between(10 * second, 2 * minute), Kind::callback, k);
      return;
    }
    // Invariant 7: an event already acknowledged has no second effect.
    if (acked_before && (out->result != store::CallbackResult::duplicate || changes_after != changes_before))
      violation("invariant 7: callback " + d.event_id + " delivered again had an effect (" +
                std::string(store::to_string(out->result)) + ", " + std::to_string(changes_after - changes_before) + " row(s) written)");
    if (end == TxnEnd::committed) acked_events_.insert(d.event_id);
    else schedule(clock_.now_ms() + rng_.between(10 * second, 2 * minute), Kind::callback, k);  // 2xx never sent
    for (auto& e : engines_) e.next_poll = std::min(e.next_poll, clock_.now_ms());
  }

  // ---- the operator -------------------------------------------------------------------------

  std::optional<Charge> ledger_truth(const std::string& key) const {
    std::optional<Charge> found;
    for (const auto& c : ledger_)
      if (c.key == key) found = c;
    return found;
  }

  void on_operator_pass() {
    auto page = store::list_cases(*db_, store::CaseStatus::open, 100, std::nullopt);
    for (const auto& rc : page.cases) {
      if (!rc.payment_id) continue;
      auto p = store::find_payment_by_id(*db_, *rc.payment_id);
      if (!p || committing_.contains(p->client_key)) continue;
      auto truth = ledger_truth(p->client_key);
      if (truth && truth->status == Charge::Status::pending) continue;
      store::Resolution res;
      res.by = "operator";
      res.note = "checked the vendor's dashboard";
      if (truth) {
        res.outcome = truth->status == Charge::Status::succeeded ? store::ResolutionOutcome::succeeded
                                                                 : store::ResolutionOutcome::failed_final;
        res.vendor_reference = truth->reference;
      } else if (!is_terminal(p->state) && retried_.insert(p->id).second) {
        res.outcome = store::ResolutionOutcome::retry;  // once: let the engine try again
      } else if (!is_terminal(p->state)) {
        res.outcome = store::ResolutionOutcome::failed_final;  // the vendor has no charge
      } else {
        continue;
      }
      bool resolved = false;
      const TxnEnd end = transact("operator resolves " + rc.id, [&](store::Db& db) {
        auto r = store::resolve_case(db, rc.id, res, profile_.contract, clock_.now_ms(), ids_);
        if (!std::holds_alternative<store::Resolved>(r) && res.outcome == store::ResolutionOutcome::retry) {
          // Too late to send the key again: the vendor confirms it has no charge.
          res.outcome = store::ResolutionOutcome::failed_final;
          r = store::resolve_case(db, rc.id, res, profile_.contract, clock_.now_ms(), ids_);
        }
        resolved = std::holds_alternative<store::Resolved>(r);
      }, true);
      if (end == TxnEnd::crashed_before_commit) break;
      if (resolved) ++result_.stats.resolved;
      if (end != TxnEnd::committed) break;
    }
    for (auto& e : engines_) e.next_poll = std::min(e.next_poll, clock_.now_ms());
    if (!settling_ || !queue_.empty() || !settled()) schedule(clock_.now_ms() + 5 * minute, Kind::operator_pass, 0);
  }

  // ---- the loop -----------------------------------------------------------------------------

  bool settled() {
    auto st = db_->prepare(
        "SELECT COUNT(*) FROM payments p WHERE p.state IN ('PROCESSING','UNKNOWN') AND NOT EXISTS"
        " (SELECT 1 FROM reconciliation_cases c WHERE c.payment_id = p.id AND c.status = 'open')");
    st.step();
    return st.col_int(0) == 0;
  }

  void loop() {
    const UnixMillis load_end = start_time_ + profile_.load_window + 5 * minute;
    const UnixMillis deadline = start_time_ + 7 * 24 * hour;
    std::uint64_t iterations = 0;
    for (;;) {
      if (!settling_ && clock_.now_ms() >= load_end && intake_outstanding_.empty()) {
        settling_ = true;  // faults off: what is left must settle
        step("settling");
        // Cases are worked by a human in the end: payments that wait behind a risk cap held by
        // escalated UNKNOWN ones get their turn once those are resolved.
        if (!profile_.operator_on) schedule(clock_.now_ms() + 5 * minute, Kind::operator_pass, 0);
      }
      std::size_t poller = engines_.size();
      UnixMillis poll_at = std::numeric_limits<UnixMillis>::max();
      for (std::size_t e = 0; e < engines_.size(); ++e)
        if (engines_[e].next_poll < poll_at) {
          poll_at = engines_[e].next_poll;
          poller = e;
        }
      const bool event_first = !queue_.empty() && queue_.top().at <= poll_at;
      if (!event_first && settling_ && queue_.empty()) {
        bool idle = true;
        for (const auto& e : engines_) idle = idle && e.in_flight == 0;
        if (idle && !anything_due() && next_due() >= clock_.now_ms() + 24 * hour - 1) break;  // nothing left
      }
      if (++iterations > 200'000) {
        violation("the run did not settle within 200,000 steps");
        return;
      }
      const UnixMillis at = event_first ? queue_.top().at : poll_at;
      if (at > deadline) {
        violation("the run did not settle within 7 simulated days");
        return;
      }
      clock_.set(std::max(clock_.now_ms(), at));
      if (!event_first) {
        poll(poller);
        continue;
      }
      const Event ev = queue_.top();
      queue_.pop();
      switch (ev.kind) {
        case Kind::intake: on_intake(ev.index); break;
        case Kind::replay: on_replay(ev.index, false); break;
        case Kind::conflict: on_replay(ev.index, true); break;
        case Kind::vendor_receive: on_vendor_receive(ev.index); break;
        case Kind::vendor_commit: on_vendor_commit(ev.index); break;
        case Kind::vendor_decide: on_vendor_decide(ev.index); break;
        case Kind::response: on_response(ev.index, false); break;
        case Kind::timeout: on_response(ev.index, true); break;
        case Kind::record: on_record(ev.index); break;
        case Kind::callback: on_callback(ev.index); break;
        case Kind::operator_pass: on_operator_pass(); break;
      }
    }
  }

  // ---- after the run ------------------------------------------------------------------------

  void final_checks() {
    // Invariant 3: every acknowledged intake is there, unchanged, and terminal or in front of a
    // human.
    for (const auto& op : intakes_) {
      if (!op.acked) {
        violation("intake " + op.intent.operation_id + " was never acknowledged");
        continue;
      }
      auto p = store::find_payment_by_operation(*db_, op.tenant, "payment", op.intent.operation_id);
      if (!p || (!op.payment_id.empty() && p->id != op.payment_id)) {
        violation("invariant 3: acknowledged intake " + op.intent.operation_id + " is lost");
        continue;
      }
      if (p->amount_minor != op.intent.amount_minor || p->currency != op.intent.currency || p->request_digest != op.digest)
        violation("invariant 3: acknowledged intake " + op.intent.operation_id + " changed");
    }
    std::map<std::string, int> charges_per_key;
    for (const auto& c : ledger_) ++charges_per_key[c.key];
    std::set<std::string> keys;
    auto st = db_->prepare(
        "SELECT p.id, p.client_key, p.state, p.amount_minor, p.currency,"
        " EXISTS (SELECT 1 FROM reconciliation_cases c WHERE c.payment_id = p.id AND c.status = 'open'),"
        " EXISTS (SELECT 1 FROM outbox o WHERE o.payment_id = p.id AND o.type = 'payment.unknown')"
        " FROM payments p ORDER BY p.id");
    while (st.step()) {
      const std::string id = st.col_text(0), key = st.col_text(1);
      const PaymentState state = *parse_payment_state(st.col_text(2));
      const bool open_case = st.col_int(5) != 0;
      keys.insert(key);
      ++result_.stats.payments;
      if (st.col_int(6) != 0 && is_terminal(state)) ++result_.stats.recovered_unknown;
      // Invariant 2: at most one charge per payment at the vendor.
      if (charges_per_key[key] > 1)
        violation("invariant 2: payment " + id + " (" + key + ") was charged " + std::to_string(charges_per_key[key]) + " times");
      // Invariant 3: terminal or in front of a human.
      if (!is_terminal(state) && !open_case)
        violation("invariant 3: payment " + id + " ended " + std::string(to_string(state)) + " with no open case");
      // The vendor's word and ours agree, or a human has the disagreement.
      auto truth = ledger_truth(key);
      const bool vendor_succeeded = truth && truth->status == Charge::Status::succeeded;
      if (state == PaymentState::succeeded && !vendor_succeeded && !open_case)
        violation("payment " + id + " is SUCCEEDED but the vendor has no successful charge, and no case is open");
      if (state == PaymentState::failed_final && vendor_succeeded && !open_case)
        violation("payment " + id + " is FAILED_FINAL but the vendor charged it, and no case is open");
      fingerprint_ ^= std::hash<std::string>{}(id + key + std::string(to_string(state)));
    }
    auto cases = db_->prepare("SELECT COUNT(DISTINCT payment_id) FROM reconciliation_cases");
    cases.step();
    result_.stats.escalated = cases.col_int(0);
    for (const auto& [key, n] : charges_per_key)
      if (!keys.contains(key)) violation("unexpected charge: the vendor charged " + key + " which no payment holds");
    // Invariant 6 over the whole history: one payment.created first, terminal state events never
    // followed by another state event except an operator's payment.corrected.
    auto ev = db_->prepare("SELECT payment_id, type FROM outbox ORDER BY seq");
    std::map<std::string, std::vector<std::string>> history;
    while (ev.step()) history[ev.col_text(0)].push_back(ev.col_text(1));
    for (const auto& [id, types] : history) {
      if (types.empty() || types.front() != "payment.created" || std::count(types.begin(), types.end(), "payment.created") != 1)
        violation("invariant 6: payment " + id + " does not start with exactly one payment.created");
      bool terminal = false;
      for (const auto& t : types) {
        if (terminal && is_state_event(t) && t != "payment.corrected")
          violation("invariant 4: payment " + id + " has " + t + " after a terminal event");
        if (t == "payment.succeeded" || t == "payment.failed") terminal = true;
      }
    }
    auto check = db_->prepare("PRAGMA integrity_check");
    if (!check.step() || check.col_text(0) != "ok") violation("integrity_check failed");
  }

  struct EngineRt {
    std::string owner;
    UnixMillis next_poll = 0;
    int in_flight = 0;
  };

  Options opts_;
  Rng rng_;
  SeededRandom ids_;
  ManualClock clock_;
  Profile profile_;
  Result result_;
  std::string trace_;
  std::uint64_t fingerprint_ = 0xcbf29ce484222325ULL;
  std::map<std::string, Contract> contracts_;
  std::map<std::string, RiskCap> caps_;
  std::string db_path_;
  std::unique_ptr<store::Db> db_;
  UnixMillis start_time_ = 0;
  std::uint64_t incarnation_ = 0;
  std::vector<EngineRt> engines_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> queue_;
  std::uint64_t seq_ = 0;
  bool settling_ = false;
  std::vector<IntakeOp> intakes_;
  std::set<std::size_t> intake_outstanding_;
  std::vector<Request> requests_;
  std::vector<Charge> ledger_;
  std::map<std::string, std::size_t> live_;
  std::set<std::string> committing_;
  std::vector<Delivery> deliveries_;
  std::set<std::string> acked_events_;
  std::set<std::string> retried_;  // payments the operator already sent back to the engine
};

}  // namespace

void silence_logs() {
  log::set_sink([](std::string_view) {});
}

Result run(const Options& options) {
  Simulation sim(options);
  return sim.run();
}

Stats run_many(std::uint64_t from, std::uint64_t count, unsigned jobs,
               const std::function<void(const Result&)>& on_result) {
  silence_logs();
  std::atomic<std::uint64_t> next{from};
  std::mutex mu;
  Stats total;
  auto work = [&] {
    for (std::uint64_t seed; (seed = next.fetch_add(1)) < from + count;) {
      Result r = run(Options{.seed = seed});
      std::lock_guard lock(mu);
      add(total, r.stats);
      on_result(r);
    }
  };
  std::vector<std::thread> threads;
  for (unsigned j = 1; j < std::max(jobs, 1u); ++j) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  return total;
}

void add(Stats& t, const Stats& s) {
  t.payments += s.payments;
  t.acknowledged += s.acknowledged;
  t.intake_replays += s.intake_replays;
  t.intake_conflicts += s.intake_conflicts;
  t.transactions += s.transactions;
  t.vendor_requests += s.vendor_requests;
  t.charges += s.charges;
  t.vendor_faults += s.vendor_faults;
  t.crashes += s.crashes;
  t.paused_workers += s.paused_workers;
  t.stale_outcomes += s.stale_outcomes;
  t.callbacks += s.callbacks;
  t.duplicate_callbacks += s.duplicate_callbacks;
  t.expired_keys += s.expired_keys;
  t.recovered_unknown += s.recovered_unknown;
  t.escalated += s.escalated;
  t.resolved += s.resolved;
  t.simulated_ms += s.simulated_ms;
}

std::string describe(const Stats& s) {
  std::ostringstream o;
  o << "payments=" << s.payments << " acknowledged=" << s.acknowledged << " replays=" << s.intake_replays
    << " conflicts=" << s.intake_conflicts << " transactions=" << s.transactions
    << " vendor_requests=" << s.vendor_requests << " charges=" << s.charges << " vendor_faults=" << s.vendor_faults
    << " crashes=" << s.crashes << " paused_workers=" << s.paused_workers << " stale_outcomes=" << s.stale_outcomes
    << " callbacks=" << s.callbacks << " duplicate_callbacks=" << s.duplicate_callbacks
    << " expired_keys=" << s.expired_keys << " recovered_unknown=" << s.recovered_unknown
    << " escalated=" << s.escalated << " operator_resolutions=" << s.resolved
    << " simulated_hours=" << s.simulated_ms / 3'600'000;
  return o.str();
}

}  // namespace payorch::dst
