#pragma once
// Verification and parsing of sim vendor callbacks (docs/contract.md §5):
//   header  Sim-Signature: t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>
//           (core/signature.h signs and verifies it)
//   body    {"id":"evt_…","type":"charge.succeeded"|"charge.declined"|"charge.pending",
//            "created":<unix>,"data":<charge>}
//           or, for a refund (§8), "type":"refund.succeeded"|"refund.declined"|"refund.pending"
//           and "data":<refund>; the event's client_key is then the refund's reference.
#include <chrono>
#include <cstdint>
#include <map>
#include <string>

#include "providers/adapter.h"

namespace payorch::providers::sim {

struct CallbackKey {
  std::string secret;
  std::chrono::milliseconds tolerance{300'000};  // allowed |now - t|
};

// Checks, in this order: the signature (constant time; several v1= values are accepted during
// a secret rotation) → bad_signature; the timestamp within tolerance → stale_timestamp (a
// replayed old delivery); the body → malformed. Only the raw body as received is signed, so it
// is verified before it is parsed. `headers` keys are lower-case.
CallbackCheck verify_callback(const std::map<std::string, std::string>& headers,
                              const std::string& body, std::int64_t now_unix_s,
                              const CallbackKey& key);

}  // namespace payorch::providers::sim
