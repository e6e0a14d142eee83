#pragma once
// The parts of the schema that live outside config.cpp. Internal to src/config.
#include <optional>
#include <vector>

#include "config/config.h"
#include "config/reader.h"

namespace payorch::config::detail {

// Reads `providers[]` into `out`, including the startup safety checks of docs/contract.md §5 that need
// engine.lease; `lease` is nullopt when engine.lease itself was bad (those checks are skipped
// rather than reported twice).
void read_providers(const Section& top, std::vector<Provider>& out, std::optional<Millis> lease);

// Reads `server.tls` (tls.cpp): both files must hold PEM, and the key must be the
// certificate's. Leaves `out` empty when the section is absent.
void read_tls(const Section& server, std::optional<Tls>& out);

}  // namespace payorch::config::detail
