#pragma once
// A blocking HTTPS/1.1 client for tests of payorchd's TLS listener: it trusts exactly one
// certificate (the test's self-signed one), checks that it names 127.0.0.1, and bounds every
// step by a deadline so that a server bug fails a test instead of hanging it.
#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace payorch::test {

struct TlsClientOptions {
  std::string trusted_cert_pem;  // the only certificate (or CA) the client accepts
  // Protocol versions the client offers (OpenSSL's TLS1_2_VERSION, ...); 0 = library default.
  int min_version = 0;
  int max_version = 0;
  std::chrono::milliseconds timeout{5'000};  // per step
};

class TlsClient {
 public:
  using Request = boost::beast::http::request<boost::beast::http::string_body>;
  using Response = boost::beast::http::response<boost::beast::http::string_body>;
  using error_code = boost::system::error_code;

  // Connects to 127.0.0.1:port (see connect_error()); the handshake is a separate step.
  TlsClient(std::uint16_t port, TlsClientOptions options);
  TlsClient(const TlsClient&) = delete;
  TlsClient& operator=(const TlsClient&) = delete;

  const error_code& connect_error() const { return connect_error_; }
  error_code handshake();
  // The negotiated protocol ("TLSv1.3"), after a handshake.
  std::string protocol();

  // Host is set if absent; Content-Length from the body.
  error_code send(Request req);
  // Bytes over TLS as they are (for partial or malformed requests).
  error_code send_raw(const std::string& bytes);
  // One response; nullopt with `error` set when none could be read.
  std::optional<Response> receive(error_code& error);
  // What the next read returns when no more response bytes are expected (eof on a clean
  // close_notify); `got` is how many bytes came instead.
  error_code next_read_error(std::size_t& got);
  // The TCP socket, under TLS (raw writes, or closing it).
  boost::beast::tcp_stream& tcp();

 private:
  template <class Start>
  error_code run(Start start);

  TlsClientOptions options_;
  boost::asio::io_context ioc_;
  boost::asio::ssl::context ctx_;
  boost::beast::ssl_stream<boost::beast::tcp_stream> stream_;
  boost::beast::flat_buffer buffer_;
  error_code connect_error_;
};

// One request on a fresh HTTPS connection: handshake, send, receive. nullopt when any step
// failed; `error` then says which and why.
std::optional<TlsClient::Response> https_request(std::uint16_t port, TlsClientOptions options,
                                                 TlsClient::Request req, std::string& error);

}  // namespace payorch::test
