#include "providers/sim/classify.h"

#include <string>

#include "core/strict_json.h"
#include "providers/sim/charge.h"
#include "providers/sim/refund.h"
#include "providers/vendor_call.h"

namespace payorch::providers::sim {
namespace {

namespace json = boost::json;

std::string status_text(int status) { return "HTTP " + std::to_string(status); }

// What the tables below read from a 200, by what was sent: a charge or a refund object.
template <class Request>
struct Answered;

template <>
struct Answered<ChargeRequest> {
  static constexpr std::string_view noun = "charge";
  static std::optional<Charge> parse(const json::value& v, std::string& error) {
    return parse_charge(v, error);
  }
};

template <>
struct Answered<RefundRequest> {
  static constexpr std::string_view noun = "refund";
  static std::optional<Refund> parse(const json::value& v, std::string& error) {
    return parse_refund(v, error);
  }
};

// A charge or refund reported by the vendor, trusted only when it is the one we asked for: a
// success for another reference or amount proves nothing about ours (and may hide a double
// charge or refund).
template <class Request>
VendorResult from_object(const json::value& v, const Request& sent, int http_status,
                         std::string_view what) {
  const std::string noun(Answered<Request>::noun);
  std::string error;
  const auto object = Answered<Request>::parse(v, error);
  if (!object)
    return outcome_only(VendorOutcome::ambiguous, http_status,
                        std::string(what) + ": unparseable " + noun + ": " + error);
  VendorResult r = to_result(*object, http_status);
  if (const std::string diff = mismatch(*object, sent); !diff.empty()) {
    r.outcome = VendorOutcome::ambiguous;
    r.detail = std::string(what) + ": " + noun + " " + object->id +
               " does not match the request (" + diff + "); vendor said " +
               std::string(to_string(object->status));
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

// classify_submit's table, for a charge or a refund.
template <class Request>
VendorResult classify_write(const net::HttpResult& res, const Request& sent) {
  if (auto r = without_answer(res)) return *r;
  const int status = res.status;
  if (status == 200) {
    const auto body = parse_json(res.body);
    if (!body) return outcome_only(VendorOutcome::ambiguous, status, "200 with a body that is not JSON");
    return from_object(*body, sent, status, "200");
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

// classify_query's table, for a charge or a refund.
template <class Request>
VendorResult classify_lookup(const net::HttpResult& res, const Request& sent) {
  const std::string noun(Answered<Request>::noun);
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
  const json::array& found = data->get_array();
  if (found.empty())
    return outcome_only(VendorOutcome::not_found, status, "no " + noun + " for reference");
  // One reference is one charge or refund; several would mean the vendor broke its key
  // contract.
  if (found.size() > 1)
    return outcome_only(VendorOutcome::ambiguous, status,
                        "query: " + std::to_string(found.size()) + " " + noun +
                            "s for one reference (possible double " + noun + ")");
  return from_object(found.front(), sent, status, "query");
}

}  // namespace

VendorResult classify_submit(const net::HttpResult& res, const ChargeRequest& sent) {
  return classify_write(res, sent);
}

VendorResult classify_query(const net::HttpResult& res, const ChargeRequest& sent) {
  return classify_lookup(res, sent);
}

VendorResult classify_refund(const net::HttpResult& res, const RefundRequest& sent) {
  return classify_write(res, sent);
}

VendorResult classify_refund_query(const net::HttpResult& res, const RefundRequest& sent) {
  return classify_lookup(res, sent);
}

}  // namespace payorch::providers::sim
