#include "support/net_lab.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "store/postgres/connection.h"
#include "support/process.h"

namespace payorch::test {
namespace {

using namespace std::chrono_literals;

// iproute2's ip, by its full path (children are started with execve).
std::string ip_program() {
  for (const char* path : {"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"})
    if (::access(path, X_OK) == 0) return path;
  return "";
}

CommandResult run_script(const std::vector<std::string>& argv) {
  const TempDir scratch("payorch-net-lab");
  return run_to_completion(argv, scratch.path() + "/out", 60s);
}

}  // namespace

NetLab::NetLab(const std::string& script, std::vector<std::string> parts)
    : script_(script), prefix_("po" + std::to_string(::getpid())), parts_(std::move(parts)) {
  std::vector<std::string> argv{script_, "up", prefix_};
  argv.insert(argv.end(), parts_.begin(), parts_.end());
  argv.insert(argv.end(), {"--watch", std::to_string(::getpid())});
  const CommandResult r = run_script(argv);
  if (!r.status.exited || r.status.code != 0) {
    run_script({script_, "down", prefix_});
    throw std::runtime_error("tools/net-lab up " + r.status.describe() + ": " + r.output);
  }
}

NetLab::~NetLab() {
  // The watcher removes the lab once this process has exited, if this fails.
  run_script({script_, "down", prefix_});
}

std::size_t NetLab::index(const std::string& part) const {
  const auto it = std::find(parts_.begin(), parts_.end(), part);
  if (it == parts_.end()) throw std::invalid_argument("the net lab has no part " + part);
  return static_cast<std::size_t>(it - parts_.begin()) + 1;
}

std::string NetLab::address(const std::string& part) const {
  return "127.77." + std::to_string(index(part)) + ".2";
}

std::string NetLab::hub_address(const std::string& part) const {
  return "127.77." + std::to_string(index(part)) + ".1";
}

std::vector<std::string> NetLab::command_in(const std::string& part,
                                            const std::vector<std::string>& argv,
                                            const std::vector<std::string>& env) const {
  std::vector<std::string> out{ip_program(), "netns", "exec", netns(part)};
  if (!env.empty()) {
    out.push_back("/usr/bin/env");
    out.insert(out.end(), env.begin(), env.end());
  }
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

bool NetLab::try_netem(const std::string& part, std::chrono::milliseconds delay, std::string* why) {
  index(part);
  const CommandResult r = run_script({script_, "netem", prefix_, part, std::to_string(delay.count())});
  if (r.status.exited && r.status.code == 0) return true;
  if (r.status.exited && r.status.code == 3) {
    if (why != nullptr) {
      *why = r.output;
      while (!why->empty() && (why->back() == '\n' || why->back() == ' ')) why->pop_back();
    }
    return false;
  }
  throw std::runtime_error("tools/net-lab netem " + r.status.describe() + ": " + r.output);
}

bool netns_available(std::string* why) {
  auto no = [why](const std::string& reason) {
    if (why != nullptr) *why = reason;
    return false;
  };
  if (::geteuid() != 0) return no("not root (ip netns add needs CAP_SYS_ADMIN)");
  const std::string ip = ip_program();
  if (ip.empty()) return no("iproute2 is not installed (no ip)");
  const std::string name = "po" + std::to_string(::getpid()) + "-probe";
  const CommandResult r = run_script({ip, "netns", "add", name});
  run_script({ip, "netns", "del", name});
  if (!r.status.exited || r.status.code != 0) return no("ip netns add failed: " + r.output);
  return true;
}

void enter_netns(const std::string& name) {
  const std::string path = "/run/netns/" + name;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("open " + path + ": " + std::strerror(errno));
  const int rc = ::setns(fd, CLONE_NEWNET);
  const int err = errno;
  ::close(fd);
  if (rc != 0) throw std::runtime_error("setns " + path + ": " + std::strerror(err));
}

double select_one_round_trip_ms(const std::string& netns, const std::string& url, int rounds) {
  return in_netns(netns, [&] {
    store::pg::Connection conn(url);
    conn.exec("SELECT 1");  // prepared by this first one: the timed rounds only execute it
    std::vector<double> ms;
    for (int i = 0; i < rounds; ++i) {
      const auto start = std::chrono::steady_clock::now();
      conn.exec("SELECT 1");
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(ms.begin(), ms.end());
    return ms.at(ms.size() / 2);
  });
}

}  // namespace payorch::test
