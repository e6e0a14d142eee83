#pragma once
// The sim vendor's charge (docs/contract.md §5, the `sim` protocol): request validation, the outcome a
// source decides, and the JSON shapes of a charge and of a callback event. Pure functions.
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace payorch::vendor_sim {

// The five fields of POST /v1/charges. reference equals the Idempotency-Key.
struct ChargeParams {
  std::string reference;
  std::int64_t amount_minor = 0;
  std::string currency;
  std::string payee;
  std::string source;
};

// Validates a charge request. nullopt (→ 400 invalid_request, nothing done) when the
// Idempotency-Key is missing or not 1–255 visible ASCII characters, the body is not a JSON
// object, a field is missing or has the wrong type, amount_minor is not an integer in
// [1, 2^53−1], currency is not three upper-case letters, payee or source is empty, or
// reference differs from the Idempotency-Key. Members beyond the five are ignored (and are not
// part of request_hash). `error` gets a one-line reason for the log.
std::optional<ChargeParams> parse_charge_request(std::string_view idempotency_key,
                                                 std::string_view body, std::string& error);

// "same body" for idempotency: hex SHA-256 of the RFC 8785 canonical JSON of the five fields.
std::string request_hash(const ChargeParams& p);

enum class ChargeStatus { succeeded, declined, pending };
std::string_view to_string(ChargeStatus s);
std::optional<ChargeStatus> parse_charge_status(std::string_view s);

// What a source decides: tok_ok succeeds; tok_decline is declined (insufficient_funds);
// tok_pending is pending and succeeds after --pending-delay; any other source is declined
// with decline_code invalid_source (a final answer, as a real vendor gives for a bad card
// token: the client learns its mistake instead of an ambiguous error).
struct Outcome {
  ChargeStatus status = ChargeStatus::succeeded;
  std::optional<std::string> decline_code;
};
Outcome decide_outcome(std::string_view source);

// One row of the ledger.
struct Charge {
  std::string id;  // "ch_" + ULID
  ChargeParams params;
  ChargeStatus status = ChargeStatus::succeeded;
  std::optional<std::string> decline_code;
  std::int64_t created_at = 0;  // sim clock, Unix ms
  std::int64_t updated_at = 0;
  std::int64_t key_expires_at = 0;
};

// The protocol's charge object: {"id","reference","status","amount_minor","currency","payee",
// "decline_code"} and nothing else.
boost::json::object charge_json(const Charge& c);

// The charge with the ledger's own columns too, for GET /_sim/ledger.
boost::json::object ledger_json(const Charge& c);

// "charge.succeeded" / "charge.declined" / "charge.pending".
std::string event_type(ChargeStatus s);

// The exact bytes of a callback: {"id","type","created","data"}; `created` is when the object
// in `data` reached the status `type` names, in sim-clock Unix seconds.
std::string event_body(std::string_view event_id, std::string_view type,
                       std::int64_t created_unix_s, boost::json::object data);

// event_body of a charge that reached `status`.
std::string callback_body(std::string_view event_id, ChargeStatus status,
                          std::int64_t created_unix_s, const Charge& c);

// {"error":{"type":type}}, the protocol's error body.
boost::json::object error_json(std::string_view type);

}  // namespace payorch::vendor_sim
