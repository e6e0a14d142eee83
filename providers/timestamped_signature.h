#pragma once
// The check of a callback signed "t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>"
// (core/signature.h), for every dialect whose vendor signs that way: sim (Sim-Signature) and
// stripe (Stripe-Signature).
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "providers/adapter.h"

namespace payorch::providers {

// nullopt when `headers` (lower-case keys) carry `header` (lower-case; `display` is its name in
// messages) with a v1 signature of `body` under `secret` and a timestamp within `tolerance` of
// now; otherwise the refusal: bad_signature (no secret configured, no header, malformed, no
// v1 matches) or stale_timestamp. Only the raw body as received is signed, so it is verified
// before anything parses it.
std::optional<CallbackCheck> refuse_unless_signed(const std::map<std::string, std::string>& headers,
                                                  std::string_view header, std::string_view display,
                                                  const std::string& body, std::int64_t now_unix_s,
                                                  const std::string& secret,
                                                  std::chrono::milliseconds tolerance);

// A refused callback.
CallbackCheck refuse(CallbackError error, std::string detail);

}  // namespace payorch::providers
