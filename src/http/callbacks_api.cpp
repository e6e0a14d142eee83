#include "http/callbacks_api.h"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <algorithm>
#include <cctype>
#include <memory>

#include "core/ascii.h"
#include "core/utf8.h"
#include "http/instrumented.h"
#include "http/not_committed.h"
#include "store/callbacks.h"
#include "util/failpoint.h"
#include "util/log.h"

namespace payorch::http {
namespace {

namespace bhttp = boost::beast::http;

constexpr std::string_view callbacks_prefix = "/v1/callbacks/";

// Thrown inside the callback transaction by the `callback.before_commit` failpoint.
struct InjectedRollback : std::runtime_error {
  InjectedRollback() : std::runtime_error("injected rollback before commit") {}
};

std::optional<store::CallbackStatus> status_of(VendorOutcome o) {
  switch (o) {
    case VendorOutcome::succeeded: return store::CallbackStatus::succeeded;
    case VendorOutcome::declined: return store::CallbackStatus::declined;
    case VendorOutcome::pending: return store::CallbackStatus::pending;
    default: return std::nullopt;
  }
}

// What of a verified event is stored as text, when some of it is not UTF-8 (a form field's
// percent-decoded bytes, a decrypted resource): the field's name; nullopt when all of it is.
std::optional<std::string_view> non_utf8_field(const providers::CallbackEvent& e) {
  if (!valid_utf8(e.event_id)) return "event id";
  if (!valid_utf8(e.client_key)) return "reference";
  if (e.vendor_reference && !valid_utf8(*e.vendor_reference)) return "vendor reference";
  if (e.decline_code && !valid_utf8(*e.decline_code)) return "decline code";
  if (e.currency && !valid_utf8(*e.currency)) return "currency";
  return std::nullopt;
}

}  // namespace

CallbacksApi::CallbacksApi(Deps deps) : d_(std::move(deps)) {
  d_.metrics.declare_counter("payorch_callbacks_total",
                             "Verified vendor callbacks recorded, by provider and result");
  d_.metrics.declare_counter("payorch_callbacks_rejected_total",
                             "Vendor callbacks refused before anything was recorded (bad or stale "
                             "signature, malformed body, storage failure), by provider and reason");
  d_.metrics.declare_counter("payorch_late_contradictions_total",
                             "ALERT: a vendor answer contradicted a terminal payment (a "
                             "late_contradiction case was opened or given evidence)");
  d_.metrics.declare_counter("payorch_callback_mismatches_total",
                             "ALERT: a callback named an unknown reference or another amount or "
                             "currency than the intent (callback_mismatch case)");
}

bool CallbacksApi::owns(const std::string& path) { return path.starts_with(callbacks_prefix); }

void CallbacksApi::handle(Request&& req, Responder done) {
  const unsigned v = req.version();
  const std::string path(req.target().substr(0, req.target().find('?')));
  const std::string provider = path.substr(callbacks_prefix.size());
  const auto adapter = d_.adapters.find(provider);
  if (provider.empty() || adapter == d_.adapters.end())
    return done(make_problem(Problem::not_found, "no provider named '" + provider + "'", {}, v));
  if (req.method() != bhttp::verb::post) return done(method_not_allowed("POST", v));

  // A body or field that is not UTF-8 is refused before anything is stored: the inbox keeps the
  // body and a case the fields, and neither could be served back as JSON.
  auto refuse_non_utf8 = [&](const std::string& detail) {
    d_.metrics.inc("payorch_callbacks_rejected_total", {{"provider", provider}, {"reason", "invalid_utf8"}});
    log::warn("callback.refused", detail, {{"provider", provider}, {"reason", "invalid_utf8"}});
    return done(make_problem(Problem::callback_malformed,
                             "the callback body cannot be read: " + detail + "; nothing was recorded", {}, v));
  };
  if (const auto bad = invalid_utf8_at(req.body()))
    return refuse_non_utf8("the body is not UTF-8 (byte " + std::to_string(*bad + 1) + ")");

  std::map<std::string, std::string> headers;
  for (const auto& field : req) {
    std::string name = ascii_lower(field.name_string());
    auto [it, inserted] = headers.emplace(name, std::string(field.value()));
    if (!inserted) it->second += ", " + std::string(field.value());
  }
  const UnixMillis now = d_.clock.now_ms();
  providers::CallbackCheck check = adapter->second->verify_and_parse(headers, req.body(), now / 1000);
  const auto unreadable = std::find_if(check.events.begin(), check.events.end(), [](const auto& e) {
    return !status_of(e.outcome);
  });
  if (!check.verified || unreadable != check.events.end()) {
    const bool signature = !check.verified &&
                           (check.error == providers::CallbackError::bad_signature ||
                            check.error == providers::CallbackError::stale_timestamp);
    const std::string reason = check.verified ? "unsupported_status" : std::string(providers::to_string(check.error));
    d_.metrics.inc("payorch_callbacks_rejected_total", {{"provider", provider}, {"reason", reason}});
    log::warn("callback.refused", check.detail, {{"provider", provider}, {"reason", reason}});
    if (signature)
      return done(make_problem(Problem::callback_signature_invalid,
                               "the callback signature is missing, wrong or outside the timestamp tolerance; "
                               "nothing was recorded",
                               {}, v));
    // Signed by the vendor but unreadable: nothing is recorded and the vendor keeps retrying,
    // which keeps the problem visible (metrics, log) until someone looks.
    return done(make_problem(Problem::callback_malformed, "the callback body cannot be read: " + check.detail, {}, v));
  }

  for (const providers::CallbackEvent& event : check.events)
    if (const auto field = non_utf8_field(event))
      return refuse_non_utf8("the event's " + std::string(*field) + " is not UTF-8");

  // Every event of the callback, recorded in one transaction: a batch is acknowledged only
  // when all of it is stored, and each event is deduplicated on its own id.
  auto cbs = std::make_shared<std::vector<store::VendorCallback>>();
  for (providers::CallbackEvent& event : check.events) {
    store::VendorCallback& cb = cbs->emplace_back();
    cb.provider = provider;
    cb.event_id = std::move(event.event_id);
    cb.client_key = std::move(event.client_key);
    cb.about_refund = event.kind == providers::OperationKind::refund;
    cb.status = *status_of(event.outcome);
    cb.vendor_reference = std::move(event.vendor_reference);
    cb.decline_code = std::move(event.decline_code);
    cb.amount_minor = event.amount_minor;
    cb.currency = std::move(event.currency);
    cb.payload = req.body();
    cb.request_id = origin_of(req).request_id;
  }
  auto outcomes = std::make_shared<std::vector<store::CallbackOutcome>>();
  auto ack = std::make_shared<std::optional<std::string>>(std::move(check.ack_body));
  if (cbs->empty())
    log::info("callback.ignored", check.detail.empty() ? "nothing payorch tracks" : check.detail,
              {{"provider", provider}});

  d_.store.submit(
      [this, cbs, outcomes](store::Tx& tx) {
        outcomes->clear();
        for (const store::VendorCallback& cb : *cbs)
          outcomes->push_back(tx.record_callback(cb, d_.clock.now_ms(), d_.rng));
        // Crash/error point: inbox rows, transitions and events written, not committed.
        if (failpoint::hit("callback.before_commit")) throw InjectedRollback();
      },
      [this, provider, cbs, outcomes, ack, v, done = std::move(done)](store::WriteStatus status,
                                                                      const std::string& error) {
        if (status != store::WriteStatus::committed) {
          d_.metrics.inc("payorch_callbacks_rejected_total", {{"provider", provider}, {"reason", "storage"}});
          for (const store::VendorCallback& cb : *cbs)
            log::error("callback.not_recorded", error + "; the vendor will send it again",
                       {{"provider", cb.provider},
                        {"vendor_event_id", cb.event_id},
                        {"client_key", cb.client_key},
                        {"status", store::to_string(status)}});
          return done(callback_not_committed("the callback was not recorded; send it again", v));
        }
        // Crash point: recorded, not acknowledged. The vendor retries; the inbox makes it a
        // duplicate.
        failpoint::hit("callback.after_commit");
        boost::json::array results;
        for (std::size_t i = 0; i < cbs->size(); ++i) {
          report((*cbs)[i], (*outcomes)[i]);
          results.emplace_back(store::to_string((*outcomes)[i].result));
        }
        if (*ack) return done(make_text(200, **ack, v));
        boost::json::object body{{"received", true}};
        if (results.size() == 1) body["result"] = results.front();
        else body["results"] = std::move(results);
        return done(make_json(200, body, v));
      });
}

// Metrics and log lines for one recorded event, and the engine's wake-up.
void CallbacksApi::report(const store::VendorCallback& cb, const store::CallbackOutcome& outcome) {
  const std::string result(store::to_string(outcome.result));
  d_.metrics.inc("payorch_callbacks_total", {{"provider", cb.provider}, {"result", result}});
  if (outcome.result == store::CallbackResult::late_contradiction) {
    d_.metrics.inc("payorch_late_contradictions_total", {{"provider", cb.provider}});
    log::alert("callback.late_contradiction", "a vendor callback contradicts a terminal payment",
               {{"provider", cb.provider},
                {"vendor_event_id", cb.event_id},
                {"payment_id", outcome.payment_id.value_or("")},
                {"client_key", cb.client_key},
                {"case_id", outcome.case_id.value_or("")}});
  }
  if (outcome.result == store::CallbackResult::mismatch ||
      outcome.result == store::CallbackResult::unknown_reference) {
    d_.metrics.inc("payorch_callback_mismatches_total", {{"provider", cb.provider}});
    log::alert("callback.mismatch", "a vendor callback does not match an intent",
               {{"provider", cb.provider},
                {"vendor_event_id", cb.event_id},
                {"payment_id", outcome.payment_id.value_or("")},
                {"client_key", cb.client_key},
                {"result", result},
                {"case_id", outcome.case_id.value_or("")}});
  }
  if (outcome.result != store::CallbackResult::late_contradiction &&
      outcome.result != store::CallbackResult::mismatch &&
      outcome.result != store::CallbackResult::unknown_reference)
    log::info("callback.recorded", "",
              {{"provider", cb.provider},
               {"vendor_event_id", cb.event_id},
               {"payment_id", outcome.payment_id.value_or("")},
               {"client_key", cb.client_key},
               {"result", result}});
  if (outcome.payment_id && outcome.result != store::CallbackResult::duplicate && d_.on_change)
    d_.on_change(*outcome.payment_id);
}

}  // namespace payorch::http
