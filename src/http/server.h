#pragma once
// The HTTP/1.1 server: owns sockets, parsers, limits and timeouts, and nothing else. Requests
// are handed to a Handler, which answers through a Responder (possibly later, from another
// thread: an intake answers only after its commit).
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "config/config.h"
#include "http/problem.h"

namespace payorch::http {

// Call exactly once per request. Thread-safe: the session re-posts onto its own strand. A
// second call, or a call after the connection died, is dropped. The Responder keeps its
// connection open until it is called or destroyed; call or destroy it before the io_context is
// destroyed. The server sets the response's version and keep-alive (Connection: close when the
// request asked for it or the server is stopping), and Content-Length if no framing is set.
using Responder = std::function<void(Response)>;

// handle() and screen() run on the connection's strand (an io_context thread): they must not
// block.
class Handler {
public:
  virtual ~Handler() = default;
  virtual void handle(Request&& req, Responder done) = 0;
  // Called with each request's header before its body is read (and before a 100 Continue). An
  // answer refuses the request: it is sent with Connection: close, handle() is not called, and
  // the body is discarded with the rest of the connection's input — for a request that needs a
  // credential and lacks one, so that no body is read on behalf of an unknown client. Default:
  // nothing is refused.
  virtual std::optional<Response> screen(const Request& /*header*/) { return std::nullopt; }
  // Whether the request is an operator's (health, readiness, status, metrics, admin): only
  // those are served on the connections config::Server::reserved_connections keeps. Default: no.
  virtual bool is_operator_request(const Request& /*header*/) const { return false; }
};

// Limits and timeouts come from config::Server: body over max_body_bytes → 413 (the rest of the
// body is read and discarded before closing, so the client sees it), headers over
// max_header_bytes → 431, malformed or ambiguously framed (check_request_header) → 400 or 501,
// each then closed; half a request after read_timeout → 408; idle keep-alive connections close
// after idle_timeout. `handler` must outlive every connection, i.e. the io_context's run.
//
// Connection limits. A connection waiting for a request with no byte of it received (idle
// between requests, or new and silent) can be evicted; one in the middle of a request, its
// handling or its response never is. A new connection from a client address that holds
// max_connections_per_client evicts that address's longest-idle connection, or is closed at
// once. Past max_connections − reserved_connections, a new connection evicts the longest-idle
// connection of all; without one it takes one of the reserved connections, which serves one
// operator request (Handler::is_operator_request; any other is answered 503
// too-many-connections) and closes; with those gone too, it is closed at once. An evicted
// connection whose next request has begun to arrive answers it, with Connection: close.
//
// With cfg.tls the listener speaks only HTTPS (TLS 1.2 or 1.3, forward-secret AEAD ciphers),
// with the same limits; the handshake must finish within the first request's read_timeout.
// Plain HTTP sent to it is answered with a cleartext 400 bad-request and closed.
class Server {
public:
  // Throws std::runtime_error when cfg.tls holds a certificate or key OpenSSL cannot use.
  Server(boost::asio::io_context& ioc, const config::Server& cfg, Handler& handler);
  // Stops accepting (as stop_accepting()); open connections live on in the io_context.
  ~Server();

  // Binds and listens; throws std::system_error with a clear message on failure.
  void start();
  // The bound port (after start()); useful with listen port 0.
  std::uint16_t port() const;
  // Stops accepting new connections; any thread. The listening socket is closed before this
  // returns (new connections are refused). Idle keep-alive connections are closed; requests in
  // flight finish and their connections close after the response.
  void stop_accepting();
  // New connections use `tls` (a certificate rotated by a reload); open ones keep the context
  // they started with. Any thread. Throws std::runtime_error, changing nothing, when OpenSSL
  // cannot use the files, or when the listener speaks plain HTTP.
  void replace_tls(const config::Tls& tls);
  // Number of open connections (accepted and not yet closed; an evicted one is not counted
  // while it answers the request it had begun).
  std::size_t open_sessions() const;
  // Number of open connections waiting for a request with no byte of it received: the ones a
  // limit can evict.
  std::size_t waiting_sessions() const;

private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace payorch::http
