#include "vendor_sim/vendor.h"

#include <boost/json/array.hpp>

#include <chrono>
#include <exception>
#include <vector>

#include "util/log.h"

namespace payorch::vendor_sim {
namespace {

namespace json = boost::json;

// One line about a charge request. `reference` comes first (tests find a key's lines by
// "reference=<key> "); the source is masked like any payment source token.
void log_charge(log::Level level, std::string_view event, const ChargeParams& p, std::string_view msg,
                std::vector<log::Field> extra = {}) {
  std::vector<log::Field> fields{{"reference", p.reference},
                                 {"source", log::mask(p.source)},
                                 {"amount_minor", p.amount_minor},
                                 {"currency", p.currency}};
  for (auto& f : extra) fields.push_back(std::move(f));
  log::write(level, event, msg, fields);
}

}  // namespace

Response error_response(unsigned status, std::string_view type) {
  return json_response(status, error_json(type));
}

Vendor::Vendor(boost::asio::any_io_executor executor, Ledger& ledger, SimState& state,
               Millis key_retention, Millis pending_delay,
               std::function<void()> on_callback_queued)
    : executor_(std::move(executor)),
      ledger_(ledger),
      state_(state),
      key_retention_(key_retention),
      pending_delay_(pending_delay),
      on_callback_queued_(std::move(on_callback_queued)) {}

void Vendor::charge(const std::string& idempotency_key, const std::string& body,
                    Responder done) {
  std::string error;
  const auto params = parse_charge_request(idempotency_key, body, error);
  if (!params) {
    log::warn("charge.refused", error, {{"reason", "invalid_request"}});
    return done(error_response(400, "invalid_request"));
  }
  if (stopping_) return done(error_response(503, "shutting_down"));
  // Checked before a fault is taken: a refused request consumes none.
  if (executing_.contains(params->reference)) {
    log_charge(log::Level::warn, "charge.refused", *params, "the first request with this key is still executing",
               {{"reason", "in_progress"}});
    return done(error_response(409, "in_progress"));
  }
  const auto fault = faults_.take(params->source);
  if (!fault) return done(execute(*params, ""));

  const std::string label(to_string(fault->mode));
  switch (fault->mode) {
    case FaultMode::fail_before_commit:
      log_charge(log::Level::warn, "charge.failed", *params, "answered 500 before the commit (injected fault)",
                 {{"fault", label}});
      return done(error_response(500, "internal_error"));

    case FaultMode::commit_then_5xx:
      execute(*params, label);
      return done(error_response(502, "bad_gateway"));

    case FaultMode::commit_then_hang: {
      execute(*params, label);
      // The Responder keeps the connection open; destroying it unanswered closes it.
      auto held = std::make_shared<Responder>(std::move(done));
      return after(fault->delay_ms, [held](bool) { *held = nullptr; });
    }

    case FaultMode::delayed_commit: {
      executing_.insert(params->reference);
      log_charge(log::Level::warn, "charge.delayed_commit", *params, "answered 504; commits later (injected fault)",
                 {{"fault", label}, {"delay_ms", fault->delay_ms}});
      done(error_response(504, "timeout"));
      return after(fault->delay_ms, [this, p = *params, label](bool cancelled) {
        executing_.erase(p.reference);
        if (!cancelled) execute(p, label);
      });
    }

    case FaultMode::latency: {
      executing_.insert(params->reference);
      auto held = std::make_shared<Responder>(std::move(done));
      return after(fault->delay_ms, [this, held, p = *params, label](bool cancelled) {
        executing_.erase(p.reference);
        (*held)(cancelled ? error_response(503, "shutting_down") : execute(p, label));
      });
    }
  }
}

// The protocol's answers: a new charge or a replay is the charge (a replay with
// Idempotent-Replayed: true, showing the charge as the ledger holds it now, so a pending one
// that has settled replays as succeeded); another body under a retained key is 409
// idempotency_mismatch. A storage failure is a 500: the commit may or may not have happened.
Response Vendor::execute(const ChargeParams& params, std::string_view fault_label) {
  std::vector<log::Field> fault;
  if (!fault_label.empty()) fault.emplace_back("fault", fault_label);
  const CallbackCopies copies = state_.callback_copies();
  ExecuteResult result;
  try {
    result = ledger_.execute(params, ChargeTiming{state_.clock.now_ms(), key_retention_,
                                                   pending_delay_}, copies);
  } catch (const std::exception& e) {
    auto fields = fault;
    fields.emplace_back("reason", "storage");
    log_charge(log::Level::error, "charge.failed", params, e.what(), std::move(fields));
    return error_response(500, "internal_error");
  }
  const Charge& c = result.charge;
  switch (result.kind) {
    case ExecuteKind::mismatch: {
      auto fields = fault;
      fields.emplace_back("reason", "idempotency_mismatch");
      fields.emplace_back("charge_id", c.id);
      log_charge(log::Level::warn, "charge.refused", params, "this key was used with other parameters",
                 std::move(fields));
      return error_response(409, "idempotency_mismatch");
    }
    case ExecuteKind::replayed: {
      auto fields = fault;
      fields.emplace_back("charge_id", c.id);
      fields.emplace_back("status", to_string(c.status));
      log_charge(log::Level::info, "charge.replayed", params, "", std::move(fields));
      Response res = json_response(200, charge_json(c));
      res.set("Idempotent-Replayed", "true");
      return res;
    }
    case ExecuteKind::created:
      break;
  }
  auto fields = fault;
  fields.emplace_back("charge_id", c.id);
  fields.emplace_back("status", to_string(c.status));
  if (c.decline_code) fields.emplace_back("decline_code", *c.decline_code);
  log_charge(log::Level::info, "charge.created", params, "", std::move(fields));
  if (copies && on_callback_queued_) on_callback_queued_();
  return json_response(200, charge_json(c));
}

Response Vendor::lookup(const std::string& reference) {
  if (!state_.config.lookup_enabled) return error_response(404, "not_supported");
  if (reference.empty()) return error_response(400, "invalid_request");
  json::array data;
  try {
    for (const Charge& c : ledger_.find_by_reference(reference)) data.push_back(charge_json(c));
  } catch (const std::exception& e) {
    log::error("sim.storage_failed", e.what(), {{"op", "lookup"}});
    return error_response(500, "internal_error");
  }
  json::object body;
  body["data"] = std::move(data);
  return json_response(200, body);
}

Response Vendor::get_charge(const std::string& id) {
  try {
    if (auto c = ledger_.find_by_id(id)) return json_response(200, charge_json(*c));
  } catch (const std::exception& e) {
    log::error("sim.storage_failed", e.what(), {{"op", "lookup"}});
    return error_response(500, "internal_error");
  }
  return error_response(404, "not_found");
}

void Vendor::after(std::int64_t delay_ms, std::function<void(bool cancelled)> fn) {
  auto timer = std::make_shared<boost::asio::steady_timer>(executor_);
  timers_.insert(timer);
  timer->expires_after(std::chrono::milliseconds(delay_ms));
  timer->async_wait([this, timer, fn = std::move(fn)](const boost::system::error_code& ec) {
    timers_.erase(timer);
    fn(ec == boost::asio::error::operation_aborted || stopping_);
  });
}

void Vendor::shutdown() {
  stopping_ = true;
  for (const auto& timer : timers_) timer->cancel();
}

}  // namespace payorch::vendor_sim
