#include "bench/nodes_network.h"

#include <stdexcept>

namespace payorch::bench {
namespace {

std::vector<std::string> lab_parts(int max_nodes) {
  std::vector<std::string> parts{"db"};
  for (int i = 1; i <= max_nodes; ++i) parts.push_back("n" + std::to_string(i));
  return parts;
}

}  // namespace

NodesNetwork::NodesNetwork(const std::string& net_lab_script, int max_nodes,
                           std::chrono::microseconds delay)
    : lab_(net_lab_script, lab_parts(max_nodes)), delay_(delay) {}

std::vector<std::string> NodesNetwork::cluster_prefix() const {
  return lab_.command_in("db", {}, {"PG_CLUSTER_EXTRA_LISTEN=" + lab_.address("db"),
                                    "PG_CLUSTER_EXTRA_CLIENTS=127.77.0.0/16"});
}

std::string NodesNetwork::reach_server(std::uint16_t server_port) {
  server_port_ = server_port;
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(delay_);
  std::string why;
  netem_ = ms.count() > 0 && ms == delay_ && lab_.try_netem("db", ms, &why);
  description_ = netem_ ? "tc netem on the database's veth, userspace relays on the vendor's links"
                        : "userspace relays in the hub" + (why.empty() ? "" : " (" + why + ")");
  while (!description_.empty() && description_.back() == '\n') description_.pop_back();
  // This process's own connections: into the database's namespace, on its loopback.
  const std::uint16_t port = links_.add({"", "127.0.0.1", 0}, {lab_.netns("db"), "127.0.0.1", server_port},
                                        std::chrono::microseconds(0));
  return "127.0.0.1:" + std::to_string(port);
}

NodesNetwork::Node NodesNetwork::node(int i, std::uint16_t vendor_port) {
  if (server_port_ == 0) throw std::logic_error("NodesNetwork::node before reach_server");
  if (auto it = nodes_.find(i); it != nodes_.end()) return it->second;
  const std::string part = "n" + std::to_string(i);
  const std::string hub_end = lab_.hub_address(part);
  const std::uint16_t database = links_.add({lab_.hub(), hub_end, 0},
                                            {lab_.hub(), lab_.address("db"), server_port_},
                                            netem_ ? std::chrono::microseconds(0) : delay_);
  const std::uint16_t vendor = links_.add({lab_.hub(), hub_end, 0}, {"", "127.0.0.1", vendor_port}, delay_);
  Node node{.prefix = lab_.command_in(part, {}),
            .netns = lab_.netns(part),
            .address = lab_.address(part),
            .database = hub_end + ":" + std::to_string(database),
            .vendor_url = "http://" + hub_end + ":" + std::to_string(vendor)};
  return nodes_[i] = node;
}

}  // namespace payorch::bench
