#pragma once
// Network namespaces for a test or benchmark run (tools/net-lab): a hub namespace and one
// namespace per part (a payorchd node, the PostgreSQL server), each part joined to the hub by
// its own veth pair, with addresses in 127.77.0.0/16 that exist only inside the lab. Made when
// constructed, removed when destroyed, and by the script's watcher if this process dies first.
// Needs root and iproute2.
//
// A thread can enter one of the lab's namespaces (enter_netns): the sockets it makes from then
// on live there, wherever they are used later. This is how the relays of support/delay_link.h
// listen in the hub and connect into a part, and how a test talks to a node from the hub.
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace payorch::test {

class NetLab {
public:
  // `script` is tools/net-lab; `parts` are lower-case names ("db", "n1", ...). The lab's prefix
  // holds this process's pid, so that parallel runs never share a name. Throws
  // std::runtime_error with the script's reason when the lab cannot be made.
  NetLab(const std::string& script, std::vector<std::string> parts);
  ~NetLab();
  NetLab(const NetLab&) = delete;
  NetLab& operator=(const NetLab&) = delete;

  // The namespace of `part`, and of the hub.
  std::string netns(const std::string& part) const { return prefix_ + "-" + part; }
  std::string hub() const { return prefix_ + "-hub"; }
  // The part's address on its link (127.77.i.2), and the hub's end of that link (127.77.i.1).
  std::string address(const std::string& part) const;
  std::string hub_address(const std::string& part) const;
  // `argv` run inside the part's namespace: ip netns exec NS env VAR=VALUE... argv.
  std::vector<std::string> command_in(const std::string& part, const std::vector<std::string>& argv,
                                      const std::vector<std::string>& env = {}) const;
  // `delay` of tc netem on both ends of the part's link. False when the kernel has no
  // sch_netem (`why` then says so); throws on any other failure.
  bool try_netem(const std::string& part, std::chrono::milliseconds delay, std::string* why);

private:
  std::size_t index(const std::string& part) const;

  std::string script_;
  std::string prefix_;
  std::vector<std::string> parts_;
};

// Whether this process may make network namespaces (root, iproute2, `ip netns add` works);
// `why` says what is missing.
bool netns_available(std::string* why);

// Moves the calling thread into the named namespace (/run/netns/NAME). Throws
// std::runtime_error on failure.
void enter_netns(const std::string& name);

// Runs `fn` on a thread of its own inside namespace `name` ("" runs it in this one) and
// returns its result (or rethrows its exception).
template <class Fn>
auto in_netns(const std::string& name, Fn fn) -> decltype(fn()) {
  if (name.empty()) return fn();
  std::packaged_task<decltype(fn())()> task([&name, &fn] {
    enter_netns(name);
    return fn();
  });
  auto result = task.get_future();
  std::thread(std::move(task)).join();
  return result.get();
}

// The median of `rounds` round trips of SELECT 1 on one PostgreSQL connection to `url`, made
// from namespace `netns` ("" for this process's own), in milliseconds: what a link between a
// node and its database costs each statement.
double select_one_round_trip_ms(const std::string& netns, const std::string& url, int rounds);

}  // namespace payorch::test
