#pragma once
// Idle keep-alive connections, a few per origin. Thread-safe. A connection is in the pool only
// between requests: after a complete response on a connection both sides agreed to keep open.
#include <chrono>
#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "net/connection.h"

namespace payorch::net {

struct PoolLimits {
  std::size_t max_idle_per_origin = 4;
  // Older idle connections are closed rather than reused: servers close idle connections after
  // their own timeout, and reusing one just as the server closes it makes a request ambiguous.
  std::chrono::milliseconds max_idle_age{15'000};
  // Probe a pooled connection (Connection::looks_alive) before reusing it. On by default; off
  // only in tests that exercise a dead connection found on write.
  bool probe_before_reuse = true;
};

class ConnectionPool {
public:
  explicit ConnectionPool(PoolLimits limits) : limits_(limits) {}

  // The most recently used idle connection to `origin_key` that is young enough and, when
  // probing, looks alive; nullptr if none. Others found on the way are closed and dropped.
  std::unique_ptr<Connection> take(const std::string& origin_key,
                                   std::chrono::steady_clock::time_point now);
  // Keeps `conn` for reuse (closing the oldest one over the limit).
  void give_back(const std::string& origin_key, std::unique_ptr<Connection> conn,
                 std::chrono::steady_clock::time_point now);
  std::size_t idle_count() const;

private:
  const PoolLimits limits_;
  mutable std::mutex mutex_;
  std::map<std::string, std::deque<std::unique_ptr<Connection>>> idle_;  // newest at the back
};

}  // namespace payorch::net
