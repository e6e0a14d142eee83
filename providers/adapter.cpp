#include "providers/adapter.h"

namespace payorch::providers {

std::string_view to_string(Outcome o) {
  switch (o) {
    case Outcome::succeeded: return "succeeded";
    case Outcome::declined: return "declined";
    case Outcome::pending: return "pending";
    case Outcome::not_found: return "not_found";
    case Outcome::ambiguous: return "ambiguous";
    case Outcome::not_sent: return "not_sent";
    case Outcome::key_mismatch: return "key_mismatch";
    case Outcome::auth_refused: return "auth_refused";
    case Outcome::unsupported: return "unsupported";
  }
  return "?";
}

std::string_view to_string(CallbackError e) {
  switch (e) {
    case CallbackError::bad_signature: return "bad_signature";
    case CallbackError::stale_timestamp: return "stale_timestamp";
    case CallbackError::malformed: return "malformed";
  }
  return "?";
}

}  // namespace payorch::providers
