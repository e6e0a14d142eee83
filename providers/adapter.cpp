#include "providers/adapter.h"

namespace payorch::providers {

std::string_view to_string(CallbackError e) {
  switch (e) {
    case CallbackError::bad_signature: return "bad_signature";
    case CallbackError::stale_timestamp: return "stale_timestamp";
    case CallbackError::malformed: return "malformed";
  }
  return "?";
}

}  // namespace payorch::providers
