#include "providers/sim/callback.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <string_view>
#include <vector>

#include "core/strict_json.h"
#include "providers/signing.h"
#include "providers/sim/charge.h"

namespace payorch::providers::sim {
namespace {

namespace json = boost::json;

constexpr std::string_view signature_header = "sim-signature";
constexpr std::size_t max_timestamp_digits = 12;  // keeps the arithmetic below far from overflow

struct Signature {
  std::int64_t t = 0;
  std::vector<std::string> v1;  // lower-cased hex
};

std::optional<Signature> parse_signature(std::string_view header) {
  Signature sig;
  bool have_t = false;
  while (!header.empty()) {
    const std::size_t comma = header.find(',');
    std::string_view part = header.substr(0, comma);
    header = comma == std::string_view::npos ? std::string_view() : header.substr(comma + 1);
    while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
    while (!part.empty() && part.back() == ' ') part.remove_suffix(1);
    if (part.starts_with("t=")) {
      const std::string_view digits = part.substr(2);
      if (digits.empty() || digits.size() > max_timestamp_digits ||
          !std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c); }))
        return std::nullopt;
      sig.t = std::stoll(std::string(digits));
      have_t = true;
    } else if (part.starts_with("v1=")) {
      std::string hex(part.substr(3));
      std::transform(hex.begin(), hex.end(), hex.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      sig.v1.push_back(std::move(hex));
    }  // other schemes (v0=, …) are ignored, as the vendor may add them
  }
  if (!have_t || sig.v1.empty()) return std::nullopt;
  return sig;
}

CallbackCheck reject(CallbackError error, std::string detail) {
  CallbackCheck check;
  check.error = error;
  check.detail = std::move(detail);
  return check;
}

std::optional<VendorOutcome> event_outcome(std::string_view type) {
  if (type == "charge.succeeded") return VendorOutcome::succeeded;
  if (type == "charge.declined") return VendorOutcome::declined;
  if (type == "charge.pending") return VendorOutcome::pending;
  return std::nullopt;
}

CallbackCheck parse_event(const std::string& body) {
  // The one JSON reading policy: a signed event that names a key twice (two "type"s, two
  // "status"es) is malformed, never read as whichever came last.
  auto parsed = parse_strict_json(body);
  if (auto* e = std::get_if<StrictJsonError>(&parsed)) return reject(CallbackError::malformed, "body refused: " + e->message);
  const json::value& v = std::get<StrictJson>(parsed).root;
  if (!v.is_object()) return reject(CallbackError::malformed, "body is not a JSON object");
  const json::object& o = v.get_object();
  const json::value* id = o.if_contains("id");
  const json::value* type = o.if_contains("type");
  const json::value* created = o.if_contains("created");
  const json::value* data = o.if_contains("data");
  if (!id || !id->is_string() || id->get_string().empty() || !type || !type->is_string() ||
      !created || !(created->is_int64() || created->is_uint64()) || !data)
    return reject(CallbackError::malformed, "event lacks id, type, created or data");
  const auto outcome = event_outcome(type->get_string());
  if (!outcome)
    return reject(CallbackError::malformed,
                  "unknown event type \"" + std::string(type->get_string()) + "\"");
  std::string error;
  const auto charge = parse_charge(*data, error);
  if (!charge) return reject(CallbackError::malformed, "event data: " + error);
  // The event type is the vendor's statement; a charge object saying otherwise is not to be
  // guessed between.
  if (charge->status != *outcome)
    return reject(CallbackError::malformed, "event type and charge status disagree");
  CallbackEvent event;
  event.event_id = id->get_string();
  event.client_key = charge->reference;
  event.outcome = *outcome;
  event.vendor_reference = charge->id;
  event.decline_code = charge->decline_code;
  event.amount_minor = charge->amount_minor;
  event.currency = charge->currency;
  CallbackCheck check;
  check.event = std::move(event);
  return check;
}

}  // namespace

std::string sign_callback(const std::string& secret, std::int64_t t, const std::string& body) {
  return "t=" + std::to_string(t) + ",v1=" + hmac_sha256_hex(secret, std::to_string(t) + "." + body);
}

CallbackCheck verify_callback(const std::map<std::string, std::string>& headers,
                              const std::string& body, std::int64_t now_unix_s,
                              const CallbackKey& key) {
  // Without a secret every signature would be an HMAC under the empty key: refuse them all.
  if (key.secret.empty()) return reject(CallbackError::bad_signature, "no callback secret configured");
  const auto header = headers.find(std::string(signature_header));
  if (header == headers.end()) return reject(CallbackError::bad_signature, "no Sim-Signature header");
  const auto sig = parse_signature(header->second);
  if (!sig) return reject(CallbackError::bad_signature, "malformed Sim-Signature header");
  const std::string expected =
      hmac_sha256_hex(key.secret, std::to_string(sig->t) + "." + body);
  bool match = false;
  for (const std::string& candidate : sig->v1)
    match = constant_time_equal(candidate, expected) || match;  // no early exit
  if (!match) return reject(CallbackError::bad_signature, "signature does not match");
  const std::int64_t age_s = now_unix_s >= sig->t ? now_unix_s - sig->t : sig->t - now_unix_s;
  const std::int64_t tolerance_s = key.tolerance.count() / 1000;
  if (age_s > tolerance_s)
    return reject(CallbackError::stale_timestamp,
                  "timestamp " + std::to_string(sig->t) + " is " + std::to_string(age_s) +
                      " s from now (tolerance " + std::to_string(tolerance_s) + " s)");
  return parse_event(body);
}

}  // namespace payorch::providers::sim
