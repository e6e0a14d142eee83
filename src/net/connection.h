#pragma once
// One transport connection to a vendor origin: TCP, TLS on top for https, and the read buffer
// that belongs to it (bytes read past one response stay with their connection).
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/beast/core/flat_buffer.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "net/counting_socket.h"

namespace payorch::net {

class Connection {
public:
  using TlsStream = boost::asio::ssl::stream<CountingSocket>;

  // `tls` null: plain TCP. Otherwise the context must outlive the connection.
  Connection(const boost::asio::any_io_executor& ex, boost::asio::ssl::context* tls);
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  bool is_tls() const { return tls_.has_value(); }
  boost::asio::ip::tcp::socket& socket();
  TlsStream& tls() { return *tls_; }
  boost::beast::flat_buffer& buffer() { return buffer_; }
  // Bytes the kernel accepted for sending on this connection, TLS handshake included.
  std::uint64_t bytes_written() const;

  // Runs `f` on the byte stream HTTP is spoken over (the TLS stream or the socket).
  template <class F>
  void with_stream(F&& f) {
    if (tls_)
      f(*tls_);
    else
      f(*plain_);
  }

  // Before the TLS handshake: sends SNI (DNS names only; RFC 6066 forbids IP literals) and
  // makes certificate verification check that the certificate names `host` (DNS name or IP).
  // Returns false and sets `error` when OpenSSL refuses.
  bool expect_peer_name(const std::string& host, std::string& error);

  // For an idle pooled connection: true when nothing is readable on the socket. An idle HTTP
  // connection must be silent; readable means the peer closed it (FIN or RST) or broke the
  // protocol, and the connection must not carry a request. Never blocks.
  bool looks_alive();

  void close();

  std::chrono::steady_clock::time_point idle_since{};

private:
  std::optional<CountingSocket> plain_;
  std::optional<TlsStream> tls_;
  boost::beast::flat_buffer buffer_;
};

}  // namespace payorch::net
