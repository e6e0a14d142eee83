#pragma once
// Fake upstream servers for the vendor HTTP client and adapter tests, bound to 127.0.0.1:0 and
// run on their own thread.
//  - FakeServer: payorch's own HTTP server with a scripted answer per request (answer, drop
//    the connection, or hold the request unanswered), counting what it received.
//  - RawServer: one coroutine per accepted TCP connection, for what a well-behaved server
//    cannot do (garbage responses, resets, TLS).
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "config/config.h"
#include "http/server.h"
#include "support/process.h"  // eventually

namespace payorch::test {

struct Reply {
  enum What { respond, drop, hold } what = respond;
  http::Response response;

  static Reply with(http::Response r) { return Reply{respond, std::move(r)}; }
  // Closes the connection without an answer, after the whole request was read.
  static Reply drop_connection() { return Reply{drop, {}}; }
  // Never answers; the connection stays open until the server is destroyed.
  static Reply never_answer() { return Reply{hold, {}}; }
};

class FakeServer {
public:
  using Script = std::function<Reply(const http::Request&)>;

  explicit FakeServer(Script script, config::Server cfg = default_config());
  ~FakeServer();
  FakeServer(const FakeServer&) = delete;
  FakeServer& operator=(const FakeServer&) = delete;

  static config::Server default_config();

  std::uint16_t port() const { return server_->port(); }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port()); }
  std::size_t request_count() const;
  std::vector<http::Request> requests() const;  // copies, in arrival order
  std::size_t open_connections() const { return server_->open_sessions(); }
  // Waits (bounded) until the server has no open connection; false on timeout.
  bool wait_until_no_connections(std::chrono::milliseconds limit = std::chrono::seconds(2)) const;

private:
  class Handler;

  boost::asio::io_context ioc_;
  std::unique_ptr<Handler> handler_;
  std::unique_ptr<http::Server> server_;
  std::thread thread_;
};

class RawServer {
public:
  using Session = std::function<boost::asio::awaitable<void>(boost::asio::ip::tcp::socket)>;

  explicit RawServer(Session session);
  ~RawServer();
  RawServer(const RawServer&) = delete;
  RawServer& operator=(const RawServer&) = delete;

  std::uint16_t port() const { return port_; }
  std::size_t accepted() const { return accepted_.load(); }

private:
  boost::asio::awaitable<void> accept_loop();

  boost::asio::io_context ioc_;
  boost::asio::ip::tcp::acceptor acceptor_;
  Session session_;
  std::uint16_t port_ = 0;
  std::atomic<std::size_t> accepted_{0};
  std::thread thread_;
};

// A TCP port on 127.0.0.1 with nothing listening (bound, read back, released).
std::uint16_t unused_port();

}  // namespace payorch::test
