#include "dst/simulation.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <limits>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "dst/postgres_database.h"
#include "dst/simulator.h"
#include "engine/steps.h"
#include "util/log.h"

namespace payorch::dst {

Simulation::Simulation(const Options& o)
    : opts_(o), rng_(o.seed * 0x2545f4914f6cdd1dULL + 1), ids_(o.seed ^ 0x5eed5eedULL),
      clock_(1'750'000'000'000 + static_cast<UnixMillis>(o.seed % 1000) * hour) {
  profile_ = draw_profile(rng_);
  result_.seed = o.seed;
  result_.profile = profile_.describe();
  contracts_[provider_name] = profile_.contract;
  if (o.defect == Defect::early_not_found && profile_.contract.not_found_final_after)
    contracts_[provider_name].not_found_final_after = Millis(0);
  caps_[provider_name] = RiskCap{profile_.max_unknown_count, std::numeric_limits<std::int64_t>::max() / 2};
  db_ = o.postgres ? open_postgres_database(*o.postgres) : open_sqlite_database(o.seed);
}

Simulation::~Simulation() = default;

Result Simulation::run() {
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

void Simulation::step(std::string_view what, std::uint64_t detail) {
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

void Simulation::violation(const std::string& what) {
  result_.violations.push_back("t+" + std::to_string(clock_.now_ms() - start_time_) + "ms " + what);
  if (opts_.trace) trace_ += "  VIOLATION: " + what + "\n";
}

void Simulation::new_incarnation() {
  ++incarnation_;
  for (std::size_t e = 0; e < engines_.size(); ++e) {
    engines_[e].owner = "sim-engine-" + std::to_string(e) + "-run-" + std::to_string(incarnation_);
    engines_[e].in_flight = 0;
    engines_[e].next_poll = clock_.now_ms();
  }
}

void Simulation::crash() {
  ++result_.stats.crashes;
  step("crash");
  db_->crash();
  new_incarnation();
  // Clients whose intake got no answer retry.
  for (std::size_t i = 0; i < intakes_.size(); ++i)
    if (!intakes_[i].acked && intake_outstanding_.contains(i)) schedule(clock_.now_ms() + rng_.between(200, 5 * second), Kind::intake, i);
  for (std::size_t i : refund_outstanding_) schedule(clock_.now_ms() + rng_.between(200, 5 * second), Kind::refund_intake, i);
}

TxnEnd Simulation::transact(const std::string& what, const std::function<void(store::Tx&)>& body, bool operator_resolution) {
  Snapshot before = db_->snapshot();
  const bool crash_before = faults_on() && rng_.chance(profile_.p_crash_in_txn);
  db_->begin();
  try {
    body(db_->tx());
  } catch (...) {
    db_->rollback();
    throw;
  }
  if (crash_before) {
    // Crash timeline: the transaction is open and dies with its connection; nothing is written.
    step("crash before commit: " + what);
    crash();
    return TxnEnd::crashed_before_commit;
  }
  db_->commit();
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

void Simulation::poll(std::size_t e) {
  EngineRt& rt = engines_[e];
  const int free = profile_.workers - rt.in_flight;
  rt.next_poll = clock_.now_ms() + profile_.poll_interval.count();
  if (free <= 0) return;
  // Nothing due: no transaction (the daemon's claim would find nothing either).
  if (!anything_due(free)) {
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
  std::vector<engine::FenceCall> fences;
  const TxnEnd end = transact("claim by " + rt.owner, [&](store::Tx& tx) {
    fences.clear();
    calls = engine::claim_round(tx, round, ids_, &fences);
  });
  if (end != TxnEnd::crashed_before_commit) check_fences(fences);
  if (end == TxnEnd::crashed_after_commit) return;
  if (end == TxnEnd::crashed_before_commit && opts_.defect != Defect::send_before_commit) return;
  for (const auto& call : calls) send(e, call);
}

// The simulated vendor has no cancel: a reported fence is not sent. What is checked is the
// report itself: every payment the engine asks to fence is, once the give-up committed, held in
// an open case the engine still owes a fence to (engine::fences_owed: a fenced reason, not a
// refund, not terminal).
void Simulation::check_fences(const std::vector<engine::FenceCall>& fences) {
  if (fences.empty()) return;
  result_.stats.fences += static_cast<std::int64_t>(fences.size());
  std::set<std::string> owed;
  for (const auto& f : engine::fences_owed(db_->tx(), {provider_name})) owed.insert(f.payment.id);
  for (const auto& f : fences)
    if (!owed.contains(f.payment.id))
      violation("fence: payment " + f.payment.id + " was reported for a fence (" + std::string(to_string(f.reason)) +
                ") but is not held in an open case owed one");
}

bool Simulation::anything_due(int max) {
  // The store's own claim, rolled back: what a round of `max` would claim now, and nothing
  // written (no step, no draw: the run stays the seed's).
  std::vector<store::Lease> leases;
  db_->begin();
  try {
    leases = db_->tx().claim_due("sim-probe", clock_.now_ms(), profile_.contract.lease, {{provider_name, max}}, max);
  } catch (...) {
    db_->rollback();
    throw;
  }
  db_->rollback();
  return !leases.empty();
}

UnixMillis Simulation::next_due() {
  if (auto at = db_->next_due()) return std::max(*at, clock_.now_ms());
  return clock_.now_ms() + 24 * hour;
}

void Simulation::on_record(std::size_t i) {
  Request& r = requests_[i];
  if (r.incarnation != incarnation_) return;
  EngineRt& rt = engines_[static_cast<std::size_t>(r.engine)];
  --rt.in_flight;
  rt.next_poll = clock_.now_ms();
  const Payment was = *db_->tx().find_payment_by_id(r.call.payment.id);
  const bool stale = was.fence != r.call.fence;
  engine::Call call = r.call;
  if (opts_.defect == Defect::unfenced_outcome) call.fence = was.fence;
  VendorResult result = r.result;
  if (opts_.defect == Defect::unconfirmed_close && call.call == CallKind::close && call.stopping &&
      result.outcome == VendorOutcome::declined) {
    call.call = CallKind::query;  // a refused close read as a confirming query's "closed"
  }
  const double jitter = rng_.unit();
  // A final answer of a submit or a query contradicting the terminal state the payment is in.
  const bool final_answer = !r.call.payment.refund_of && !r.call.stopping && r.call.call != CallKind::close &&
                            (r.result.outcome == VendorOutcome::succeeded || r.result.outcome == VendorOutcome::declined);
  const PaymentState answer = r.result.outcome == VendorOutcome::succeeded ? PaymentState::succeeded : PaymentState::failed_final;
  const bool contradicts = final_answer && is_terminal(was.state) && was.state != answer;
  const bool case_open_before = contradicts && open_case_of(was.id);
  store::CasResult cas = store::CasResult::not_found;
  std::vector<engine::FenceCall> fences;
  const TxnEnd end = transact("record " + std::string(to_string(r.result.outcome)) + " for " + call.payment.client_key,
                              [&](store::Tx& tx) {
                                fences.clear();
                                cas = engine::record_outcome(tx, call, result, clock_.now_ms(), jitter, ids_, nullptr,
                                                             &fences);
                              });
  if (end == TxnEnd::crashed_before_commit) return;
  check_fences(fences);
  if (r.result.outcome == VendorOutcome::not_found)
    check_not_found_rule(r, was, *db_->tx().find_payment_by_id(call.payment.id));
  if (contradicts) check_late_contradiction("record for " + call.payment.client_key, was, answer, case_open_before);
  if (stale) {
    ++result_.stats.stale_outcomes;
    // Invariant 5: a stale lease holder's answer changes nothing it decided on.
    const Payment now = *db_->tx().find_payment_by_id(call.payment.id);
    if (now.state != was.state || now.attempt_count != was.attempt_count)
      violation("invariant 5: a stale worker (fence " + std::to_string(r.call.fence) + ", current " +
                std::to_string(was.fence) + ") changed payment " + call.payment.id + " (" +
                std::string(store::to_string(cas)) + ")");
  }
}

bool Simulation::settled() { return db_->unsettled() == 0; }

void Simulation::loop() {
  const UnixMillis load_end = start_time_ + profile_.load_window + 5 * minute;
  const UnixMillis deadline = start_time_ + 7 * 24 * hour;
  std::uint64_t iterations = 0;
  for (;;) {
    if (!settling_ && clock_.now_ms() >= load_end && intake_outstanding_.empty() && refund_outstanding_.empty()) {
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
      if (idle && !anything_due(profile_.workers) && next_due() >= clock_.now_ms() + 24 * hour - 1) break;  // nothing left
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
      case Kind::refund_intake: on_refund_intake(ev.index); break;
      case Kind::replay: on_replay(ev.index, false); break;
      case Kind::conflict: on_replay(ev.index, true); break;
      case Kind::vendor_receive: on_vendor_receive(ev.index); break;
      case Kind::vendor_commit: on_vendor_commit(ev.index); break;
      case Kind::vendor_decide: on_vendor_decide(ev.index); break;
      case Kind::vendor_reverse: on_vendor_reverse(ev.index); break;
      case Kind::response: on_response(ev.index, false); break;
      case Kind::timeout: on_response(ev.index, true); break;
      case Kind::record: on_record(ev.index); break;
      case Kind::callback: on_callback(ev.index); break;
      case Kind::operator_pass: on_operator_pass(); break;
    }
  }
}

void silence_logs() {
  log::set_sink([](std::string_view) {});
}

Result run(const Options& options) {
  std::optional<Simulation> sim;
  try {
    sim.emplace(options);
  } catch (const std::exception& e) {
    Result r;
    r.seed = options.seed;
    r.violations.push_back(std::string("the seed's database could not be opened: ") + e.what());
    return r;
  }
  return sim->run();
}

Stats run_many(std::uint64_t from, std::uint64_t count, unsigned jobs,
               const std::function<void(const Result&)>& on_result, const Options& each) {
  silence_logs();
  std::atomic<std::uint64_t> next{from};
  std::mutex mu;
  Stats total;
  auto work = [&] {
    for (std::uint64_t seed; (seed = next.fetch_add(1)) < from + count;) {
      Options o = each;
      o.seed = seed;
      Result r = run(o);
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
  t.refunds += s.refunds;
  t.refunds_deferred += s.refunds_deferred;
  t.refunds_refused += s.refunds_refused;
  t.refund_calls += s.refund_calls;
  t.vendor_refunds += s.vendor_refunds;
  t.fences += s.fences;
  t.closes += s.closes;
  t.closes_refused_paid += s.closes_refused_paid;
  t.closed_final += s.closed_final;
  t.invisible_in_flight += s.invisible_in_flight;
  t.reversals += s.reversals;
  t.late_contradictions += s.late_contradictions;
  t.trusted_not_found += s.trusted_not_found;
  t.hidden_by_search_lag += s.hidden_by_search_lag;
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
    << " escalated=" << s.escalated << " operator_resolutions=" << s.resolved << " refunds=" << s.refunds
    << " refunds_deferred=" << s.refunds_deferred << " refunds_refused=" << s.refunds_refused
    << " refund_calls=" << s.refund_calls << " vendor_refunds=" << s.vendor_refunds << " fences=" << s.fences
    << " closes=" << s.closes << " closes_refused_paid=" << s.closes_refused_paid << " closed_final=" << s.closed_final
    << " hidden_by_search_lag=" << s.hidden_by_search_lag << " invisible_in_flight=" << s.invisible_in_flight
    << " reversals=" << s.reversals << " late_contradictions=" << s.late_contradictions
    << " trusted_not_found=" << s.trusted_not_found << " simulated_hours=" << s.simulated_ms / 3'600'000;
  return o.str();
}

}  // namespace payorch::dst
