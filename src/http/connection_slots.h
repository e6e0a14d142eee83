#pragma once
// The HTTP server's connection slots: how many connections are open, overall and per client
// address, and which connection gives way at a limit (the rules are in server.h). Internal to
// src/http; thread-safe.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/address.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace payorch::http::detail {

// What ConnectionSlots needs from a connection. Its strand-side methods run on strand().
class ServerConnection {
public:
  // `socket_fd`: the connection's socket, open until release() (close it only after that).
  ServerConnection(boost::asio::ip::address client, int socket_fd)
      : client_(std::move(client)), socket_fd_(socket_fd) {}
  virtual ~ServerConnection() = default;
  ServerConnection(const ServerConnection&) = delete;
  ServerConnection& operator=(const ServerConnection&) = delete;

  // Immutable after construction, so any thread may read them.
  virtual const boost::asio::any_io_executor& strand() const = 0;
  const boost::asio::ip::address& client() const { return client_; }
  // On the strand: the server stopped accepting.
  virtual void on_stop() = 0;
  // On the strand, after ConnectionSlots took this connection's slot: close, unless a request
  // has begun to arrive (then answer it, and close).
  virtual void on_evicted() = 0;

protected:
  // On the strand: the connection now waits for a request and has received no byte of it, so
  // it may be evicted.
  void begin_waiting();
  // On the strand: it waits no more (a request began, or it closes). False when it was
  // evicted meanwhile.
  bool end_waiting();

private:
  friend class ConnectionSlots;
  static constexpr std::chrono::steady_clock::rep not_waiting = 0;
  static constexpr std::chrono::steady_clock::rep evicted = -1;

  const boost::asio::ip::address client_;
  const int socket_fd_;
  // When it began waiting (steady clock ticks, > 0), not_waiting, or evicted.
  std::atomic<std::chrono::steady_clock::rep> waiting_since_{not_waiting};
  std::atomic<bool> released_{false};
};

class ConnectionSlots {
public:
  // `reserved` is capped at max_connections − 1.
  ConnectionSlots(std::size_t max_connections, std::size_t reserved, std::size_t per_client);

  enum class Kind { ordinary, reserved, refused };
  struct Admission {
    Kind kind;
    bool at_limit;  // a limit was reached: a connection was evicted, or the reserve used, or refused
  };
  // Takes a slot for a new connection from `client`, evicting the longest-idle connection (of
  // that client, or of all) when a limit says so. Nothing is taken when refused. A taken slot
  // belongs to the connection registered next with add(), and comes back with release().
  Admission admit(const boost::asio::ip::address& client);
  void add(const std::shared_ptr<ServerConnection>& connection);
  // Gives the connection's slot back; only the first call (or an eviction) counts. Call it
  // before closing the connection's socket.
  void release(ServerConnection& connection);
  // For an evicted connection whose request began to arrive just as it was evicted: it holds a
  // slot again (over the limit, for the one request it answers).
  void retake(ServerConnection& connection);
  // From the connection's destructor.
  void forget(const ServerConnection* connection);

  std::size_t open() const { return open_.load(); }
  // How many connections wait for a request and could be evicted now.
  std::size_t waiting();
  // The connections registered and still alive.
  std::vector<std::shared_ptr<ServerConnection>> live();

private:
  using Address = boost::asio::ip::address;
  // Requires mutex_. Takes the slot of the connection of `client` (any when null) that has
  // waited longest and has no byte of a request in its socket; false when none does. The connections looked at are put in `held`, to be
  // released (and the evicted one told) after the mutex is.
  bool evict_longest_waiting(const Address* client,
                             std::vector<std::shared_ptr<ServerConnection>>& held,
                             std::shared_ptr<ServerConnection>& evicted);
  void give_back(const ServerConnection& connection);  // requires mutex_

  const std::size_t max_connections_;
  const std::size_t reserved_;
  const std::size_t per_client_;
  std::mutex mutex_;
  std::atomic<std::size_t> open_{0};  // written under mutex_
  std::unordered_map<Address, std::size_t> per_address_;
  std::unordered_map<const ServerConnection*, std::weak_ptr<ServerConnection>> connections_;
};

}  // namespace payorch::http::detail
