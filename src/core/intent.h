#pragma once
// A payment intent as a tenant states it, and its validation. Pure: no I/O.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace payorch {

inline constexpr std::int64_t max_amount_minor = 9'007'199'254'740'991;  // 2^53 - 1

struct Intent {
  std::string operation_type = "payment";  // from the route, never the body
  std::string operation_id;                // 1-128 chars of [A-Za-z0-9._:-]
  std::int64_t amount_minor = 0;           // 1 .. 2^53-1, minor units
  std::string currency;                    // ISO 4217 alpha-3, upper case
  std::string payee;
  std::string source;
  std::optional<std::string> provider;     // as named by the request (part of the digest)
  std::optional<std::string> description;  // stored, not part of the digest
  std::map<std::string, std::string> metadata;  // flat, <= 20 string values; not in the digest
};

struct FieldError {
  std::string field;    // JSON pointer-ish name: "amount_minor", "metadata.order"
  std::string code;     // stable: "required", "unknown_field", "not_integer", "out_of_range", ...
  std::string message;  // for humans
};

// How many field errors an answer names at most. A body with thousands of mistakes (a 64 KiB
// object of unknown fields) gets an answer of bounded size, never one larger than the request.
inline constexpr std::size_t max_listed_errors = 20;

// Why a body was refused, as the problem it is answered with (problem_code; the HTTP status is
// the problem catalogue's, src/http/problem.h: 400 for a body that is not JSON or whose
// operation_id disagrees with its Idempotency-Key header, 422 for the others).
struct IntentRejection {
  enum class Kind {
    invalid_json,              // not strict JSON (a duplicate key, too deep, not UTF-8, ...)
    invalid_request,           // not an object, or field errors (listed in `errors`)
    idempotency_key_mismatch,  // the header and the body name different operation_ids
    raw_card_data,             // source looks like a card number (never echoed)
  } kind = Kind::invalid_request;
  std::string detail;
  std::vector<FieldError> errors;
};

// The stable problem code of a refusal ("invalid-json", "invalid-request",
// "idempotency-key-mismatch", "raw-card-data").
std::string_view problem_code(IntentRejection::Kind k);

// The longest payee or source, in bytes. Also the limit of the sim protocol, which
// payorch-vendor-sim enforces with this same constant: an intent payorch accepts is always one
// the demo vendor can take, never one that is accepted and then can only fail.
inline constexpr std::size_t max_payee_source_bytes = 255;

struct IntentLimits {
  std::size_t max_depth = 8;
  std::size_t max_metadata_entries = 20;
  std::size_t max_metadata_key = 40;
  std::size_t max_metadata_value = 500;
  std::size_t max_text = max_payee_source_bytes;  // payee, source
  std::size_t max_description = 1000;
};

// Parses and validates a POST /v1/payments body. `idempotency_key` is the Idempotency-Key
// header when present: it may stand in for a missing body operation_id, and must equal it when
// both are given. Duplicate JSON keys, unknown fields, floats, strings-for-numbers and amounts
// out of range are all refused — nothing is rounded or silently dropped.
std::variant<Intent, IntentRejection> parse_intent(std::string_view body,
                                                   std::optional<std::string_view> idempotency_key,
                                                   const IntentLimits& limits = {});

// A refund as a tenant states it (docs/refunds.md): POST /v1/payments/{payment_operation_id}/refunds
// with {"operation_id","amount_minor","reason"?,"metadata"?}. The payment comes from the path
// and the currency from the payment, so neither is a body field.
struct RefundIntent {
  std::string operation_type = "refund";   // from the route, never the body
  std::string operation_id;                // the same rules as a payment's, "." and ".." refused
  std::int64_t amount_minor = 0;           // 1 .. 2^53-1; the money rule (core/refund.h) bounds it further
  std::optional<std::string> reason;       // free text, stored, not in the digest: the limit of description
  std::map<std::string, std::string> metadata;  // the limits of a payment's metadata
};

// Parses and validates a refund body with the rules, error codes and answers of parse_intent:
// the header/body operation_id agreement (400), every field error listed (422), unknown fields
// named ("currency" and "payment_id" among them).
std::variant<RefundIntent, IntentRejection> parse_refund_intent(std::string_view body,
                                                               std::optional<std::string_view> idempotency_key,
                                                               const IntentLimits& limits = {});

bool valid_operation_id(std::string_view s);
// "." or "..": refused as an operation_id (docs/contract.md §1), since clients normalise such a path
// segment away and its Location could not be fetched.
bool dot_segment(std::string_view s);
// A value that looks like a primary account number (docs/contract.md §2): 13–19 digits, spaces and dashes
// allowed between them, passing the Luhn check.
bool looks_like_pan(std::string_view s);
bool valid_currency(std::string_view s);  // an active ISO 4217 alpha-3 code

// Every code valid_currency() accepts, sorted (for documentation and tests).
std::span<const std::string_view> currency_codes();

}  // namespace payorch
