#pragma once
// The provider adapter interface (docs/contract.md §5): turns a vendor's HTTP dialect into four normalized
// calls. Adapters never touch the database; the engine decides what an outcome means under the
// provider's contract (core/decide).
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/decide.h"

namespace payorch::providers {

// What a vendor call told us is the core's VendorOutcome (core/decide.h); adapters produce
// it, the engine decides with it.

struct VendorResult {
  VendorOutcome outcome = VendorOutcome::ambiguous;
  std::optional<std::string> vendor_reference;  // the vendor's charge id
  std::optional<std::string> decline_code;
  std::optional<std::int64_t> amount_minor;     // as the vendor reports it (checked by the engine)
  std::optional<std::string> currency;
  int http_status = 0;                          // 0 when no answer
  std::string detail;                           // for logs and reconciliation evidence
};

// The immutable parameters of one payment, as the vendor sees them.
struct ChargeRequest {
  std::string client_key;
  std::int64_t amount_minor = 0;
  std::string currency;
  std::string payee;
  std::string source;
};

// The immutable parameters of one refund (docs/refunds.md), as the vendor sees them. Its own
// client_key is its idempotency key and reference; the charge is named as the vendor knows it.
struct RefundRequest {
  std::string client_key;                       // the refund's "ck_…"
  std::string charge_reference;                 // the vendor's id of the refunded charge
  std::string charge_client_key;                // the refunded payment's client_key
  std::int64_t amount_minor = 0;
  std::string currency;                         // the payment's
};

// What a vendor call or callback is about.
enum class OperationKind { charge, refund };
std::string_view to_string(OperationKind k);  // "charge" | "refund"

// A verified vendor callback.
struct CallbackEvent {
  std::string event_id;                         // the vendor's delivery id (inbox dedup key)
  OperationKind kind = OperationKind::charge;   // a charge's or a refund's event
  std::string client_key;                       // our reference (the refund's, for a refund)
  VendorOutcome outcome = VendorOutcome::pending;  // succeeded / declined / pending
  std::optional<std::string> vendor_reference;
  std::optional<std::string> decline_code;
  std::optional<std::int64_t> amount_minor;
  std::optional<std::string> currency;
};

enum class CallbackError { bad_signature, stale_timestamp, malformed };
std::string_view to_string(CallbackError e);

struct CallbackCheck {
  bool verified = false;  // the signature holds and the body was read
  // What a verified callback says about charges and refunds, in the vendor's order. One for
  // most dialects; a batch (Adyen) carries several, each deduplicated on its own; a verified
  // notification about nothing payorch tracks (another event type) carries none and is only
  // acknowledged.
  std::vector<CallbackEvent> events;
  // The acknowledgement the vendor's documentation asks for (text/plain), e.g. Adyen's
  // "[accepted]"; nullopt: payorch's own JSON answer.
  std::optional<std::string> ack_body;
  CallbackError error = CallbackError::malformed;  // when not verified
  std::string detail;
};

using ResultHandler = std::function<void(VendorResult)>;

class Adapter {
public:
  virtual ~Adapter() = default;
  // Sends the charge with client_key as the vendor's idempotency key. The handler is called
  // exactly once, on the adapter's executor.
  virtual void submit(const ChargeRequest& req, ResultHandler done) = 0;
  // Asks the vendor about the charge by the pre-known client_key. `unsupported` if it can't.
  virtual void query(const ChargeRequest& req, ResultHandler done) = 0;
  virtual bool supports_query() const = 0;
  // Verifies the signature (constant-time, timestamp within tolerance) and parses the body.
  // `headers` keys are lower-case.
  virtual CallbackCheck verify_and_parse(const std::map<std::string, std::string>& headers,
                                         const std::string& body, std::int64_t now_unix_s) const = 0;
  // Refunds (docs/refunds.md): sends the refund with its own client_key as the vendor's
  // idempotency key, and asks about it by that key; the handler is called exactly once, on
  // the adapter's executor, with the refund's outcome (succeeded / declined / pending / …, as
  // for a charge; vendor_reference is the vendor's refund id). Adapters without refunds answer
  // `unsupported`.
  virtual bool supports_refunds() const { return false; }
  virtual void refund(const RefundRequest&, ResultHandler done) {
    done(VendorResult{VendorOutcome::unsupported, {}, {}, {}, {}, 0, "refunds not supported"});
  }
  virtual void query_refund(const RefundRequest&, ResultHandler done) {
    done(VendorResult{VendorOutcome::unsupported, {}, {}, {}, {}, 0, "refunds not supported"});
  }
  // Optional: close/cancel by reference so that a late success becomes impossible.
  virtual bool supports_fence() const { return false; }
  virtual void fence(const ChargeRequest&, ResultHandler done) {
    done(VendorResult{VendorOutcome::unsupported, {}, {}, {}, {}, 0, "fence not supported"});
  }
};

}  // namespace payorch::providers
