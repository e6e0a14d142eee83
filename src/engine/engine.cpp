#include "engine/engine.h"

#include <boost/asio/post.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <unistd.h>

#include <chrono>

#include "config/contract.h"
#include "core/ids.h"
#include "store/engine_store.h"
#include "store/payments.h"
#include "store/reconciliation.h"
#include "util/failpoint.h"
#include "util/log.h"

namespace payorch::engine {
namespace {

constexpr const char* vendor_calls_metric = "payorch_vendor_calls_total";
constexpr const char* vendor_call_duration_metric = "payorch_vendor_call_duration_seconds";

Progress progress_of(const Payment& p) {
  Progress pr;
  pr.state = p.state;
  pr.next_action = p.next_action;
  pr.attempt_count = p.attempt_count;
  pr.first_submit_at = p.first_submit_at;
  pr.last_submit_ended_at = p.last_submit_ended_at;
  pr.budget_started_at = p.budget_started_at;
  pr.budget_attempts_base = p.budget_attempts_base;
  return pr;
}

bool submit_in_flight(const Payment& p) {
  return p.last_submit_started_at &&
         (!p.last_submit_ended_at || *p.last_submit_started_at > *p.last_submit_ended_at);
}

providers::ChargeRequest charge_of(const Payment& p) {
  return providers::ChargeRequest{p.client_key, p.amount_minor, p.currency, p.payee, p.source};
}

std::string evidence(std::string_view source, const Payment& p, std::string_view what,
                     const std::string& detail, UnixMillis now) {
  boost::json::object e{{"at", format_rfc3339(now)},
                        {"source", source},
                        {"what", what},
                        {"attempt_count", p.attempt_count},
                        {"detail", detail}};
  return boost::json::serialize(e);
}

void log_cas(const Payment& p, std::int64_t fence, std::string_view what, store::CasResult r) {
  if (r == store::CasResult::applied || r == store::CasResult::already_in_state) return;
  // A stale worker's decision is discarded by design (invariant 5); say so, never silently.
  const bool stale = r == store::CasResult::stale_fence;
  log::write(stale ? log::Level::warn : log::Level::error, "engine.cas_refused",
             stale ? "a newer lease holder or writer decided meanwhile: this decision is discarded"
                   : "the transition does not apply to the payment's current state: refused",
             {{"payment_id", p.id},
              {"client_key", p.client_key},
              {"fence", fence},
              {"trigger", what},
              {"result", store::to_string(r)}});
}

}  // namespace

VendorOutcome to_vendor_outcome(providers::Outcome o) {
  using O = providers::Outcome;
  switch (o) {
    case O::succeeded: return VendorOutcome::succeeded;
    case O::declined: return VendorOutcome::declined;
    case O::pending: return VendorOutcome::pending;
    case O::not_found: return VendorOutcome::not_found;
    case O::ambiguous: return VendorOutcome::ambiguous;
    case O::not_sent: return VendorOutcome::not_sent;
    case O::key_mismatch: return VendorOutcome::key_mismatch;
    case O::auth_refused: return VendorOutcome::auth_refused;
    case O::unsupported: return VendorOutcome::unsupported;
  }
  return VendorOutcome::ambiguous;
}

struct Engine::Work {
  Payment payment;  // as claimed; attempt_count already counts this call
  std::int64_t fence = 0;
  CallKind call = CallKind::submit;
  Contract contract;
  providers::Adapter* adapter = nullptr;
};

Engine::Engine(Deps deps) : d_(std::move(deps)), timer_(d_.ioc) {
  char host[64] = {};
  ::gethostname(host, sizeof host - 1);
  owner_ = std::string(host) + ":" + std::to_string(::getpid()) + ":" + ulid(d_.clock.now_ms(), d_.rng).substr(16);
  for (const auto& p : d_.config.providers) {
    contracts_[p.name] = config::contract_of(p, d_.config.engine);
    paused_[p.name] = false;
  }
  if (d_.metrics) {
    d_.metrics->declare_counter(vendor_calls_metric,
                                "Vendor calls made, by provider, call (submit or query) and normalized outcome");
    d_.metrics->declare_histogram(vendor_call_duration_metric,
                                  "Time from sending a vendor call to its classified outcome, by provider and call",
                                  {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60});
  }
}

void Engine::start() { schedule_poll(Millis(0)); }

void Engine::schedule_poll(Millis after) {
  if (stopping_) return;
  timer_.expires_after(after);
  timer_.async_wait([this](boost::system::error_code ec) {
    if (ec || stopping_) return;
    poll();
    schedule_poll(d_.config.engine.poll_interval);
  });
}

double Engine::jitter() {
  std::uint8_t b[4];
  d_.rng.fill(b);
  std::uint32_t v = (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) | (std::uint32_t{b[2]} << 8) | b[3];
  return static_cast<double>(v) / 4294967296.0;
}

bool Engine::intake_paused(const std::string& provider) const {
  std::lock_guard lock(mu_);
  auto it = paused_.find(provider);
  return it != paused_.end() && it->second;
}

std::vector<Exposure> Engine::exposure() const {
  std::lock_guard lock(mu_);
  return exposure_;
}

std::string Engine::last_error(const std::string& provider) const {
  std::lock_guard lock(mu_);
  auto it = last_error_.find(provider);
  return it == last_error_.end() ? std::string() : it->second;
}

void Engine::refresh_exposure(store::Db& db) {
  std::vector<Exposure> rows;
  for (auto& r : store::exposure(db)) rows.push_back({r.provider, r.currency, r.count, r.amount_minor});
  std::map<std::string, bool> paused;
  for (const auto& p : d_.config.providers) {
    std::int64_t count = 0;
    bool over = false;
    for (const auto& r : rows) {
      if (r.provider != p.name) continue;
      count += r.count;
      if (r.amount_minor >= p.risk.max_unknown_amount_minor) over = true;
    }
    paused[p.name] = over || count >= p.risk.max_unknown_count;
  }
  std::lock_guard lock(mu_);
  for (const auto& [name, is_paused] : paused) {
    if (is_paused && !paused_[name])
      log::warn("engine.intake_paused", "provider at its risk cap: new intents get 503 intake-paused",
                {{"provider", name}});
    if (!is_paused && paused_[name])
      log::info("engine.intake_resumed", "provider back under its risk caps", {{"provider", name}});
  }
  exposure_ = std::move(rows);
  paused_ = std::move(paused);
}

void Engine::poll() {
  if (stopping_ || claiming_.exchange(true)) return;
  const int free = d_.config.engine.workers - in_flight_.load();
  if (free <= 0) {
    claiming_ = false;
    return;
  }
  auto batch = std::make_shared<std::vector<Work>>();
  d_.writer.submit(
      [this, batch, free](store::Db& db) {
        batch->clear();  // the writer may run a job again after a busy retry
        const UnixMillis now = d_.clock.now_ms();
        refresh_exposure(db);
        for (auto& lease : store::claim_due(db, owner_, now, d_.config.engine.lease, free)) {
          auto p = store::find_payment_by_id(db, lease.payment_id);
          auto adapter = d_.adapters.find(p->provider);
          auto contract = contracts_.find(p->provider);
          if (adapter == d_.adapters.end() || contract == contracts_.end()) {
            // Its provider was removed from the config: leave it alone, look again later.
            store::release_lease(db, p->id, lease.fence, now + 60'000);
            continue;
          }
          const Contract& c = contract->second;
          if (p->state == PaymentState::processing && submit_in_flight(*p)) {
            // The last submit started and never reported back (its worker died, or lost its
            // lease mid-call; the lease outlives the request timeout, so that call is over).
            // Whether it charged is unknown: recover by the same client_key.
            auto t = transition(p->state, Trigger::submit_ambiguous);
            store::TransitionUpdate u;
            u.next_attempt_at = now;
            u.release_lease = false;
            u.last_submit_ended_at = now;
            log_cas(*p, lease.fence, "interrupted submit", store::apply_transition(db, p->id, lease.fence, *t, u, now, d_.rng));
            p = store::find_payment_by_id(db, lease.payment_id);
          }
          Plan pl = plan(progress_of(*p), c, now);
          switch (pl.kind) {
            case Plan::Kind::nothing:
              store::release_lease(db, p->id, lease.fence, p->next_attempt_at);
              continue;
            case Plan::Kind::wait:
              store::release_lease(db, p->id, lease.fence, pl.next_attempt_at);
              continue;
            case Plan::Kind::give_up: {
              auto t = transition(p->state, Trigger::give_up, pl.reason);
              store::TransitionUpdate u;
              u.next_attempt_at = now;
              log_cas(*p, lease.fence, "give up", store::apply_transition(db, p->id, lease.fence, *t, u, now, d_.rng));
              store::append_case_evidence(db, p->id,
                                          evidence("engine", *p, to_string(pl.reason), "automatic work stopped", now));
              continue;
            }
            case Plan::Kind::call:
              break;
          }
          const bool submit = pl.call == CallKind::submit;
          if (submit && p->state == PaymentState::processing && intake_paused(p->provider)) {
            // Risk cap reached: unsent payments wait; recovery of UNKNOWN ones goes on.
            store::release_lease(db, p->id, lease.fence, now + d_.config.engine.poll_interval.count() * 2);
            continue;
          }
          if (!store::record_call_started(db, p->id, lease.fence, submit, now)) continue;
          p = store::find_payment_by_id(db, lease.payment_id);
          batch->push_back(Work{*p, lease.fence, pl.call, c, adapter->second});
          if (submit) refresh_exposure(db);  // a submit in flight counts against the caps
        }
        // Crash/error point: leases, attempt counts and "submit started" written, not committed.
        // (Only a round that claimed something counts as a hit.)
        if (!batch->empty() && failpoint::hit("engine.claim.before_commit"))
          throw std::runtime_error("injected claim failure");
      },
      [this, batch](store::WriteStatus status, const std::string& error) {
        boost::asio::post(d_.ioc, [this, batch, status, error] {
          claiming_ = false;
          if (status != store::WriteStatus::committed) {
            if (status != store::WriteStatus::stopped)
              log::error("engine.claim_failed", error, {{"status", to_string(status)}});
            if (stopping_ && in_flight_ == 0) finish_stop();
            return;
          }
          // Crash point: claimed and marked started, nothing sent yet. Recovery sees a submit
          // that may have left and queries/replays by the same key.
          if (!batch->empty()) failpoint::hit("engine.claim.after_commit");
          if (stopping_) {
            // Leases taken just before the stop are released by finish_stop; nothing is sent.
            if (in_flight_ == 0) finish_stop();
            return;
          }
          for (auto& w : *batch) call_vendor(std::make_shared<Work>(std::move(w)));
        });
      });
}

void Engine::call_vendor(std::shared_ptr<Work> w) {
  ++in_flight_;
  const auto started = std::chrono::steady_clock::now();
  auto done = [this, w, started](providers::VendorResult r) {
    count_call(*w, r, std::chrono::steady_clock::now() - started);
    record_outcome(w, std::move(r));
  };
  if (w->call == CallKind::submit) w->adapter->submit(charge_of(w->payment), done);
  else w->adapter->query(charge_of(w->payment), done);
}

void Engine::count_call(const Work& w, const providers::VendorResult& result,
                        std::chrono::steady_clock::duration took) {
  const std::string_view call = to_string(w.call);
  const std::string_view outcome = providers::to_string(result.outcome);
  if (d_.metrics) {
    d_.metrics->inc(vendor_calls_metric, {{"provider", w.payment.provider},
                                          {"call", std::string(call)},
                                          {"outcome", std::string(outcome)}});
    d_.metrics->observe(vendor_call_duration_metric, {{"provider", w.payment.provider}, {"call", std::string(call)}},
                        std::chrono::duration<double>(took).count());
  }
  log::info("engine.vendor_call", result.detail,
            {{"payment_id", w.payment.id},
             {"client_key", w.payment.client_key},
             {"fence", w.fence},
             {"provider", w.payment.provider},
             {"call", call},
             {"attempt", w.payment.attempt_count},
             {"outcome", outcome},
             {"http_status", result.http_status},
             {"duration_ms", static_cast<std::int64_t>(
                                 std::chrono::duration_cast<std::chrono::milliseconds>(took).count())}});
}

void Engine::record_outcome(std::shared_ptr<Work> w, providers::VendorResult result) {
  // Crash point: the vendor answered, nothing recorded. The lease lapses; the next claimant sees
  // an unfinished submit (UNKNOWN) or repeats the query.
  failpoint::hit("engine.call.after_vendor");
  {
    using O = providers::Outcome;
    std::lock_guard lock(mu_);
    // Shown by GET /status, which reveals no tenant data: the vendor's status code, or the
    // transport error when there was no answer — never the detail, which may quote the charge.
    if (result.outcome == O::ambiguous || result.outcome == O::not_sent || result.outcome == O::auth_refused)
      last_error_[w->payment.provider] =
          std::string(providers::to_string(result.outcome)) + ": " +
          (result.http_status != 0 ? "HTTP " + std::to_string(result.http_status) : result.detail);
  }
  if (result.outcome == providers::Outcome::auth_refused)
    log::alert("engine.vendor_auth_refused", "the vendor refused our credentials: " + result.detail,
               {{"provider", w->payment.provider},
                {"payment_id", w->payment.id},
                {"client_key", w->payment.client_key},
                {"fence", w->fence}});
  d_.writer.submit(
      [this, w, result](store::Db& db) {
        const UnixMillis now = d_.clock.now_ms();
        const Payment& p = w->payment;
        Decision d = decide(progress_of(p), w->call, to_vendor_outcome(result.outcome), w->contract, now, jitter());
        auto t = transition(p.state, d.trigger);
        if (!t) {
          log::error("engine.illegal_transition", "the decision is not a legal transition from the claimed state",
                     {{"payment_id", p.id},
                      {"client_key", p.client_key},
                      {"fence", w->fence},
                      {"trigger", to_string(d.trigger)},
                      {"state", to_string(p.state)}});
          store::release_lease(db, p.id, w->fence, now);
          return;
        }
        store::TransitionUpdate u;
        u.next_attempt_at = d.next_attempt_at;
        u.vendor_reference = result.vendor_reference;
        if (t->to == PaymentState::failed_final) {
          u.failure_code = result.decline_code.value_or("declined");
          u.failure_message = result.detail;
        }
        if (w->call == CallKind::submit) u.last_submit_ended_at = now;
        auto r = store::apply_transition(db, p.id, w->fence, *t, u, now, d_.rng);
        if (r == store::CasResult::illegal || r == store::CasResult::stale_fence) {
          // Someone else decided while the call was out: a verified callback or an operator
          // (they advance the fence), or a worker that took over a lapsed lease. A final answer
          // is still the vendor's word and is judged against the state the payment is in now:
          // agreeing with a terminal state is a no-op, contradicting it opens
          // late_contradiction — never a second transition, never a second event.
          log_cas(p, w->fence, to_string(d.trigger), r);
          r = reconcile_with_current(db, p, d.trigger, result, now, r);
        } else {
          log_cas(p, w->fence, to_string(d.trigger), r);
        }
        if (r == store::CasResult::applied && d.give_up) {
          auto g = transition(t->to, Trigger::give_up, *d.give_up);
          store::TransitionUpdate gu;
          gu.next_attempt_at = now;
          log_cas(p, w->fence, "give up", store::apply_transition(db, p.id, w->fence, *g, gu, now, d_.rng));
        }
        if (r == store::CasResult::applied && (t->open_case || d.give_up))
          store::append_case_evidence(db, p.id,
                                      evidence("vendor", p, providers::to_string(result.outcome), result.detail, now));
        // Crash/error point: the outcome is written, not committed. Dying here is the same as
        // dying before the answer came: the lease lapses and recovery starts over by key.
        if (failpoint::hit("engine.outcome.before_commit")) throw std::runtime_error("injected outcome failure");
      },
      [this, w](store::WriteStatus status, const std::string& error) {
        if (status != store::WriteStatus::committed)
          log::error("engine.outcome_not_recorded", error + "; the lease will lapse and recovery starts over by key",
                     {{"payment_id", w->payment.id},
                      {"client_key", w->payment.client_key},
                      {"fence", w->fence},
                      {"status", to_string(status)}});
        // Crash point: the outcome is durable; only in-memory bookkeeping is lost.
        failpoint::hit("engine.outcome.after_commit");
        d_.changes.notify(w->payment.id);
        boost::asio::post(d_.ioc, [this] {
          --in_flight_;
          if (stopping_) {
            if (in_flight_ == 0 && !claiming_) finish_stop();
            return;
          }
          poll();  // a worker is free: look for more work now rather than at the next tick
        });
      });
}

store::CasResult Engine::reconcile_with_current(store::Db& db, const Payment& claimed, Trigger trigger,
                                               const providers::VendorResult& result, UnixMillis now,
                                               store::CasResult refused) {
  std::optional<Trigger> answer;
  if (trigger == Trigger::submit_succeeded || trigger == Trigger::recovery_succeeded)
    answer = Trigger::recovery_succeeded;
  if (trigger == Trigger::submit_declined || trigger == Trigger::recovery_declined)
    answer = Trigger::recovery_declined;
  auto current = store::find_payment_by_id(db, claimed.id);
  // Not a final answer (pending, inconclusive, ...), or the payment is not terminal: the
  // engine's view is simply out of date. Nothing to apply; the next claim starts afresh.
  if (!current || !answer || !is_terminal(current->state)) return refused;
  auto t = transition(current->state, *answer);
  if (t->noop()) return store::CasResult::already_in_state;
  if (d_.metrics) d_.metrics->inc("payorch_late_contradictions_total", {{"provider", current->provider}});
  log::alert("engine.late_contradiction", "the vendor contradicts a terminal payment: " + result.detail,
             {{"payment_id", current->id},
              {"client_key", current->client_key},
              {"fence", claimed.fence},
              {"provider", current->provider},
              {"state", to_string(current->state)},
              {"vendor_outcome", providers::to_string(result.outcome)}});
  // A case already open for the payment gets the answer as evidence; otherwise the
  // late_contradiction case opens with it (one payment.escalated at most).
  boost::json::object ev{{"source", "vendor"},
                         {"what", providers::to_string(result.outcome)},
                         {"attempt_count", claimed.attempt_count},
                         {"fence", claimed.fence},
                         {"detail", result.detail}};
  store::hold_with_evidence(db, *current, *t, std::move(ev), now, d_.rng);
  return store::CasResult::applied;
}

void Engine::stop(std::function<void()> done) {
  boost::asio::post(d_.ioc, [this, done = std::move(done)]() mutable {
    on_stopped_ = std::move(done);
    stopping_ = true;
    timer_.cancel();
    if (in_flight_ == 0 && !claiming_) finish_stop();
  });
}

void Engine::finish_stop() {
  if (!on_stopped_) return;
  auto cb = std::move(on_stopped_);
  on_stopped_ = nullptr;
  d_.writer.submit([this](store::Db& db) { store::release_leases_of(db, owner_); },
                   [this, cb](store::WriteStatus, const std::string&) { boost::asio::post(d_.ioc, cb); });
}

}  // namespace payorch::engine
