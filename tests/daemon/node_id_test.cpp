// A node's id: configured, or made from the host name so that a default daemon has one that
// stays the same across its restarts.
#include <doctest/doctest.h>

#include <unistd.h>

#include "daemon/startup.h"

using namespace payorch;

TEST_CASE("node id: a host name becomes one of [a-z0-9_-], at most 64 characters") {
  CHECK(daemon::node_id_from_host("pay-01") == "pay-01");
  CHECK(daemon::node_id_from_host("Pay01.eu-west.internal") == "pay01-eu-west-internal");
  CHECK(daemon::node_id_from_host("") == "payorchd");
  CHECK(daemon::node_id_from_host(std::string(80, 'a')) == std::string(64, 'a'));
  CHECK(daemon::node_id_from_host("a b\tc") == "a-b-c");
}

TEST_CASE("node id: the configured one, else the host name's") {
  config::Engine engine;
  engine.node_id = "node-a";
  CHECK(daemon::node_id(engine) == "node-a");
  engine.node_id.clear();
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  CHECK(daemon::node_id(engine) == daemon::node_id_from_host(host));
}
