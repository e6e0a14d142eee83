#include "util/os_random.h"

#include <openssl/err.h>
#include <openssl/rand.h>

#include <algorithm>
#include <climits>
#include <cstdlib>

#include "util/log.h"

namespace payorch {

void OsRandom::fill(std::span<std::uint8_t> out) {
  while (!out.empty()) {
    const std::size_t chunk = std::min<std::size_t>(out.size(), INT_MAX);
    if (RAND_bytes(out.data(), static_cast<int>(chunk)) != 1) {
      char reason[256] = "unknown error";
      if (unsigned long e = ERR_get_error(); e != 0) ERR_error_string_n(e, reason, sizeof reason);
      log::alert("random.failed",
                 "OpenSSL RAND_bytes failed; refusing to mint ids or client keys without a CSPRNG",
                 {{"error", static_cast<const char*>(reason)}});
      std::abort();
    }
    out = out.subspan(chunk);
  }
}

}  // namespace payorch
