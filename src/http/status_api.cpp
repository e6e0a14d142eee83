// /readyz, /status and /metrics: what the operator sees of the daemon and its database.
#include "http/api.h"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json/array.hpp>
#include <algorithm>
#include <atomic>

#include "http/not_committed.h"
#include "store/commit_sequence.h"
#include "store/exposure.h"
#include "store/outbox.h"
#include "store/status.h"
#include "util/build_info.h"
#include "util/log.h"
#include "util/process_stats.h"

namespace payorch::http {

namespace bhttp = boost::beast::http;
namespace {

// /readyz and /status say whether the database takes writes now, not whether it did at start-up.
// The writer records the outcome of its transactions (store::StorageHealth). A write committed
// in the last 5 s, or a failure in the last second, is current enough; otherwise — nothing
// written for a while, or a failure that may have cleared — a probe asks again first: a writer
// job that rewrites one row (the commit sequence), so a full disk or a read-only file fails it.
// So readiness recovers when the disk does, with no intake needed, and an idle daemon costs at
// most one small write per 5 s of readiness checks.
constexpr std::chrono::seconds storage_fresh_for{5};
constexpr std::chrono::seconds failing_storage_probed_every{1};
constexpr std::chrono::seconds storage_probe_timeout{2};

// One probe: answers once, with the writer's answer or at the timeout, on the executor.
struct StorageProbe {
  StorageProbe(boost::asio::any_io_executor executor, std::function<void(bool)> on_answer)
      : timer(std::move(executor)), then(std::move(on_answer)) {}
  void answer(bool stalled) {
    if (!answered.exchange(true)) then(stalled);
  }
  std::atomic<bool> answered{false};
  boost::asio::steady_timer timer;
  std::function<void(bool stalled)> then;
};

// The storage error /readyz and /status name, or null while the database takes writes.
boost::json::value storage_error(const store::StorageHealth& h, bool stalled, UnixMillis now) {
  if (stalled)
    return boost::json::object{
        {"kind", "stalled"},
        {"message", "a write did not complete within " + std::to_string(storage_probe_timeout.count()) + " s"},
        {"at", format_rfc3339(now)}};
  if (h.writable) return nullptr;
  return boost::json::object{{"kind", h.error_kind},
                             {"message", h.error},
                             {"at", format_rfc3339(h.failed_at.value_or(now))}};
}

}  // namespace

void Api::with_current_storage_health(std::function<void(bool stalled)> then) {
  const store::StorageHealth h = deps_.store.health();
  const UnixMillis now = deps_.clock.now_ms();
  auto within = [now](std::optional<UnixMillis> t, std::chrono::seconds d) {
    return t && now - *t < std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  };
  if (h.writable ? within(h.last_commit_at, storage_fresh_for)
                 : within(h.failed_at, failing_storage_probed_every))
    return then(false);
  auto probe = std::make_shared<StorageProbe>(deps_.executor, std::move(then));
  probe->timer.expires_after(storage_probe_timeout);
  probe->timer.async_wait([probe](boost::system::error_code ec) {
    if (!ec) probe->answer(true);
  });
  // Answered on the executor, not on the writer thread: the answer may read the database.
  deps_.store.probe_write([probe, executor = deps_.executor](store::WriteStatus, const std::string&) {
                        boost::asio::post(executor, [probe] { probe->answer(false); });
                      });
}

Response Api::readiness(unsigned v, bool stalled) {
  if (draining()) return make_problem(Problem::shutting_down, "payorchd is draining", {}, v);
  const store::StorageHealth h = deps_.store.health();
  boost::json::value error = storage_error(h, stalled, deps_.clock.now_ms());
  if (!error.is_null()) {
    const auto& e = error.as_object();
    return make_problem(
        Problem::storage_unavailable,
        "the database cannot be written (" + std::string(e.at("kind").as_string()) + "): " +
            std::string(e.at("message").as_string()) + "; intake is refused until a write commits again",
        boost::json::object{{"last_error", error}}, v);
  }
  // The read side as well, at request time: the connections GET requests use.
  try {
    deps_.store.probe_read();
  } catch (const std::exception& e) {
    return request_failed(e, "/readyz", "GET", "the database cannot be read; the log says why (http.request_failed)", v);
  }
  return make_json(200, boost::json::object{{"ready", true}}, v);
}

Response Api::status(unsigned v, bool stalled) {
  auto [counts, exposure, backlog] = read_operations_snapshot();
  const UnixMillis now = deps_.clock.now_ms();
  const store::StorageHealth health = deps_.store.health();
  boost::json::value storage_failure = storage_error(health, stalled, now);
  auto age_s = [now](std::optional<UnixMillis> t) -> boost::json::value {
    if (!t) return nullptr;
    return std::max<std::int64_t>(0, (now - *t) / 1000);
  };
  boost::json::object payments;
  for (const auto& [state, n] : counts.payments_by_state) payments[state] = n;
  boost::json::object refunds;
  for (const auto& [state, n] : counts.refunds_by_state) refunds[state] = n;
  boost::json::array exp;
  for (const auto& e : exposure)
    exp.push_back(boost::json::object{{"provider", e.provider}, {"currency", e.currency},
                                      {"count", e.count}, {"amount_minor", e.amount_minor}});
  boost::json::array providers;
  if (deps_.provider_health) {
    for (const auto& p : deps_.provider_health()) {
      boost::json::object o{{"name", p.name}, {"intake_paused", p.intake_paused}, {"breaker", p.breaker}};
      if (p.last_error.empty()) o["last_error"] = nullptr;
      else o["last_error"] = p.last_error;
      // The caps the exposure is held against (intake pauses at either), beside it.
      if (const auto* cfg = deps_.config.find_provider(p.name))
        o["risk"] = boost::json::object{{"max_unknown_count", cfg->risk.max_unknown_count},
                                        {"max_unknown_amount_minor", cfg->risk.max_unknown_amount_minor}};
      providers.push_back(std::move(o));
    }
  }
  boost::json::object body{
      {"version", PAYORCH_VERSION},
      {"uptime_s", std::chrono::duration_cast<std::chrono::seconds>(deps_.clock.monotonic() - started_).count()},
      {"node", boost::json::object{{"id", deps_.node_id}, {"lease_owner", deps_.lease_owner}}},
      {"ready", ready_.load() && !draining() && storage_failure.is_null()},
      {"payments", std::move(payments)},
      {"refunds", std::move(refunds)},
      {"unknown_exposure", std::move(exp)},
      {"reconciliation", boost::json::object{{"open", counts.open_cases}, {"oldest_open_age_s", age_s(counts.oldest_open_case_at)}}},
      {"outbox", boost::json::object{{"pending", backlog.pending}, {"oldest_pending_age_s", age_s(backlog.oldest_pending_at)}}},
      {"providers", std::move(providers)},
      {"storage", boost::json::object{
                      {"writable", storage_failure.is_null()},
                      {"commit_seq", health.commit_seq},
                      {"last_commit_at", health.last_commit_at ? boost::json::value(format_rfc3339(*health.last_commit_at))
                                                               : boost::json::value(nullptr)},
                      {"last_error", storage_failure},
                  }},
  };
  return make_json(200, body, v);
}

std::tuple<store::StatusCounts, std::vector<store::ExposureRow>, store::OutboxBacklog>
Api::read_operations_snapshot() {
  return deps_.store.read_value([&](store::Tx& tx) {
    store::StatusCounts counts = tx.status_counts();
    counts.refunds_by_state = store::refunds_by_state(tx.count_refunds());
    return std::make_tuple(std::move(counts), tx.exposure(), tx.outbox_backlog(push_tenants_));
  });
}

Response Api::metrics(unsigned v) {
  auto [counts, exposure, backlog] = read_operations_snapshot();
  const UnixMillis now = deps_.clock.now_ms();
  std::string text = deps_.metrics->render();
  std::vector<std::pair<Labels, double>> states;
  for (const auto& [state, n] : counts.payments_by_state) states.push_back({{{"state", state}}, static_cast<double>(n)});
  text += render_gauge("payorch_payments", "Payments by state", states);
  std::vector<std::pair<Labels, double>> refund_states;
  for (const auto& [state, n] : counts.refunds_by_state)
    refund_states.push_back({{{"state", state}}, static_cast<double>(n)});
  text += render_gauge("payorch_refunds", "Refunds by state (DEFERRED: waiting for its payment)", refund_states);
  std::vector<std::pair<Labels, double>> unknown_count, unknown_amount;
  for (const auto& e : exposure) {
    unknown_count.push_back({{{"provider", e.provider}, {"currency", e.currency}}, static_cast<double>(e.count)});
    unknown_amount.push_back({{{"provider", e.provider}, {"currency", e.currency}}, static_cast<double>(e.amount_minor)});
  }
  text += render_gauge("payorch_unknown_exposure_payments",
                       "UNKNOWN payments plus submits in flight, by provider and currency", unknown_count);
  text += render_gauge("payorch_unknown_exposure_amount_minor",
                       "Amount of UNKNOWN payments plus submits in flight, in minor units", unknown_amount);
  // The caps beside the exposure, so that "near a cap" is one division (docs/monitoring.md).
  std::vector<std::pair<Labels, double>> cap_count, cap_amount;
  for (const auto& p : deps_.config.providers) {
    cap_count.push_back({{{"provider", p.name}}, static_cast<double>(p.risk.max_unknown_count)});
    cap_amount.push_back({{{"provider", p.name}}, static_cast<double>(p.risk.max_unknown_amount_minor)});
  }
  text += render_gauge("payorch_unknown_exposure_cap_payments",
                       "A provider's risk cap on UNKNOWN payments plus submits in flight, over every currency "
                       "(risk.max_unknown_count)",
                       cap_count);
  text += render_gauge("payorch_unknown_exposure_cap_amount_minor",
                       "A provider's risk cap on the exposure's amount in each currency, in minor units "
                       "(risk.max_unknown_amount_minor)",
                       cap_amount);
  std::vector<std::pair<Labels, double>> paused;
  if (deps_.provider_health)
    for (const auto& p : deps_.provider_health()) paused.push_back({{{"provider", p.name}}, p.intake_paused ? 1.0 : 0.0});
  text += render_gauge("payorch_intake_paused", "1 while a provider is at a risk cap (new intents get 503)", paused);
  std::vector<std::pair<Labels, double>> breakers;
  if (deps_.provider_health)
    for (const auto& p : deps_.provider_health()) breakers.push_back({{{"provider", p.name}}, p.breaker == "open" ? 1.0 : 0.0});
  text += render_gauge("payorch_vendor_breaker_open",
                       "1 while a provider's circuit breaker is open (its payments wait; one probe call at a time)",
                       breakers);
  // No sample while nothing is open or pending: an age of 0 would read as "one just opened".
  auto age = [now](std::optional<UnixMillis> t) {
    std::vector<std::pair<Labels, double>> sample;
    if (t) sample.push_back({{}, static_cast<double>(std::max<UnixMillis>(0, now - *t)) / 1000.0});
    return sample;
  };
  std::vector<std::pair<Labels, double>> open_cases;
  for (const auto& [reason, n] : counts.open_cases_by_reason)
    open_cases.push_back({{{"reason", reason}}, static_cast<double>(n)});
  text += render_gauge("payorch_reconciliation_open_cases",
                       "Open reconciliation cases (payments in front of a human), by reason", open_cases);
  text += render_gauge("payorch_reconciliation_oldest_open_age_seconds",
                       "Age of the oldest open case; no sample while none is open", age(counts.oldest_open_case_at));
  text += render_gauge("payorch_outbox_pending_events", "Events not yet delivered to a tenant webhook",
                       {{{}, static_cast<double>(backlog.pending)}});
  text += render_gauge("payorch_outbox_oldest_pending_age_seconds",
                       "Webhook delivery lag: age of the oldest event not yet delivered to a tenant webhook; "
                       "no sample while none is pending",
                       age(backlog.oldest_pending_at));
  std::vector<std::pair<Labels, double>> storage_errors;
  for (const auto& [kind, n] : deps_.store.storage_errors())
    storage_errors.push_back({{{"kind", kind}}, static_cast<double>(n)});
  text += render_counter("payorch_storage_errors_total",
                         "Writer transactions that failed, nothing of them committed, by kind of storage "
                         "error (full, io, readonly, busy, corrupt, cantopen, nomem, other)",
                         storage_errors);
  text += render_gauge("payorch_build_info", "The version and commit payorchd was built from (always 1)",
                       {{{{"version", std::string(build_version())}, {"commit", std::string(build_commit())}}, 1.0}});
  try {
    text += render_process_stats(read_process_stats());
  } catch (const std::exception& e) {
    log::warn("metrics.process_stats_failed", e.what());
  }
  Response r{bhttp::status::ok, v};
  r.set(bhttp::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
  r.set(bhttp::field::cache_control, "no-store");
  r.body() = std::move(text);
  r.prepare_payload();
  return r;
}
}  // namespace payorch::http
