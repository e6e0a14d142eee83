#pragma once
// The production randomness source: OpenSSL's CSPRNG. Client keys and ids come from here.
#include <cstdint>
#include <span>

#include "core/clock.h"

namespace payorch {

class OsRandom final : public Random {
public:
  // Fills `out` from RAND_bytes. If the CSPRNG cannot deliver (not seeded, entropy source
  // gone), the process aborts with a message on stderr: a predictable client_key could
  // collide at a vendor and be charged against another payment, so there is no fallback.
  void fill(std::span<std::uint8_t> out) override;
};

}  // namespace payorch
