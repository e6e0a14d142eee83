#include "providers/sim/callback.h"

#include <optional>
#include <string_view>

#include "core/enum_names.h"
#include "core/strict_json.h"
#include "providers/sim/charge.h"
#include "providers/sim/refund.h"
#include "providers/timestamped_signature.h"

namespace payorch::providers::sim {
namespace {

namespace json = boost::json;

// An event's "type" in the sim protocol (docs/contract.md §5, §8): the operation it is about
// and the status reached; any other is malformed.
constexpr EnumNames<VendorOutcome, 3> charge_event_names{{
    {VendorOutcome::succeeded, "charge.succeeded"},
    {VendorOutcome::declined, "charge.declined"},
    {VendorOutcome::pending, "charge.pending"},
}};
constexpr EnumNames<VendorOutcome, 3> refund_event_names{{
    {VendorOutcome::succeeded, "refund.succeeded"},
    {VendorOutcome::declined, "refund.declined"},
    {VendorOutcome::pending, "refund.pending"},
}};

struct EventType {
  OperationKind kind;
  VendorOutcome outcome;
};

std::optional<EventType> parse_event_type(std::string_view type) {
  if (const auto outcome = value_of(charge_event_names, type))
    return EventType{OperationKind::charge, *outcome};
  if (const auto outcome = value_of(refund_event_names, type))
    return EventType{OperationKind::refund, *outcome};
  return std::nullopt;
}

// The event's data: the charge or the refund the event is about.
std::optional<VendorObject> parse_data(OperationKind kind, const json::value& data,
                                       std::string& error) {
  if (kind == OperationKind::refund) {
    auto refund = parse_refund(data, error);
    return refund ? std::optional<VendorObject>(std::move(*refund)) : std::nullopt;
  }
  auto charge = parse_charge(data, error);
  return charge ? std::optional<VendorObject>(std::move(*charge)) : std::nullopt;
}

CallbackCheck parse_event(const std::string& body) {
  // The one JSON reading policy: a signed event that names a key twice (two "type"s, two
  // "status"es) is malformed, never read as whichever came last.
  auto parsed = parse_strict_json(body);
  if (auto* e = std::get_if<StrictJsonError>(&parsed)) return refuse(CallbackError::malformed, "body refused: " + e->message);
  const json::value& v = std::get<StrictJson>(parsed).root;
  if (!v.is_object()) return refuse(CallbackError::malformed, "body is not a JSON object");
  const json::object& o = v.get_object();
  const json::value* id = o.if_contains("id");
  const json::value* type = o.if_contains("type");
  const json::value* created = o.if_contains("created");
  const json::value* data = o.if_contains("data");
  if (!id || !id->is_string() || id->get_string().empty() || !type || !type->is_string() ||
      !created || !(created->is_int64() || created->is_uint64()) || !data)
    return refuse(CallbackError::malformed, "event lacks id, type, created or data");
  const auto event_type = parse_event_type(type->get_string());
  if (!event_type)
    return refuse(CallbackError::malformed,
                  "unknown event type \"" + std::string(type->get_string()) + "\"");
  const std::string noun(to_string(event_type->kind));
  std::string error;
  const auto object = parse_data(event_type->kind, *data, error);
  if (!object) return refuse(CallbackError::malformed, "event data: " + error);
  // The event type is the vendor's statement; a charge or refund object saying otherwise is
  // not to be guessed between.
  if (object->status != event_type->outcome)
    return refuse(CallbackError::malformed, "event type and " + noun + " status disagree");
  CallbackEvent event;
  event.event_id = id->get_string();
  event.kind = event_type->kind;
  event.client_key = object->reference;
  event.outcome = event_type->outcome;
  event.vendor_reference = object->id;
  event.decline_code = object->decline_code;
  event.amount_minor = object->amount_minor;
  event.currency = object->currency;
  CallbackCheck check;
  check.verified = true;
  check.events.push_back(std::move(event));
  return check;
}

}  // namespace

CallbackCheck verify_callback(const std::map<std::string, std::string>& headers,
                              const std::string& body, std::int64_t now_unix_s,
                              const CallbackKey& key) {
  if (auto refused = refuse_unless_signed(headers, "sim-signature", "Sim-Signature", body, now_unix_s,
                                          key.secret, key.tolerance))
    return *refused;
  return parse_event(body);
}

}  // namespace payorch::providers::sim
