#include "providers/sim/object.h"

#include "core/enum_names.h"
#include "providers/json_fields.h"

namespace payorch::providers::sim {
namespace {

namespace json = boost::json;

// A charge's or refund's "status" in the sim protocol (docs/contract.md §5, §8); any other is
// not an answer.
constexpr EnumNames<VendorOutcome, 3> status_names{{
    {VendorOutcome::succeeded, "succeeded"},
    {VendorOutcome::declined, "declined"},
    {VendorOutcome::pending, "pending"},
}};

}  // namespace

const json::string* string_field(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v ? v->if_string() : nullptr;
}

bool optional_string_field(const json::object& o, std::string_view key, std::string_view noun,
                           std::optional<std::string>& out, std::string& error) {
  const json::value* v = o.if_contains(key);
  if (!v || v->is_null()) return true;
  if (!v->is_string()) {
    error = std::string(noun) + " " + std::string(key) + " is not a string";
    return false;
  }
  out = std::string(v->get_string());
  return true;
}

const json::object* parse_object(const json::value& v, std::string_view noun, VendorObject& out,
                                 std::string& error) {
  const json::object* o = v.if_object();
  if (!o) {
    error = std::string(noun) + " is not a JSON object";
    return nullptr;
  }
  const json::string* id = string_field(*o, "id");
  const json::string* reference = string_field(*o, "reference");
  const json::string* status = string_field(*o, "status");
  const json::string* currency = string_field(*o, "currency");
  const auto amount = integer_member(*o, "amount_minor");
  if (!id || id->empty() || !reference || !status || !currency || !amount) {
    error = std::string(noun) + " lacks id, reference, status, amount_minor or currency";
    return nullptr;
  }
  const auto outcome = value_of(status_names, *status);
  if (!outcome) {
    error = "unknown " + std::string(noun) + " status \"" + std::string(*status) + "\"";
    return nullptr;
  }
  out.id = *id;
  out.reference = *reference;
  out.status = *outcome;
  out.amount_minor = *amount;
  out.currency = *currency;
  if (!optional_string_field(*o, "decline_code", noun, out.decline_code, error)) return nullptr;
  return o;
}

void add_difference(std::string& differences, const std::string& what) {
  differences += differences.empty() ? "" : "; ";
  differences += what;
}

std::string mismatch(const VendorObject& object, const std::string& client_key,
                     std::int64_t amount_minor, const std::string& currency) {
  std::string out;
  if (object.reference != client_key)
    add_difference(out, "reference " + object.reference + " != " + client_key);
  if (object.amount_minor != amount_minor)
    add_difference(out, "amount_minor " + std::to_string(object.amount_minor) +
                            " != " + std::to_string(amount_minor));
  if (object.currency != currency)
    add_difference(out, "currency " + object.currency + " != " + currency);
  return out;
}

VendorResult to_result(const VendorObject& object, int http_status) {
  VendorResult r;
  r.outcome = object.status;
  r.vendor_reference = object.id;
  r.decline_code = object.decline_code;
  r.amount_minor = object.amount_minor;
  r.currency = object.currency;
  r.http_status = http_status;
  return r;
}

}  // namespace payorch::providers::sim
