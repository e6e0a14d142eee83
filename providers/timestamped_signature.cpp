#include "providers/timestamped_signature.h"

#include "core/signature.h"

namespace payorch::providers {

CallbackCheck refuse(CallbackError error, std::string detail) {
  CallbackCheck check;
  check.error = error;
  check.detail = std::move(detail);
  return check;
}

std::optional<CallbackCheck> refuse_unless_signed(const std::map<std::string, std::string>& headers,
                                                  std::string_view header, std::string_view display,
                                                  const std::string& body, std::int64_t now_unix_s,
                                                  const std::string& secret,
                                                  std::chrono::milliseconds tolerance) {
  // Without a secret every signature would be an HMAC under the empty key: refuse them all.
  if (secret.empty()) return refuse(CallbackError::bad_signature, "no callback secret configured");
  const auto found = headers.find(std::string(header));
  if (found == headers.end())
    return refuse(CallbackError::bad_signature, "no " + std::string(display) + " header");
  const std::int64_t tolerance_s = tolerance.count() / 1000;
  const SignatureVerdict verdict = verify_timestamped(found->second, body, secret, now_unix_s, tolerance_s);
  switch (verdict.result) {
    case SignatureVerdict::Result::malformed:
      return refuse(CallbackError::bad_signature, "malformed " + std::string(display) + " header");
    case SignatureVerdict::Result::mismatch:
      return refuse(CallbackError::bad_signature, "signature does not match");
    case SignatureVerdict::Result::stale:
      return refuse(CallbackError::stale_timestamp,
                    "timestamp " + std::to_string(verdict.t) + " is " + std::to_string(verdict.age_s) +
                        " s from now (tolerance " + std::to_string(tolerance_s) + " s)");
    case SignatureVerdict::Result::valid: break;
  }
  return std::nullopt;
}

}  // namespace payorch::providers
