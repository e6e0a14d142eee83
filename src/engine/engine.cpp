#include "engine/engine.h"

#include <boost/asio/post.hpp>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "config/contract.h"
#include "core/risk.h"
#include "core/ids.h"
#include "net/trace_context.h"
#include "store/leases.h"
#include "store/exposure.h"
#include "util/failpoint.h"
#include "util/log.h"

namespace payorch::engine {
namespace {

constexpr const char* vendor_calls_metric = "payorch_vendor_calls_total";
constexpr const char* vendor_call_duration_metric = "payorch_vendor_call_duration_seconds";
constexpr const char* breaker_opened_metric = "payorch_vendor_breaker_opened_total";
constexpr const char* fences_metric = "payorch_vendor_fences_total";

}  // namespace

struct Engine::Work {
  Call call;
  providers::Adapter* adapter = nullptr;
  bool probe = false;  // the one call an open breaker lets through
};

Engine::Engine(Deps deps) : d_(std::move(deps)), timer_(d_.ioc) {
  // The node, then this run of it: a restarted node never takes its previous run's leases for
  // its own (they lapse and are claimed like anyone's), and two processes given one node id by
  // mistake still hold leases apart.
  owner_ = d_.node_id + ":" + std::to_string(::getpid()) + ":" + ulid(d_.clock.now_ms(), d_.rng).substr(16);
  for (const auto& p : d_.config.providers) {
    contracts_[p.name] = config::contract_of(p, d_.config.engine);
    caps_[p.name] = p.risk;
    breakers_.emplace(p.name, Breaker(d_.config.engine.breaker));
    paused_[p.name] = false;
  }
  if (d_.metrics) {
    d_.metrics->declare_counter(breaker_opened_metric,
                                "Times a provider's circuit breaker opened after consecutive not-sent calls");
    d_.metrics->declare_counter(fences_metric,
                                "Vendor-side fences (cancel by reference) sent for payments given up on, by provider and outcome");
    d_.metrics->declare_counter(vendor_calls_metric,
                                "Vendor calls made, by provider, call (submit or query) and normalized outcome");
    d_.metrics->declare_histogram(vendor_call_duration_metric,
                                  "Time from sending a vendor call to its classified outcome, by provider and call",
                                  {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60});
  }
}

void Engine::start() {
  resend_owed_fences();
  schedule_poll(Millis(0));
}

void Engine::resend_owed_fences() {
  std::vector<std::string> fenced;
  for (const auto& [name, adapter] : d_.adapters)
    if (adapter->supports_fence()) fenced.push_back(name);
  if (fenced.empty()) return;
  auto owed = std::make_shared<std::vector<FenceCall>>();
  ++in_flight_;  // the drain waits for this read and the fences it sends
  d_.store.submit(
      [owed, fenced](store::Tx& tx) { *owed = fences_owed(tx, fenced); },
      [this, owed](store::WriteStatus status, const std::string& error) {
        boost::asio::post(d_.ioc, [this, owed, status, error] {
          if (status != store::WriteStatus::committed) {
            log::error("engine.fences_owed_failed", error, {{"status", to_string(status)}});
          } else if (!owed->empty()) {
            log::warn("engine.fences_owed", "open cases without the vendor-side fence's answer: sending it now",
                      {{"count", static_cast<std::int64_t>(owed->size())}});
            send_fences(*owed);
          }
          --in_flight_;
          if (stopping_ && in_flight_ == 0 && !claiming_) finish_stop();
        });
      });
}

void Engine::schedule_poll(Millis after) {
  if (stopping_) return;
  timer_.expires_after(after);
  timer_.async_wait([this](boost::system::error_code ec) {
    if (ec || stopping_) return;
    poll();
    schedule_poll(d_.config.engine.poll_interval);
  });
}

bool Engine::intake_paused(const std::string& provider) const {
  std::lock_guard lock(mu_);
  auto it = paused_.find(provider);
  return it != paused_.end() && it->second;
}

std::string Engine::last_error(const std::string& provider) const {
  std::lock_guard lock(mu_);
  auto it = last_error_.find(provider);
  return it == last_error_.end() ? std::string() : it->second;
}

std::string Engine::breaker_state(const std::string& provider) const {
  std::lock_guard lock(mu_);
  auto it = breakers_.find(provider);
  return it == breakers_.end() ? std::string("closed") : std::string(to_string(it->second.state()));
}

void Engine::refresh_exposure(store::Tx& tx) {
  // The kept figures (schema 005): a few rows, however many payments are pending. A provider is
  // at a cap when its count over every currency, or its amount in any one currency, reaches it.
  std::map<std::string, ExposureFigures> worst;
  for (const auto& r : tx.exposure()) {
    ExposureFigures& w = worst[r.provider];
    w.count += r.count;
    w.amount_minor = std::max(w.amount_minor, r.amount_minor);
  }
  std::map<std::string, bool> paused;
  for (const auto& [name, cap] : caps_) paused[name] = at_risk_cap(cap, worst[name]);
  std::lock_guard lock(mu_);
  for (const auto& [name, is_paused] : paused) {
    if (is_paused && !paused_[name])
      log::warn("engine.intake_paused", "provider at its risk cap: new intents get 503 intake-paused",
                {{"provider", name}});
    if (!is_paused && paused_[name])
      log::info("engine.intake_resumed", "provider back under its risk caps", {{"provider", name}});
  }
  paused_ = std::move(paused);
}

std::vector<store::ClaimQuota> Engine::claim_quotas(int free) const {
  std::vector<store::ClaimQuota> quotas;
  const UnixMillis now = d_.clock.now_ms();
  std::lock_guard lock(mu_);
  for (const auto& [name, breaker] : breakers_) {
    if (!d_.adapters.contains(name)) continue;
    if (const int n = breaker.allowance(free, now); n > 0) quotas.push_back({name, n});
  }
  return quotas;
}

void Engine::poll() {
  if (stopping_) return;
  if (claiming_.exchange(true)) {
    poll_again_ = true;  // a worker freed up meanwhile: look again once this round is done
    return;
  }
  const int free = d_.config.engine.workers - in_flight_.load();
  if (free <= 0) {
    claiming_ = false;
    return;
  }
  auto batch = std::make_shared<std::vector<Work>>();
  auto fences = std::make_shared<std::vector<FenceCall>>();
  auto quotas = claim_quotas(free);
  d_.store.submit(
      [this, batch, fences, free, quotas](store::Tx& tx) {
        batch->clear();  // the writer may run a job again after a busy retry
        fences->clear();
        refresh_exposure(tx);
        if (quotas.empty()) return;
        ClaimRound round;
        round.owner = owner_;
        round.now = d_.clock.now_ms();
        round.lease = d_.config.engine.lease;
        round.max = free;
        round.poll_interval = d_.config.engine.poll_interval;
        round.contracts = &contracts_;
        round.quotas = quotas;
        round.caps = &caps_;
        for (auto& call : claim_round(tx, round, d_.rng, fences.get()))
          batch->push_back(Work{call, d_.adapters.at(call.payment.provider)});
        // Crash/error point: leases, attempt counts and "submit started" written, not committed.
        // (Only a round that claimed something counts as a hit.)
        if (!batch->empty() && failpoint::hit("engine.claim.before_commit"))
          throw std::runtime_error("injected claim failure");
      },
      [this, batch, fences](store::WriteStatus status, const std::string& error) {
        boost::asio::post(d_.ioc, [this, batch, fences, status, error] {
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
          send_fences(*fences);
          if (stopping_) {
            // Claimed after the stop began: nothing is sent, and finish_stop undoes what these
            // claims wrote, so the payments look as before (never like an interrupted submit).
            for (auto& w : *batch) unsent_.push_back(std::move(w.call));
            if (in_flight_ == 0) finish_stop();
            return;
          }
          keep_sendable(*batch);
          mark_probes(*batch);
          for (auto& w : *batch) call_vendor(std::make_shared<Work>(std::move(w)));
          if (poll_again_.exchange(false)) poll();
        });
      });
}

void Engine::keep_sendable(std::vector<Work>& batch) {
  // The lease was taken when the claim began; the commit and the dispatch have used some of it.
  // A call is sent only if it fits in what is left of its lease (fits_in_lease): otherwise the
  // lease could lapse with a request on the wire and a second worker act meanwhile. The
  // start-up check (engine.lease >= call_time + margin) makes this rare; this makes it
  // impossible.
  const UnixMillis now = d_.clock.now_ms();
  auto unfit = std::stable_partition(batch.begin(), batch.end(),
                                     [now](const Work& w) { return fits_in_lease(w.call, now); });
  if (unfit == batch.end()) return;
  std::vector<Call> late;
  for (auto it = unfit; it != batch.end(); ++it) {
    log::warn("engine.lease_too_short", "too little of the lease is left to send this call: not sent, due again now",
              {{"payment_id", it->call.payment.id},
               {"client_key", it->call.payment.client_key},
               {"fence", it->call.fence},
               {"provider", it->call.payment.provider}});
    late.push_back(std::move(it->call));
  }
  batch.erase(unfit, batch.end());
  ++in_flight_;  // the undo is work the drain waits for
  d_.store.submit(
      [this, late](store::Tx& tx) {
        const UnixMillis at = d_.clock.now_ms();
        for (const auto& c : late) unclaim(tx, c, at);
      },
      [this](store::WriteStatus, const std::string&) {
        boost::asio::post(d_.ioc, [this] {
          --in_flight_;
          if (stopping_ && in_flight_ == 0 && !claiming_) finish_stop();
        });
      });
}

void Engine::mark_probes(std::vector<Work>& batch) {
  std::map<std::string, int> claimed;
  for (const auto& w : batch) ++claimed[w.call.payment.provider];
  const UnixMillis now = d_.clock.now_ms();
  std::lock_guard lock(mu_);
  for (const auto& [name, n] : claimed) {
    if (!breakers_.at(name).claimed(n, now)) continue;
    for (auto& w : batch)
      if (w.call.payment.provider == name) w.probe = true;
  }
}

void Engine::count_breaker(const Work& w, const providers::VendorResult& result) {
  const std::string& provider = w.call.payment.provider;
  Breaker::Change change;
  int failures = 0;
  {
    std::lock_guard lock(mu_);
    Breaker& b = breakers_.at(provider);
    change = b.record(result.outcome == VendorOutcome::not_sent, w.probe, d_.clock.now_ms());
    failures = b.consecutive_not_sent();
  }
  if (change == Breaker::Change::opened) {
    if (d_.metrics) d_.metrics->inc(breaker_opened_metric, {{"provider", provider}});
    log::alert("engine.breaker_opened",
               "the vendor cannot be reached: its payments wait, one probe call at a time: " + result.detail,
               {{"provider", provider}, {"consecutive_not_sent", failures}});
  } else if (change == Breaker::Change::closed) {
    log::info("engine.breaker_closed", "the vendor answered: its payments are claimed again",
              {{"provider", provider}});
  }
}

void Engine::call_vendor(std::shared_ptr<Work> w) {
  ++in_flight_;
  const MonotonicTime started = d_.clock.monotonic();
  auto done = [this, w, started](providers::VendorResult r) {
    count_call(*w, r, d_.clock.monotonic() - started);
    count_breaker(*w, r);
    record(w, std::move(r));
  };
  const Payment& p = w->call.payment;
  // The call continues the trace the payment arrived with, if any (net/trace_context.h).
  const net::OutgoingTraceScope trace(p.origin.trace_id, p.origin.trace_flags);
  if (!p.refund_of) {
    if (w->call.call == CallKind::submit) w->adapter->submit(charge_of(p), done);
    else if (w->call.call == CallKind::close) w->adapter->fence(charge_of(p), done);
    else w->adapter->query(charge_of(p), done);
    return;
  }
  // A refund (docs/refunds.md). One the vendor cannot be asked for is not sent: it waits, and
  // its retry budget ends in a case for a human, never in a guess. No call was made, so neither
  // the breaker nor the call metrics hear of it.
  const providers::RefundRequest req = refund_request_of(p);
  std::string unsendable;
  if (!w->adapter->supports_refunds()) unsendable = "the provider's adapter does not make refunds";
  else if (req.charge_reference.empty()) unsendable = "the refunded payment's vendor charge id is not known";
  if (!unsendable.empty()) {
    return boost::asio::post(timer_.get_executor(), [this, w, unsendable] {
      record(w, providers::VendorResult{VendorOutcome::not_sent, {}, {}, {}, {}, 0, unsendable});
    });
  }
  if (w->call.call == CallKind::submit) w->adapter->refund(req, done);
  else w->adapter->query_refund(req, done);
}

void Engine::count_call(const Work& w, const providers::VendorResult& result,
                        MonotonicTime::duration took) {
  const Payment& p = w.call.payment;
  const std::string_view call = to_string(w.call.call);
  const std::string_view outcome = to_string(result.outcome);
  if (d_.metrics) {
    d_.metrics->inc(vendor_calls_metric, {{"provider", p.provider},
                                          {"call", std::string(call)},
                                          {"outcome", std::string(outcome)}});
    d_.metrics->observe(vendor_call_duration_metric, {{"provider", p.provider}, {"call", std::string(call)}},
                        std::chrono::duration<double>(took).count());
  }
  log::info("engine.vendor_call", result.detail,
            {{"payment_id", p.id},
             {"client_key", p.client_key},
             {"fence", w.call.fence},
             {"provider", p.provider},
             {"call", call},
             {"attempt", p.attempt_count},
             {"outcome", outcome},
             {"http_status", result.http_status},
             {"duration_ms", static_cast<std::int64_t>(
                                 std::chrono::duration_cast<std::chrono::milliseconds>(took).count())}});
}

void Engine::record(std::shared_ptr<Work> w, providers::VendorResult result) {
  const Payment& p = w->call.payment;
  // Crash point: the vendor answered, nothing recorded. The lease lapses; the next claimant sees
  // an unfinished submit (UNKNOWN) or repeats the query.
  failpoint::hit("engine.call.after_vendor");
  {
    using O = VendorOutcome;
    std::lock_guard lock(mu_);
    // Shown by GET /status, which reveals no tenant data: the vendor's status code, or the
    // transport error when there was no answer — never the detail, which may quote the charge.
    if (result.outcome == O::ambiguous || result.outcome == O::not_sent || result.outcome == O::auth_refused)
      last_error_[p.provider] =
          std::string(to_string(result.outcome)) + ": " +
          (result.http_status != 0 ? "HTTP " + std::to_string(result.http_status) : result.detail);
  }
  if (result.outcome == VendorOutcome::auth_refused)
    log::alert("engine.vendor_auth_refused", "the vendor refused our credentials: " + result.detail,
               {{"provider", p.provider},
                {"payment_id", p.id},
                {"client_key", p.client_key},
                {"fence", w->call.fence}});
  auto fences = std::make_shared<std::vector<FenceCall>>();
  d_.store.submit(
      [this, w, result, fences](store::Tx& tx) {
        fences->clear();  // the writer may run a job again after a busy retry
        record_outcome(tx, w->call, result, d_.clock.now_ms(), jitter(d_.rng), d_.rng, d_.metrics,
                       fences.get());
        // Crash/error point: the outcome is written, not committed. Dying here is the same as
        // dying before the answer came: the lease lapses and recovery starts over by key.
        if (failpoint::hit("engine.outcome.before_commit")) throw std::runtime_error("injected outcome failure");
      },
      [this, w, fences](store::WriteStatus status, const std::string& error) {
        const Payment& payment = w->call.payment;
        if (status == store::WriteStatus::committed) {
          // Crash point: the outcome is durable; only in-memory bookkeeping is lost.
          failpoint::hit("engine.outcome.after_commit");
        } else {
          log::error("engine.outcome_not_recorded", error + "; the lease will lapse and recovery starts over by key",
                     {{"payment_id", payment.id},
                      {"client_key", payment.client_key},
                      {"fence", w->call.fence},
                      {"status", to_string(status)}});
        }
        d_.changes.notify(payment.id);
        boost::asio::post(d_.ioc, [this, fences, status] {
          // A give-up this outcome committed: its fence goes out before this worker is free.
          if (status == store::WriteStatus::committed) send_fences(*fences);
          --in_flight_;
          if (stopping_) {
            if (in_flight_ == 0 && !claiming_) finish_stop();
            return;
          }
          poll();  // a worker is free: look for more work now rather than at the next tick
        });
      });
}

void Engine::send_fences(const std::vector<FenceCall>& fences) {
  for (const FenceCall& f : fences) {
    const Payment& p = f.payment;
    auto it = d_.adapters.find(p.provider);
    if (it == d_.adapters.end() || !it->second->supports_fence()) {
      log::info("engine.fence_unsupported", "the provider offers no vendor-side fence: the case stays as opened",
                {{"payment_id", p.id}, {"client_key", p.client_key}, {"provider", p.provider}});
      continue;
    }
    if (stopping_) {
      // The case is open either way, without fence evidence: the next start sends it
      // (resend_owed_fences, docs/execution.md "The vendor-side fence").
      log::warn("engine.fence_not_sent", "stopping: the vendor-side fence for this case is not sent",
                {{"payment_id", p.id}, {"client_key", p.client_key}, {"provider", p.provider}});
      continue;
    }
    // Crash point: the case is committed, the fence not sent. The next start sends it
    // (resend_owed_fences).
    failpoint::hit("engine.fence.before_send");
    log::info("engine.fence_sent", "automatic work gave up: asking the vendor to cancel by reference",
              {{"payment_id", p.id},
               {"client_key", p.client_key},
               {"provider", p.provider},
               {"case_reason", to_string(f.reason)}});
    ++in_flight_;  // the drain waits for the answer and its evidence
    const net::OutgoingTraceScope trace(p.origin.trace_id, p.origin.trace_flags);
    it->second->fence(charge_of(p), [this, f](providers::VendorResult r) { record_fence(f, std::move(r)); });
  }
}

void Engine::record_fence(const FenceCall& f, providers::VendorResult result) {
  const Payment& p = f.payment;
  if (d_.metrics)
    d_.metrics->inc(fences_metric, {{"provider", p.provider}, {"outcome", std::string(to_string(result.outcome))}});
  log::info("engine.fence_answered", result.detail,
            {{"payment_id", p.id},
             {"client_key", p.client_key},
             {"provider", p.provider},
             {"outcome", to_string(result.outcome)},
             {"http_status", result.http_status}});
  auto appended = std::make_shared<bool>(false);
  d_.store.submit(
      [this, f, result, appended](store::Tx& tx) {
        const UnixMillis now = d_.clock.now_ms();
        *appended = tx.append_open_case_evidence(f.payment.id, fence_evidence(f.payment, f.reason, result, now), now);
      },
      [this, f, appended](store::WriteStatus status, const std::string& error) {
        const Payment& fenced = f.payment;
        if (status != store::WriteStatus::committed)
          log::error("engine.fence_not_recorded", error + "; the fence's answer is not on the case",
                     {{"payment_id", fenced.id}, {"client_key", fenced.client_key}, {"status", to_string(status)}});
        else if (!*appended)
          log::info("engine.fence_not_recorded", "the case was resolved before the fence's answer came",
                    {{"payment_id", fenced.id}, {"client_key", fenced.client_key}});
        boost::asio::post(d_.ioc, [this] {
          --in_flight_;
          if (stopping_ && in_flight_ == 0 && !claiming_) finish_stop();
        });
      });
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
  d_.store.submit(
      [this, unsent = std::move(unsent_)](store::Tx& tx) {
        const UnixMillis now = d_.clock.now_ms();
        for (const auto& c : unsent) unclaim(tx, c, now);
        tx.release_leases_of(owner_);
      },
                   [this, cb](store::WriteStatus, const std::string&) { boost::asio::post(d_.ioc, cb); });
}

}  // namespace payorch::engine
