#include "vendor_sim/vendor.h"

#include <boost/json/array.hpp>

#include <chrono>
#include <exception>
#include <vector>

#include "util/log.h"

namespace payorch::vendor_sim {
namespace {

namespace json = boost::json;

// What the shared flow needs of each operation: its name (the log events' prefix and the key
// space of executing_), its log fields, what a fault filters on, and its JSON.
Operation operation_of(const ChargeParams&) { return Operation::charge; }
Operation operation_of(const RefundParams&) { return Operation::refund; }

std::optional<std::string_view> fault_source(const ChargeParams& p) { return p.source; }
std::optional<std::string_view> fault_source(const RefundParams&) { return std::nullopt; }

// `reference` comes first (tests find a key's lines by "reference=<key> "); a charge's source is
// masked like any payment source token.
std::vector<log::Field> request_fields(const ChargeParams& p) {
  return {{"reference", p.reference},
          {"source", log::mask(p.source)},
          {"amount_minor", p.amount_minor},
          {"currency", p.currency}};
}
std::vector<log::Field> request_fields(const RefundParams& p) {
  return {{"reference", p.reference},
          {"charge", p.charge},
          {"amount_minor", p.amount_minor},
          {"currency", p.currency}};
}

const Charge& row_of(const ExecuteResult& r) { return r.charge; }
const Refund& row_of(const RefundResult& r) { return r.refund; }
json::object object_json(const Charge& c) { return charge_json(c); }
json::object object_json(const Refund& r) { return refund_json(r); }

// One line about a charge or refund request: event "charge.<what>" or "refund.<what>".
template <typename Params>
void log_request(log::Level level, std::string_view what, const Params& p, std::string_view msg,
                 std::vector<log::Field> extra = {}) {
  std::vector<log::Field> fields = request_fields(p);
  for (auto& f : extra) fields.push_back(std::move(f));
  log::write(level, std::string(to_string(operation_of(p))) + "." + std::string(what), msg, fields);
}

// The log field naming the stored object: charge_id or refund_id.
// A literal: log::Field keeps its key as a view.
std::string_view id_field(Operation op) { return op == Operation::refund ? "refund_id" : "charge_id"; }

std::string executing_key(Operation op, const std::string& key) {
  return std::string(to_string(op)) + ":" + key;
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
  perform(*params, std::move(done));
}

void Vendor::refund(const std::string& idempotency_key, const std::string& body,
                    Responder done) {
  std::string error;
  const auto params = parse_refund_request(idempotency_key, body, error);
  if (!params) {
    log::warn("refund.refused", error, {{"reason", "invalid_request"}});
    return done(error_response(400, "invalid_request"));
  }
  perform(*params, std::move(done));
}

template <typename Params>
void Vendor::perform(const Params& params, Responder done) {
  if (stopping_) return done(error_response(503, "shutting_down"));
  const Operation op = operation_of(params);
  const std::string executing = executing_key(op, params.reference);
  // Checked before a fault is taken: a refused request consumes none.
  if (executing_.contains(executing)) {
    log_request(log::Level::warn, "refused", params, "the first request with this key is still executing",
                {{"reason", "in_progress"}});
    return done(error_response(409, "in_progress"));
  }
  const auto fault = faults_.take(fault_source(params), op);
  if (!fault) return done(execute(params, ""));

  const std::string label(to_string(fault->mode));
  switch (fault->mode) {
    case FaultMode::fail_before_commit:
      log_request(log::Level::warn, "failed", params, "answered 500 before the commit (injected fault)",
                  {{"fault", label}});
      return done(error_response(500, "internal_error"));

    case FaultMode::commit_then_5xx:
      execute(params, label);
      return done(error_response(502, "bad_gateway"));

    case FaultMode::commit_then_hang: {
      execute(params, label);
      // The Responder keeps the connection open; destroying it unanswered closes it.
      auto held = std::make_shared<Responder>(std::move(done));
      return after(fault->delay_ms, [held](bool) { *held = nullptr; });
    }

    case FaultMode::delayed_commit: {
      executing_.insert(executing);
      log_request(log::Level::warn, "delayed_commit", params, "answered 504; commits later (injected fault)",
                  {{"fault", label}, {"delay_ms", fault->delay_ms}});
      done(error_response(504, "timeout"));
      return after(fault->delay_ms, [this, p = params, executing, label](bool cancelled) {
        executing_.erase(executing);
        if (!cancelled) execute(p, label);
      });
    }

    case FaultMode::latency: {
      executing_.insert(executing);
      auto held = std::make_shared<Responder>(std::move(done));
      return after(fault->delay_ms, [this, held, p = params, executing, label](bool cancelled) {
        executing_.erase(executing);
        (*held)(cancelled ? error_response(503, "shutting_down") : execute(p, label));
      });
    }
  }
}

// The protocol's answers: a new charge or refund, or a replay, is the object (a replay with
// Idempotent-Replayed: true, showing it as the ledger holds it now, so a pending one that has
// settled replays as succeeded); another body under a retained key is 409
// idempotency_mismatch; a refund of an unknown charge is 404 not_found and one in another
// currency than its charge 400 invalid_request (nothing stored). A storage failure is a 500:
// the commit may or may not have happened.
template <typename Params>
Response Vendor::execute(const Params& params, std::string_view fault_label) {
  std::vector<log::Field> fault;
  if (!fault_label.empty()) fault.emplace_back("fault", fault_label);
  const CallbackCopies copies = state_.callback_copies();
  decltype(ledger_.execute(params, ChargeTiming{}, copies)) result;
  try {
    result = ledger_.execute(params, ChargeTiming{state_.clock.now_ms(), key_retention_,
                                                   pending_delay_}, copies);
  } catch (const std::exception& e) {
    auto fields = fault;
    fields.emplace_back("reason", "storage");
    log_request(log::Level::error, "failed", params, e.what(), std::move(fields));
    return error_response(500, "internal_error");
  }
  const auto& row = row_of(result);
  auto fields = fault;
  switch (result.kind) {
    case ExecuteKind::mismatch:
      fields.emplace_back("reason", "idempotency_mismatch");
      fields.emplace_back(id_field(operation_of(params)), row.id);
      log_request(log::Level::warn, "refused", params, "this key was used with other parameters",
                  std::move(fields));
      return error_response(409, "idempotency_mismatch");
    case ExecuteKind::charge_not_found:
      fields.emplace_back("reason", "charge_not_found");
      log_request(log::Level::warn, "refused", params, "no such charge", std::move(fields));
      return error_response(404, "not_found");
    case ExecuteKind::currency_mismatch:
      fields.emplace_back("reason", "currency_mismatch");
      log_request(log::Level::warn, "refused", params, "the charge is in another currency",
                  std::move(fields));
      return error_response(400, "invalid_request");
    case ExecuteKind::replayed: {
      fields.emplace_back(id_field(operation_of(params)), row.id);
      fields.emplace_back("status", to_string(row.status));
      log_request(log::Level::info, "replayed", params, "", std::move(fields));
      Response res = json_response(200, object_json(row));
      res.set("Idempotent-Replayed", "true");
      return res;
    }
    case ExecuteKind::created:
      break;
  }
  fields.emplace_back(id_field(operation_of(params)), row.id);
  fields.emplace_back("status", to_string(row.status));
  if (row.decline_code) fields.emplace_back("decline_code", *row.decline_code);
  log_request(log::Level::info, "created", params, "", std::move(fields));
  if (copies && on_callback_queued_) on_callback_queued_();
  return json_response(200, object_json(row));
}

Response Vendor::lookup(const std::string& reference) {
  return lookup_json(reference, [&] {
    json::array data;
    for (const Charge& c : ledger_.find_by_reference(reference)) data.push_back(charge_json(c));
    return data;
  });
}

Response Vendor::lookup_refunds(const std::string& reference) {
  return lookup_json(reference, [&] {
    json::array data;
    for (const Refund& r : ledger_.find_refunds_by_reference(reference))
      data.push_back(refund_json(r));
    return data;
  });
}

Response Vendor::lookup_json(const std::string& reference,
                             const std::function<json::array()>& find) {
  if (!state_.config.lookup_enabled) return error_response(404, "not_supported");
  if (reference.empty()) return error_response(400, "invalid_request");
  json::array data;
  try {
    data = find();
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
