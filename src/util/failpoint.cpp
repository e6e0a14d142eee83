#include "util/failpoint.h"

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <unistd.h>
#include <vector>

#include "util/log.h"

namespace payorch::failpoint {
namespace {

struct Point {
  std::string name;
  enum class Action { error, crash, term } action = Action::error;
  long remaining = -1;  // -1: unlimited
};

std::atomic<bool> any_armed{false};
std::mutex mu;
std::vector<Point> points;

}  // namespace

void arm(std::string_view spec) {
  std::vector<Point> parsed;
  while (!spec.empty()) {
    auto semi = spec.find(';');
    std::string_view entry = spec.substr(0, semi);
    spec = semi == std::string_view::npos ? std::string_view{} : spec.substr(semi + 1);
    if (entry.empty()) continue;
    auto eq = entry.find('=');
    if (eq == std::string_view::npos || eq == 0)
      throw std::invalid_argument("failpoint entry '" + std::string(entry) + "': expected name=action[:times]");
    Point p;
    p.name = std::string(entry.substr(0, eq));
    std::string_view action = entry.substr(eq + 1);
    auto colon = action.find(':');
    if (colon != std::string_view::npos) {
      std::string times(action.substr(colon + 1));
      char* end = nullptr;
      long n = std::strtol(times.c_str(), &end, 10);
      if (times.empty() || *end != '\0' || n < 1)
        throw std::invalid_argument("failpoint entry '" + std::string(entry) + "': bad times");
      p.remaining = n;
      action = action.substr(0, colon);
    }
    if (action == "crash") p.action = Point::Action::crash;
    else if (action == "term") p.action = Point::Action::term;
    else if (action != "error")
      throw std::invalid_argument("failpoint entry '" + std::string(entry) + "': action must be error, crash or term");
    parsed.push_back(std::move(p));
  }
  std::lock_guard lock(mu);
  points = std::move(parsed);
  any_armed.store(!points.empty(), std::memory_order_relaxed);
}

void arm_from_environment() {
  if (const char* spec = std::getenv("PAYORCH_FAILPOINTS")) arm(spec);
}

void disarm_all() { arm(""); }

bool hit(std::string_view name) {
  if (!any_armed.load(std::memory_order_relaxed)) return false;
  std::lock_guard lock(mu);
  for (auto& p : points) {
    if (p.name != name || p.remaining == 0) continue;
    if (p.remaining > 0) --p.remaining;
    if (p.action == Point::Action::term) {
      log::warn("failpoint.term", "sending SIGTERM (test fault injection)", {{"failpoint", p.name}});
      ::kill(::getpid(), SIGTERM);
      std::this_thread::sleep_for(std::chrono::seconds(1));
      return false;
    }
    if (p.action == Point::Action::crash) {
      // log::write is a single write(2) to stderr: the line is out before the signal.
      log::alert("failpoint.crash", "crashing (test fault injection)", {{"failpoint", p.name}});
      ::kill(::getpid(), SIGKILL);
      std::_Exit(137);
    }
    return true;
  }
  return false;
}

}  // namespace payorch::failpoint
