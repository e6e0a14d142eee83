#pragma once
// TCP relays that hold every chunk for a fixed delay in each direction before passing it on:
// a link with a round trip of twice the delay, where the kernel has no tc netem to delay a
// veth (support/net_lab.h). Each relay listens at one end (a namespace, an address, port 0 for
// a free one) and, for every connection it accepts, connects to the other end, possibly in
// another namespace. Every direction of every connection is its own timed queue: a chunk read
// at t is written at t + delay, in order, while later chunks are already being read; nothing
// is serialized across connections, and the delay is not paid twice when chunks follow each
// other closely. Delay 0 is a plain relay (e.g. into a namespace from this process's own).
//
// Real sockets and the bytes unchanged; nothing in payorch's code. All relays of one
// DelayLinks share one thread.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace payorch::test {

struct LinkEnd {
  std::string netns;  // "" for this process's own namespace
  std::string host;   // an IPv4 address
  std::uint16_t port = 0;
};

class DelayLinks {
public:
  DelayLinks();
  // Stops the thread and closes every relay and connection.
  ~DelayLinks();
  DelayLinks(const DelayLinks&) = delete;
  DelayLinks& operator=(const DelayLinks&) = delete;

  // A relay from `listen` to `upstream`, `delay` each way; returns the port it listens on.
  // Throws std::runtime_error when it cannot listen there.
  std::uint16_t add(const LinkEnd& listen, const LinkEnd& upstream,
                    std::chrono::microseconds delay);

  // Connections accepted and bytes relayed (both directions), over all relays.
  std::uint64_t connections() const;
  std::uint64_t bytes() const;

  struct Impl;

private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace payorch::test
