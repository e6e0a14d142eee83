// Intake validation of POST /v1/payments bodies, and of POST /v1/payments/{id}/refunds bodies
// (parse_refund_intent: the same rules for the fields they share).
//
// Rejections (IntentRejection::problem, HTTP status):
//   invalid-json              400  not parseable JSON, trailing data, a duplicated object key
//                                  (anywhere; the detail names it), nesting deeper than
//                                  IntentLimits::max_depth
//   idempotency-key-mismatch  400  body operation_id and Idempotency-Key header both given and
//                                  different
//   invalid-request           422  valid JSON but not an object, or one or more field errors;
//                                  `errors` then lists every one of them, not just the first
//   raw-card-data             422  `source` looks like a card number (see looks_like_pan);
//                                  whatever else is wrong, this is the answer, and neither the
//                                  answer nor anything logged repeats the value
//
// Field error codes (FieldError::code; stable, clients may branch on them):
//   required          a required field is absent (or null: null always means "not given")
//   wrong_type        JSON type is wrong, e.g. a string for amount_minor, a number for payee,
//                     a non-string metadata value
//   not_integer       amount_minor written with a fraction or exponent (100.0, 1e2, 1e400):
//                     never rounded
//   out_of_range      amount_minor outside 1 .. 2^53-1 (0, negatives, 2^53, 10^30)
//   invalid_format    characters outside the field's alphabet: operation_id [A-Za-z0-9._:-]
//                     (and not "." or "..", which clients normalise away as path segments),
//                     currency three upper-case letters, provider [a-z0-9_-], control
//                     characters (C0, DEL, C1) in payee/source
//   unknown_currency  three upper-case letters but not an active ISO 4217 code ("ABC", "XXX")
//   too_long          over the length limit (operation_id 128, provider 64, payee/source
//                     max_text bytes, description max_description bytes, metadata keys 40 and
//                     values 500 characters)
//   too_many          metadata has more than max_metadata_entries entries
//   unknown_field     a top-level member payorch does not know: a typo must never silently drop
//                     part of an intent (operation_type is one: it comes from the route)
//   empty             an empty string where a value is needed (operation_id, payee, source,
//                     currency, provider, a metadata key)
//
// Field names: body members by name, metadata entries as "metadata.<key>", and
// "Idempotency-Key" for the header when it supplies the operation_id.
#include "core/intent.h"

#include "core/names.h"
#include "core/strict_json.h"

#include <boost/json.hpp>

#include <algorithm>
#include <array>
#include <functional>
#include <map>

namespace payorch {
namespace {

namespace json = boost::json;

using Kind = IntentRejection::Kind;

IntentRejection rejection(Kind kind, std::string detail) { return IntentRejection{kind, std::move(detail), {}}; }

// Parses `body` by the one JSON reading policy (core/strict_json.h), at most limits.max_depth
// nested containers. On failure returns the 400 rejection.
std::variant<StrictJson, IntentRejection> parse_strict(std::string_view body, const IntentLimits& limits) {
  auto parsed = parse_strict_json(body, limits.max_depth);
  if (auto* e = std::get_if<StrictJsonError>(&parsed)) {
    if (e->kind == StrictJsonError::Kind::invalid) return rejection(Kind::invalid_json, "body is " + e->message);
    return rejection(Kind::invalid_json, e->message);
  }
  return std::get<StrictJson>(std::move(parsed));
}

using Errors = std::vector<FieldError>;

// Null and absence are the same: "not given".
const json::value* member(const json::object& body, std::string_view name) {
  auto it = body.find(name);
  if (it == body.end() || it->value().is_null()) return nullptr;
  return &it->value();
}

std::size_t code_points(std::string_view s) {
  return static_cast<std::size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

// C0 controls, DEL, and C1 controls (U+0080..U+009F, UTF-8 C2 80..C2 9F).
bool has_control(std::string_view s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7F) return true;
    if (c == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) <= 0x9F) return true;
  }
  return false;
}

template <class Pred>
bool all_of_chars(std::string_view s, Pred pred) {
  return std::all_of(s.begin(), s.end(), pred);
}

bool operation_id_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == ':' || c == '-';
}

// The string value of a field; records `wrong_type` (or `required`) and returns nullopt otherwise.
std::optional<std::string> string_member(const json::object& body, std::string_view name, bool required,
                                         Errors& errors) {
  const json::value* v = member(body, name);
  if (!v) {
    if (required) errors.push_back({std::string(name), "required", std::string(name) + " is required"});
    return std::nullopt;
  }
  if (!v->is_string()) {
    errors.push_back({std::string(name), "wrong_type", std::string(name) + " must be a string"});
    return std::nullopt;
  }
  return std::string(v->get_string());
}

// Records at most one error for `s`; returns whether it is acceptable.
bool check_identifier(const std::string& field, std::string_view s, std::size_t max_len, bool (*allowed)(char),
                      std::string_view alphabet, Errors& errors) {
  if (s.empty()) errors.push_back({field, "empty", field + " must not be empty"});
  else if (s.size() > max_len)
    errors.push_back({field, "too_long", field + " is longer than " + std::to_string(max_len) + " characters"});
  else if (!all_of_chars(s, allowed))
    errors.push_back({field, "invalid_format", field + " may only contain " + std::string(alphabet)});
  else return true;
  return false;
}

bool check_text(const std::string& field, std::string_view s, std::size_t max_bytes, Errors& errors) {
  if (s.empty()) errors.push_back({field, "empty", field + " must not be empty"});
  else if (s.size() > max_bytes)
    errors.push_back({field, "too_long", field + " is longer than " + std::to_string(max_bytes) + " bytes"});
  else if (has_control(s))
    errors.push_back({field, "invalid_format", field + " must not contain control characters"});
  else return true;
  return false;
}

// amount_minor is judged on its source text: "100" is an integer, "100.0" and "1e2" are not
// (even though they equal one), and an integer too large for any machine type is still just
// out of range.
std::optional<std::int64_t> check_amount(const json::object& body, const StrictJson& parsed, Errors& errors) {
  const std::string field = "amount_minor";
  const json::value* v = member(body, field);
  if (!v) {
    errors.push_back({field, "required", "amount_minor is required"});
    return std::nullopt;
  }
  if (!v->is_number()) {
    errors.push_back({field, "wrong_type", "amount_minor must be a JSON integer (minor units), not a " +
                                               std::string(json::to_string(v->kind()))});
    return std::nullopt;
  }
  const std::string& text = parsed.top_level_numbers.find(field)->second;
  if (text.find_first_of(".eE") != std::string::npos) {
    errors.push_back({field, "not_integer", "amount_minor must be an integer number of minor units, got " + text});
    return std::nullopt;
  }
  const std::string range = "amount_minor must be between 1 and " + std::to_string(max_amount_minor);
  // JSON integers have no leading zeros, so more than 16 digits is above 2^53-1.
  if (text.front() == '-' || text.size() > 16) {
    errors.push_back({field, "out_of_range", range});
    return std::nullopt;
  }
  std::int64_t amount = 0;
  for (char c : text) amount = amount * 10 + (c - '0');
  if (amount < 1 || amount > max_amount_minor) {
    errors.push_back({field, "out_of_range", range});
    return std::nullopt;
  }
  return amount;
}

void check_currency(const json::object& body, Intent& intent, Errors& errors) {
  auto currency = string_member(body, "currency", true, errors);
  if (!currency) return;
  const bool three_upper =
      currency->size() == 3 && all_of_chars(*currency, [](char c) { return c >= 'A' && c <= 'Z'; });
  if (currency->empty()) errors.push_back({"currency", "empty", "currency must not be empty"});
  else if (!three_upper)
    errors.push_back({"currency", "invalid_format", "currency must be an ISO 4217 code of three upper-case letters"});
  else if (!valid_currency(*currency))
    errors.push_back({"currency", "unknown_currency", "\"" + *currency + "\" is not an active ISO 4217 currency"});
  else intent.currency = std::move(*currency);
}

void check_metadata(const json::object& body, const IntentLimits& limits,
                    std::map<std::string, std::string>& metadata, Errors& errors) {
  const json::value* v = member(body, "metadata");
  if (!v) return;
  if (!v->is_object()) {
    errors.push_back({"metadata", "wrong_type", "metadata must be an object of string values"});
    return;
  }
  const json::object& md = v->get_object();
  if (md.size() > limits.max_metadata_entries)
    errors.push_back({"metadata", "too_many",
                      "metadata has more than " + std::to_string(limits.max_metadata_entries) + " entries"});
  for (const auto& kv : md) {
    const std::string field = "metadata." + std::string(kv.key());
    if (kv.key().empty()) errors.push_back({"metadata", "empty", "metadata keys must not be empty"});
    else if (code_points(kv.key()) > limits.max_metadata_key)
      errors.push_back({field, "too_long",
                        "metadata keys are at most " + std::to_string(limits.max_metadata_key) + " characters"});
    else if (!kv.value().is_string())
      errors.push_back({field, "wrong_type", field + " must be a string"});
    else if (code_points(kv.value().get_string()) > limits.max_metadata_value)
      errors.push_back({field, "too_long",
                        field + " is longer than " + std::to_string(limits.max_metadata_value) + " characters"});
    else metadata.emplace(kv.key(), kv.value().get_string());
  }
}

// The Idempotency-Key draft makes the header a structured-field String ("\"abc\""); many clients
// send the bare token. Both are accepted; our alphabet has no '"' or '\\', so unquoting is exact.
std::string_view unquote_header(std::string_view h) {
  if (h.size() >= 2 && h.front() == '"' && h.back() == '"') return h.substr(1, h.size() - 2);
  return h;
}

// Free text stored as given (description, reason): a string of at most `max_bytes`.
void check_free_text(const json::object& body, std::string_view name, std::size_t max_bytes,
                     std::optional<std::string>& out, Errors& errors) {
  auto text = string_member(body, name, false, errors);
  if (!text) return;
  if (text->size() > max_bytes)
    errors.push_back({std::string(name), "too_long",
                      std::string(name) + " is longer than " + std::to_string(max_bytes) + " bytes"});
  else out = std::move(*text);
}

// operation_id: from the body, or from the Idempotency-Key header; if both are given they must
// agree (400: the client contradicts itself about which intent this is, so no field is worth
// judging). Field problems go to `errors`; the 400 is returned.
std::optional<IntentRejection> read_operation_id(const json::object& obj,
                                                 std::optional<std::string_view> idempotency_key,
                                                 std::string& out, Errors& errors) {
  auto body_id = string_member(obj, "operation_id", false, errors);
  std::optional<std::string> header_id;
  if (idempotency_key) header_id = std::string(unquote_header(*idempotency_key));
  if (body_id && header_id && *body_id != *header_id)
    return rejection(Kind::idempotency_key_mismatch,
                     "the Idempotency-Key header and the body's operation_id differ");
  if (body_id || header_id) {
    const std::string field = body_id ? "operation_id" : "Idempotency-Key";
    std::string id = body_id ? std::move(*body_id) : std::move(*header_id);
    if (!check_identifier(field, id, 128, operation_id_char, "A-Z a-z 0-9 . _ : -", errors)) {
    } else if (dot_segment(id)) {
      errors.push_back({field, "invalid_format",
                        field + " must not be \".\" or \"..\": clients normalise such a path segment away"});
    } else {
      out = std::move(id);
    }
  } else if (member(obj, "operation_id") == nullptr) {
    errors.push_back({"operation_id", "required", "operation_id (or an Idempotency-Key header) is required"});
  }
  return std::nullopt;
}

void check_unknown_fields(const json::object& obj, std::span<const std::string_view> known, Errors& errors) {
  for (const auto& kv : obj) {
    if (std::find(known.begin(), known.end(), kv.key()) == known.end())
      errors.push_back({std::string(kv.key()), "unknown_field", "unknown field \"" + std::string(kv.key()) + "\""});
  }
}

// The 422 naming every field error (at most max_listed_errors of them in the detail).
IntentRejection field_errors(Errors errors) {
  std::string detail = std::to_string(errors.size()) + (errors.size() == 1 ? " invalid field: " : " invalid fields: ");
  for (std::size_t i = 0; i < errors.size() && i < max_listed_errors; ++i) detail += (i ? ", " : "") + errors[i].field;
  if (errors.size() > max_listed_errors) detail += " and " + std::to_string(errors.size() - max_listed_errors) + " more";
  return IntentRejection{Kind::invalid_request, std::move(detail), std::move(errors)};
}

// The parsed body as an object, or the 400/422 rejection of one that is not.
std::variant<StrictJson, IntentRejection> parse_object(std::string_view body, const IntentLimits& limits) {
  auto parsed_or = parse_strict(body, limits);
  if (auto* r = std::get_if<IntentRejection>(&parsed_or)) return std::move(*r);
  if (!std::get<StrictJson>(parsed_or).root.is_object())
    return rejection(Kind::invalid_request, "the body must be a JSON object");
  return parsed_or;
}

constexpr std::array<std::string_view, 8> known_fields = {
    "operation_id", "amount_minor", "currency", "payee", "source", "provider", "description", "metadata"};

constexpr std::array<std::string_view, 4> known_refund_fields = {"operation_id", "amount_minor", "reason",
                                                                 "metadata"};

}  // namespace

std::string_view problem_code(IntentRejection::Kind k) {
  switch (k) {
    case Kind::invalid_json: return "invalid-json";
    case Kind::invalid_request: return "invalid-request";
    case Kind::idempotency_key_mismatch: return "idempotency-key-mismatch";
    case Kind::raw_card_data: return "raw-card-data";
  }
  return "invalid-request";
}

bool valid_operation_id(std::string_view s) {
  return !s.empty() && s.size() <= 128 && all_of_chars(s, operation_id_char) && !dot_segment(s);
}

bool dot_segment(std::string_view s) { return s == "." || s == ".."; }

bool looks_like_pan(std::string_view s) {
  std::string digits;
  for (char c : s) {
    if (c >= '0' && c <= '9') digits.push_back(c);
    else if (c != ' ' && c != '-') return false;
  }
  if (digits.size() < 13 || digits.size() > 19) return false;
  // Luhn: from the rightmost digit, double every second one (subtracting 9 above 9).
  int sum = 0;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    int d = digits[digits.size() - 1 - i] - '0';
    if (i % 2 == 1) d = d * 2 > 9 ? d * 2 - 9 : d * 2;
    sum += d;
  }
  return sum % 10 == 0;
}

std::variant<Intent, IntentRejection> parse_intent(std::string_view body,
                                                   std::optional<std::string_view> idempotency_key,
                                                   const IntentLimits& limits) {
  auto parsed_or = parse_object(body, limits);
  if (auto* r = std::get_if<IntentRejection>(&parsed_or)) return std::move(*r);
  const StrictJson& parsed = std::get<StrictJson>(parsed_or);
  const json::object& obj = parsed.root.get_object();

  Intent intent;
  Errors errors;
  if (auto r = read_operation_id(obj, idempotency_key, intent.operation_id, errors)) return std::move(*r);

  if (auto amount = check_amount(obj, parsed, errors)) intent.amount_minor = *amount;
  check_currency(obj, intent, errors);
  for (auto [name, target] : {std::pair{"payee", &intent.payee}, std::pair{"source", &intent.source}}) {
    auto s = string_member(obj, name, true, errors);
    // A card number is never stored, echoed or logged: the answer names the field, not the value,
    // and nothing else about the request is judged (PCI scope starts at the first stored PAN).
    if (s && std::string_view(name) == "source" && looks_like_pan(*s))
      return IntentRejection{Kind::raw_card_data,
                             "source looks like a card number: send the vendor's token or reference, never card data",
                             {{"source", "raw_card_data", "source looks like a primary account number"}}};
    if (s && check_text(name, *s, limits.max_text, errors)) *target = std::move(*s);
  }
  if (auto provider = string_member(obj, "provider", false, errors)) {
    if (check_identifier("provider", *provider, max_name_length, is_name_char, "a-z 0-9 _ -", errors))
      intent.provider = std::move(*provider);
  }
  check_free_text(obj, "description", limits.max_description, intent.description, errors);
  check_metadata(obj, limits, intent.metadata, errors);
  check_unknown_fields(obj, known_fields, errors);
  if (!errors.empty()) return field_errors(std::move(errors));
  return intent;
}

std::variant<RefundIntent, IntentRejection> parse_refund_intent(std::string_view body,
                                                               std::optional<std::string_view> idempotency_key,
                                                               const IntentLimits& limits) {
  auto parsed_or = parse_object(body, limits);
  if (auto* r = std::get_if<IntentRejection>(&parsed_or)) return std::move(*r);
  const StrictJson& parsed = std::get<StrictJson>(parsed_or);
  const json::object& obj = parsed.root.get_object();

  RefundIntent intent;
  Errors errors;
  if (auto r = read_operation_id(obj, idempotency_key, intent.operation_id, errors)) return std::move(*r);
  if (auto amount = check_amount(obj, parsed, errors)) intent.amount_minor = *amount;
  check_free_text(obj, "reason", limits.max_description, intent.reason, errors);
  check_metadata(obj, limits, intent.metadata, errors);
  check_unknown_fields(obj, known_refund_fields, errors);
  if (!errors.empty()) return field_errors(std::move(errors));
  return intent;
}

}  // namespace payorch
