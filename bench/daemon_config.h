#pragma once
// The payorchd configuration every benchmark run uses: one tenant, one `sim` provider with risk
// caps far above anything a run can reach (intake is never paused), the engine live; on SQLite,
// or on a PostgreSQL database shared by several nodes.
#include <cstddef>
#include <cstdint>
#include <string>

namespace payorch::bench {

inline constexpr const char* bench_vendor_api_key = "bench-sim-key-123";

struct DaemonSetup {
  std::string db_path;  // SQLite: the database file (one daemon per file)
  // The provider's base_url: the demo vendor, or a closed loopback port (the vendor is down:
  // every submit is refused before it is sent).
  std::string vendor_url;
  int workers = 2;  // engine.workers: concurrent vendor calls
  // PostgreSQL instead of SQLite when set: a libpq URI of a database several daemons share,
  // each with its own `node_id` and a pool of `pool_size` connections.
  std::string postgres_url = {};
  std::size_t pool_size = 8;
  std::string node_id = {};  // engine.node_id; "" leaves payorchd's default (the host name)
  std::string listen_host = "127.0.0.1";  // server.listen's address (its port is 0: any free)
};

std::string daemon_config(const DaemonSetup& setup);

// A loopback port nothing listens on (bound, read back and closed): connecting to it is
// refused. Throws std::runtime_error if no port can be bound.
std::uint16_t closed_loopback_port();

}  // namespace payorch::bench
