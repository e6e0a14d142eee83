#include "http/connection_slots.h"

#include <boost/asio/post.hpp>
#include <sys/ioctl.h>

#include <algorithm>

namespace payorch::http::detail {

using SteadyClock = std::chrono::steady_clock;

namespace {

// Whether bytes wait unread in the socket's receive queue.
bool bytes_received(int fd) {
  int n = 0;
  return ::ioctl(fd, FIONREAD, &n) == 0 && n > 0;
}

}  // namespace

void ServerConnection::begin_waiting() {
  waiting_since_.store(std::max<SteadyClock::rep>(1, SteadyClock::now().time_since_epoch().count()));
}

bool ServerConnection::end_waiting() {
  auto since = waiting_since_.load();
  while (since > 0 && !waiting_since_.compare_exchange_weak(since, not_waiting)) {
  }
  return since != evicted;
}

ConnectionSlots::ConnectionSlots(std::size_t max_connections, std::size_t reserved,
                                 std::size_t per_client)
    : max_connections_(std::max<std::size_t>(max_connections, 1)),
      reserved_(std::min(reserved, max_connections_ - 1)),
      per_client_(std::max<std::size_t>(per_client, 1)) {}

ConnectionSlots::Admission ConnectionSlots::admit(const Address& client) {
  std::vector<std::shared_ptr<ServerConnection>> held;  // released after the mutex
  std::shared_ptr<ServerConnection> evicted;
  Admission admission{Kind::ordinary, false};
  {
    std::lock_guard lock(mutex_);
    const auto mine = per_address_.find(client);
    if (mine != per_address_.end() && mine->second >= per_client_) {
      admission.at_limit = true;
      if (!evict_longest_waiting(&client, held, evicted)) admission.kind = Kind::refused;
    }
    // An eviction for the client's own limit has freed an ordinary slot as well.
    if (admission.kind != Kind::refused && !evicted && open_.load() >= max_connections_ - reserved_) {
      admission.at_limit = true;
      if (!evict_longest_waiting(nullptr, held, evicted))
        admission.kind = open_.load() < max_connections_ ? Kind::reserved : Kind::refused;
    }
    if (admission.kind != Kind::refused) {
      open_.fetch_add(1);
      ++per_address_[client];
    }
  }
  if (evicted)
    boost::asio::post(evicted->strand(), [evicted] { evicted->on_evicted(); });
  return admission;
}

bool ConnectionSlots::evict_longest_waiting(const Address* client,
                                            std::vector<std::shared_ptr<ServerConnection>>& held,
                                            std::shared_ptr<ServerConnection>& evicted) {
  struct Candidate {
    SteadyClock::rep since;
    const std::weak_ptr<ServerConnection>* connection;
  };
  std::vector<Candidate> waiting;
  // The raw pointers are safe to read here: a connection leaves the map (forget(), under
  // mutex_) before it is destroyed.
  for (const auto& [connection, weak] : connections_) {
    const SteadyClock::rep since = connection->waiting_since_.load();
    if (since > 0 && (client == nullptr || connection->client() == *client))
      waiting.push_back({since, &weak});
  }
  std::sort(waiting.begin(), waiting.end(),
            [](const Candidate& a, const Candidate& b) { return a.since < b.since; });
  // A candidate can stop waiting (or close) between the look and the claim: then the next one.
  for (const Candidate& c : waiting) {
    std::shared_ptr<ServerConnection> candidate = c.connection->lock();
    if (!candidate) continue;  // being destroyed
    // Its next request has begun to arrive, though its strand has not seen it yet: not idle.
    // (Its socket is open: it is released, under mutex_, before it is closed.)
    if (bytes_received(candidate->socket_fd_)) continue;
    held.push_back(candidate);
    SteadyClock::rep expected = c.since;
    if (!candidate->waiting_since_.compare_exchange_strong(expected, ServerConnection::evicted))
      continue;
    if (candidate->released_.exchange(true)) continue;  // closed already: it frees nothing
    give_back(*candidate);
    evicted = std::move(candidate);
    return true;
  }
  return false;
}

void ConnectionSlots::add(const std::shared_ptr<ServerConnection>& connection) {
  std::lock_guard lock(mutex_);
  connections_.emplace(connection.get(), connection);
}

void ConnectionSlots::release(ServerConnection& connection) {
  connection.end_waiting();
  if (connection.released_.exchange(true)) return;
  std::lock_guard lock(mutex_);
  give_back(connection);
}

void ConnectionSlots::retake(ServerConnection& connection) {
  std::lock_guard lock(mutex_);
  if (!connection.released_.exchange(false)) return;
  open_.fetch_add(1);
  ++per_address_[connection.client()];
}

void ConnectionSlots::give_back(const ServerConnection& connection) {
  open_.fetch_sub(1);
  const auto it = per_address_.find(connection.client());
  if (it != per_address_.end() && --it->second == 0) per_address_.erase(it);
}

void ConnectionSlots::forget(const ServerConnection* connection) {
  std::lock_guard lock(mutex_);
  connections_.erase(connection);
}

std::size_t ConnectionSlots::waiting() {
  std::lock_guard lock(mutex_);
  return static_cast<std::size_t>(
      std::count_if(connections_.begin(), connections_.end(),
                    [](const auto& entry) { return entry.first->waiting_since_.load() > 0; }));
}

std::vector<std::shared_ptr<ServerConnection>> ConnectionSlots::live() {
  std::vector<std::shared_ptr<ServerConnection>> out;
  std::lock_guard lock(mutex_);
  out.reserve(connections_.size());
  for (const auto& entry : connections_)
    if (auto connection = entry.second.lock()) out.push_back(std::move(connection));
  return out;
}

}  // namespace payorch::http::detail
