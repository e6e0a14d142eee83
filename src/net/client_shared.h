#pragma once
// State shared by an HttpClient and its requests in flight (internal to src/net).
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ssl/context.hpp>

#include <atomic>
#include <cstdint>
#include <memory>

#include "net/http_client.h"
#include "net/pool.h"

namespace payorch::net::detail {

struct ClientShared {
  ClientShared(boost::asio::any_io_executor ex, ClientOptions opts);

  const boost::asio::any_io_executor executor;
  const ClientOptions options;
  boost::asio::ssl::context tls;
  ConnectionPool pool;
  std::atomic<std::uint64_t> connections_opened{0};
  std::atomic<std::uint64_t> connections_reused{0};
};

// Starts one request (see HttpClient::request).
void start_exchange(std::shared_ptr<ClientShared> shared, Request req, HttpClient::Handler done);

}  // namespace payorch::net::detail
