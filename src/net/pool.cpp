#include "net/pool.h"

#include <utility>

namespace payorch::net {

std::unique_ptr<Connection> ConnectionPool::take(const std::string& origin_key,
                                                 std::chrono::steady_clock::time_point now) {
  std::lock_guard lock(mutex_);
  const auto it = idle_.find(origin_key);
  if (it == idle_.end()) return nullptr;
  auto& idle = it->second;
  std::unique_ptr<Connection> found;
  while (!idle.empty() && !found) {
    std::unique_ptr<Connection> conn = std::move(idle.back());
    idle.pop_back();
    const bool young = now - conn->idle_since <= limits_.max_idle_age;
    if (young && (!limits_.probe_before_reuse || conn->looks_alive()))
      found = std::move(conn);
    else
      conn->close();
  }
  if (idle.empty()) idle_.erase(it);
  return found;
}

void ConnectionPool::give_back(const std::string& origin_key, std::unique_ptr<Connection> conn,
                               std::chrono::steady_clock::time_point now) {
  if (limits_.max_idle_per_origin == 0) return conn->close();
  conn->idle_since = now;
  std::lock_guard lock(mutex_);
  auto& idle = idle_[origin_key];
  idle.push_back(std::move(conn));
  while (idle.size() > limits_.max_idle_per_origin) {
    idle.front()->close();
    idle.pop_front();
  }
}

std::size_t ConnectionPool::idle_count() const {
  std::lock_guard lock(mutex_);
  std::size_t n = 0;
  for (const auto& entry : idle_) n += entry.second.size();
  return n;
}

}  // namespace payorch::net
