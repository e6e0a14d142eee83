#include "bench/daemon_config.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "bench/http_load.h"

namespace payorch::bench {
namespace {

std::string yaml_quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string daemon_config(const DaemonSetup& s) {
  const std::string database =
      s.postgres_url.empty()
          ? "{driver: sqlite, path: " + yaml_quoted(s.db_path) + "}"
          : "{driver: postgres, url: " + yaml_quoted(s.postgres_url) +
                ", pool_size: " + std::to_string(s.pool_size) + "}";
  const std::string node_id = s.node_id.empty() ? "" : "node_id: " + yaml_quoted(s.node_id) + ", ";
  return "server: {listen: \"" + s.listen_host + ":0\"}\n"
         "database: " + database + "\n"
         "admin: {token: \"bench-admin-token-123\"}\n"
         "tenants:\n"
         "  - {id: " + std::string(bench_tenant) + ", token: \"" + bench_tenant_token + "\"}\n"
         "providers:\n"
         "  - name: sim\n"
         "    adapter: sim\n"
         "    base_url: " + yaml_quoted(s.vendor_url) + "\n"
         "    api_key: \"" + bench_vendor_api_key + "\"\n"
         "    timeouts: {connect: 1s, request: 5s}\n"
         "    contract: {key_retention: 24h, recovery: lookup, not_found_final_after: 30s}\n"
         "    retry: {max_attempts: 5, initial_backoff: 1s, max_backoff: 30s, give_up_after: 1h}\n"
         "    risk: {max_unknown_count: 1000000000, max_unknown_amount_minor: 1000000000000000}\n"
         "    callback: {secret: \"bench-callback-secret\", tolerance: 5m, retry_horizon: 24h}\n"
         "routing: {default_provider: sim}\n"
         "engine: {" + node_id + "workers: " + std::to_string(s.workers) + ", lease: 30s, poll_interval: 500ms}\n";
}

std::uint16_t closed_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  const int err = errno;
  ::close(fd);
  if (!ok) throw std::runtime_error(std::string("bind 127.0.0.1:0: ") + std::strerror(err));
  return ntohs(addr.sin_port);
}

}  // namespace payorch::bench
