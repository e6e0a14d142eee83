#pragma once
// The network of the nodes mode's --netns (docs/performance.md, "A network between the
// parts"): PostgreSQL and every payorchd node in a network namespace of its own
// (tests/support/net_lab.h, tools/net-lab), each joined to a hub namespace by a veth pair.
// Every node reaches the database and the demo vendor through links that hold each chunk
// `delay` in each direction: tc netem on the database's veth where the kernel has it, else
// userspace relays in the hub (tests/support/delay_link.h); the vendor, which stays on this
// machine's loopback beside the SQLite daemon, always through a relay. The benchmark's own
// connections (the HTTP load, from the hub; PostgreSQL's baselines and checks, through a relay
// without delay into the database's namespace) are not delayed: they are not links between
// the parts.
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "support/delay_link.h"
#include "support/net_lab.h"

namespace payorch::bench {

class NodesNetwork {
public:
  // The lab: the database and `max_nodes` nodes. Throws std::runtime_error when namespaces
  // cannot be made (not root, no iproute2).
  NodesNetwork(const std::string& net_lab_script, int max_nodes, std::chrono::microseconds delay);

  // tools/pg-cluster runs after this: in the database's namespace, listening on its link too.
  std::vector<std::string> cluster_prefix() const;
  // Once the server listens on `server_port`: chooses netem or the relays for the database's
  // links, and returns the "127.0.0.1:PORT" of an undelayed relay through which this process
  // reaches the server.
  std::string reach_server(std::uint16_t server_port);

  // Node i (from 1): the command prefix that runs it in its namespace, the address it listens
  // on, and the ends of its links.
  struct Node {
    std::vector<std::string> prefix;
    std::string netns;
    std::string address;
    std::string database;  // "HOST:PORT" of its database link
    std::string vendor_url;
  };
  Node node(int i, std::uint16_t vendor_port);

  // The hub: where the load's clients connect from.
  std::string hub() const { return lab_.hub(); }
  // What delays the links: "tc netem ..." or "userspace relays in the hub (why not netem)".
  const std::string& description() const { return description_; }
  std::chrono::microseconds delay() const { return delay_; }

private:
  test::NetLab lab_;
  test::DelayLinks links_;
  std::chrono::microseconds delay_;
  std::uint16_t server_port_ = 0;
  bool netem_ = false;
  std::string description_;
  std::map<int, Node> nodes_;  // links made once per node, kept for every run
};

}  // namespace payorch::bench
