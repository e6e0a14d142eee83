#include "engine/engine.h"

#include <boost/asio/post.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <unistd.h>

#include <cstdio>

#include "config/contract.h"
#include "core/ids.h"
#include "store/engine_store.h"
#include "store/payments.h"
#include "store/reconciliation.h"
#include "util/failpoint.h"

namespace payorch::engine {
namespace {

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

void log_cas(const Payment& p, std::string_view what, store::CasResult r) {
  if (r == store::CasResult::applied || r == store::CasResult::already_in_state) return;
  // A stale worker's decision is discarded by design (invariant 5); say so, never silently.
  std::fprintf(stderr, "payorchd: engine: payment %s: %.*s not applied: %.*s\n", p.id.c_str(),
               static_cast<int>(what.size()), what.data(),
               static_cast<int>(store::to_string(r).size()), store::to_string(r).data());
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
  for (const auto& [name, is_paused] : paused)
    if (is_paused && !paused_[name])
      std::fprintf(stderr, "payorchd: engine: provider %s at its risk cap: intake paused\n", name.c_str());
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
            log_cas(*p, "interrupted submit", store::apply_transition(db, p->id, lease.fence, *t, u, now, d_.rng));
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
              log_cas(*p, "give up", store::apply_transition(db, p->id, lease.fence, *t, u, now, d_.rng));
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
              std::fprintf(stderr, "payorchd: engine: claim failed (%.*s): %s\n",
                           static_cast<int>(to_string(status).size()), to_string(status).data(), error.c_str());
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
  auto done = [this, w](providers::VendorResult r) { record_outcome(w, std::move(r)); };
  if (w->call == CallKind::submit) w->adapter->submit(charge_of(w->payment), done);
  else w->adapter->query(charge_of(w->payment), done);
}

void Engine::record_outcome(std::shared_ptr<Work> w, providers::VendorResult result) {
  // Crash point: the vendor answered, nothing recorded. The lease lapses; the next claimant sees
  // an unfinished submit (UNKNOWN) or repeats the query.
  failpoint::hit("engine.call.after_vendor");
  {
    using O = providers::Outcome;
    std::lock_guard lock(mu_);
    if (result.outcome == O::ambiguous || result.outcome == O::not_sent || result.outcome == O::auth_refused)
      last_error_[w->payment.provider] = std::string(providers::to_string(result.outcome)) + ": " + result.detail;
  }
  if (result.outcome == providers::Outcome::auth_refused)
    std::fprintf(stderr, "payorchd: ALERT: provider %s refused our credentials: %s\n",
                 w->payment.provider.c_str(), result.detail.c_str());
  d_.writer.submit(
      [this, w, result](store::Db& db) {
        const UnixMillis now = d_.clock.now_ms();
        const Payment& p = w->payment;
        Decision d = decide(progress_of(p), w->call, to_vendor_outcome(result.outcome), w->contract, now, jitter());
        auto t = transition(p.state, d.trigger);
        if (!t) {
          std::fprintf(stderr, "payorchd: engine: payment %s: illegal %s in %s\n", p.id.c_str(),
                       std::string(to_string(d.trigger)).c_str(), std::string(to_string(p.state)).c_str());
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
          log_cas(p, to_string(d.trigger), r);
          r = reconcile_with_current(db, p, d.trigger, result, now, r);
        } else {
          log_cas(p, to_string(d.trigger), r);
        }
        if (r == store::CasResult::applied && d.give_up) {
          auto g = transition(t->to, Trigger::give_up, *d.give_up);
          store::TransitionUpdate gu;
          gu.next_attempt_at = now;
          log_cas(p, "give up", store::apply_transition(db, p.id, w->fence, *g, gu, now, d_.rng));
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
          std::fprintf(stderr, "payorchd: engine: payment %s: outcome not recorded (%s); the lease will lapse\n",
                       w->payment.id.c_str(), error.c_str());
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
  std::fprintf(stderr, "payorchd: ALERT: payment %s is %s but the vendor answered %.*s\n", current->id.c_str(),
               std::string(to_string(current->state)).c_str(),
               static_cast<int>(providers::to_string(result.outcome).size()), providers::to_string(result.outcome).data());
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
