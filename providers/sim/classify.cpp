#include "providers/sim/classify.h"

#include <string>

#include "core/strict_json.h"
#include "providers/sim/charge.h"

namespace payorch::providers::sim {
namespace {

namespace json = boost::json;

VendorResult outcome_only(VendorOutcome o, int http_status, std::string detail) {
  VendorResult r;
  r.outcome = o;
  r.http_status = http_status;
  r.detail = std::move(detail);
  return r;
}

std::string status_text(int status) { return "HTTP " + std::to_string(status); }

// Transport results that carry no answer. nullopt for a complete response.
std::optional<VendorResult> without_answer(const net::HttpResult& res) {
  if (res.kind == net::HttpResult::not_sent)
    return outcome_only(VendorOutcome::not_sent, 0, "not sent: " + res.error);
  if (res.kind == net::HttpResult::sent_no_answer)
    return outcome_only(VendorOutcome::ambiguous, 0, "no answer: " + res.error);
  return std::nullopt;
}

// A charge reported by the vendor, trusted only when it is the charge we asked for: a success
// for another reference or amount proves nothing about ours (and may hide a double charge).
VendorResult from_charge(const json::value& v, const ChargeRequest& sent, int http_status,
                         std::string_view what) {
  std::string error;
  const auto charge = parse_charge(v, error);
  if (!charge)
    return outcome_only(VendorOutcome::ambiguous, http_status,
                        std::string(what) + ": unparseable charge: " + error);
  VendorResult r = to_result(*charge, http_status);
  if (const std::string diff = mismatch(*charge, sent); !diff.empty()) {
    r.outcome = VendorOutcome::ambiguous;
    r.detail = std::string(what) + ": charge " + charge->id + " does not match the request (" +
               diff + "); vendor said " + std::string(to_string(charge->status));
  }
  return r;
}

// The one JSON reading policy (core/strict_json.h): an answer naming a key twice is as
// unreadable as a broken one.
std::optional<json::value> parse_json(const std::string& body) {
  auto parsed = parse_strict_json(body);
  if (!std::holds_alternative<StrictJson>(parsed)) return std::nullopt;
  return std::get<StrictJson>(std::move(parsed)).root;
}

}  // namespace

VendorResult classify_submit(const net::HttpResult& res, const ChargeRequest& sent) {
  if (auto r = without_answer(res)) return *r;
  const int status = res.status;
  if (status == 200) {
    const auto body = parse_json(res.body);
    if (!body) return outcome_only(VendorOutcome::ambiguous, status, "200 with a body that is not JSON");
    return from_charge(*body, sent, status, "200");
  }
  const std::string type = error_type(res.body);
  // The vendor's contract: invalid_request means nothing was done, and the same request will
  // be refused again.
  if (status == 400 && type == "invalid_request") {
    VendorResult r = outcome_only(VendorOutcome::declined, status, "400 invalid_request");
    r.decline_code = "invalid_request";
    return r;
  }
  if (status == 401 || status == 403)
    return outcome_only(VendorOutcome::auth_refused, status, status_text(status) + ": credentials refused");
  if (status == 409 && type == "idempotency_mismatch")
    return outcome_only(VendorOutcome::key_mismatch, status,
                        "409 idempotency_mismatch: the vendor saw this key with other parameters");
  // The first request with this key is still executing at the vendor: its outcome is unknown.
  if (status == 409 && type == "in_progress")
    return outcome_only(VendorOutcome::ambiguous, status, "409 in_progress");
  // 5xx and anything unexpected: the vendor may have acted before failing.
  return outcome_only(VendorOutcome::ambiguous, status,
                      status_text(status) + (type.empty() ? "" : " " + type));
}

VendorResult classify_query(const net::HttpResult& res, const ChargeRequest& sent) {
  if (auto r = without_answer(res)) return *r;
  const int status = res.status;
  if (status == 404 && error_type(res.body) == "not_supported")
    return outcome_only(VendorOutcome::unsupported, status, "404 not_supported: lookup not offered");
  if (status != 200)
    return outcome_only(VendorOutcome::ambiguous, status, "query answered " + status_text(status));
  const auto body = parse_json(res.body);
  const json::value* data = body && body->is_object() ? body->get_object().if_contains("data")
                                                      : nullptr;
  if (!data || !data->is_array())
    return outcome_only(VendorOutcome::ambiguous, status, "query: 200 without a data array");
  const json::array& charges = data->get_array();
  if (charges.empty()) return outcome_only(VendorOutcome::not_found, status, "no charge for reference");
  // One reference is one charge; several would mean the vendor broke its key contract.
  if (charges.size() > 1)
    return outcome_only(VendorOutcome::ambiguous, status,
                        "query: " + std::to_string(charges.size()) +
                            " charges for one reference (possible double charge)");
  return from_charge(charges.front(), sent, status, "query");
}

}  // namespace payorch::providers::sim
