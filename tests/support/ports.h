#pragma once
// Loopback ports for tests that need an address before a process is started.
#include <cstdint>

namespace payorch::test {

// A TCP port on 127.0.0.1 that is bound but not listening while this object lives: a connect
// to it is refused at once (the "certainly not sent" case), and nobody else can take the port.
class RefusingPort {
public:
  RefusingPort();  // throws std::runtime_error when no port can be bound
  ~RefusingPort();
  RefusingPort(const RefusingPort&) = delete;
  RefusingPort& operator=(const RefusingPort&) = delete;
  std::uint16_t port() const { return port_; }

private:
  int fd_ = -1;
  std::uint16_t port_ = 0;
};

// A port that was free a moment ago (bound, then released): for a daemon whose address another
// process must know before the daemon starts.
inline std::uint16_t free_port() { return RefusingPort().port(); }

}  // namespace payorch::test
