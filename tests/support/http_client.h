#pragma once
// A small synchronous HTTP/1.1 client for integration tests (Boost.Beast underneath, every
// operation bounded by a timeout), and raw-socket helpers for the cases a well-behaved client
// cannot express: dropping the connection right after sending, or reading whatever comes back.
#include <boost/asio/io_context.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/json/value.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace payorch::test {

using Headers = std::vector<std::pair<std::string, std::string>>;

inline constexpr std::chrono::milliseconds default_http_timeout{10'000};

struct HttpResponse {
  unsigned status = 0;                         // 0: no response (see transport_error)
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  std::string transport_error;  // empty when a full response was read
  std::string write_error;      // the request could not be sent in full (the
                                // response may still have been read)

  // The header's value, or "" when absent (name is case-insensitive).
  std::string header(std::string_view name) const;
  // Parses the body as JSON; throws on a body that is not JSON.
  boost::json::value json() const;
  // For failure messages: status, headers and body (or the transport error).
  std::string describe() const;
};

// A keep-alive connection: requests go one after another on the same socket. A transport
// failure (reset, timeout, EOF) leaves the connection closed; later requests fail at once.
class HttpConnection {
public:
  explicit HttpConnection(std::uint16_t port,
                          std::chrono::milliseconds timeout = default_http_timeout);
  ~HttpConnection();
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  // Content-Length is set from `body`; Host is added. Never throws for transport failures.
  HttpResponse request(std::string_view method, std::string_view target,
                       const Headers& headers = {}, std::string body = {});
  bool is_open() const { return open_; }
  // Empty when connected.
  const std::string& connect_error() const { return connect_error_; }

private:
  std::uint16_t port_;
  std::chrono::milliseconds timeout_;
  boost::asio::io_context ioc_;
  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  bool open_ = false;
  std::string connect_error_;
};

// One request on a fresh connection, closed afterwards.
HttpResponse http_request(std::uint16_t port, std::string_view method, std::string_view target,
                          const Headers& headers = {}, std::string body = {},
                          std::chrono::milliseconds timeout = default_http_timeout);

// The bytes of an HTTP/1.1 request (Host and Content-Length added).
std::string raw_request(std::string_view method, std::string_view target, const Headers& headers,
                        std::string_view body);

// Connects, writes all of `bytes`, and closes at once without reading anything: the client
// that gives up right after sending. Throws std::runtime_error if it cannot connect or send.
void send_and_close(std::uint16_t port, std::string_view bytes);

// Connects and writes `bytes` while reading; returns what the server sent until it closed the
// connection, one complete response (by Content-Length) arrived, or `timeout` passed. Writing
// stops early (without error) if the server closes or resets; whatever was read is returned.
std::string send_and_read(std::uint16_t port, std::string_view bytes,
                          std::chrono::milliseconds timeout = default_http_timeout);

// What send_and_read_to_close() saw: the bytes, and whether the server closed the connection
// (`reset`: with a reset rather than a FIN) before the timeout.
struct RawExchange {
  std::string received;
  bool closed = false;
  bool reset = false;
};

// Connects and writes `bytes` while reading, until the server closes the connection or
// `timeout` passes: for checking that a connection is closed, and what came before.
RawExchange send_and_read_to_close(std::uint16_t port, std::string_view bytes,
                                   std::chrono::milliseconds timeout = default_http_timeout);

// The complete responses in `raw`, in order (a response to a HEAD request cannot be told
// apart here; tests do not send one).
std::vector<HttpResponse> raw_responses(std::string_view raw);

// A raw TCP connection to 127.0.0.1:port from `source`, any 127.x.y.z address: on one machine,
// a client address of its own (for per-client limits). Every read is bounded by a timeout.
class RawConnection {
public:
  // Throws std::runtime_error when it cannot bind or connect.
  explicit RawConnection(std::uint16_t port, std::string_view source = "127.0.0.1");
  ~RawConnection();
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  // False when the bytes could not all be sent (the server closed or reset the connection).
  bool send(std::string_view bytes);
  // The next complete response (by Content-Length); status 0 with transport_error set when the
  // connection closed or `timeout` passed first.
  HttpResponse read_response(std::chrono::milliseconds timeout = default_http_timeout);
  // True when the server closes (or resets) the connection within `timeout` (0: has closed
  // it); bytes that arrive meanwhile are kept for read_response().
  bool closed_within(std::chrono::milliseconds timeout);

private:
  // Waits up to `timeout` for bytes; false on EOF, reset or timeout (`closed_` tells which).
  bool receive_some(std::chrono::milliseconds timeout);

  int fd_ = -1;
  std::string received_;
  bool closed_ = false;
};

// The status code of a raw response ("HTTP/1.1 413 ..."), 0 if there is none.
unsigned raw_status(std::string_view raw_response);
// The body of a raw response (after the blank line), "" if there is none.
std::string raw_body(std::string_view raw_response);

}  // namespace payorch::test
