#include "support/http_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http.hpp>
#include <boost/json/parse.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace payorch::test {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using error_code = boost::system::error_code;

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// Runs one asynchronous operation to completion on `ioc`; the tcp_stream's expiry bounds it.
template <class Start>
error_code run_one(asio::io_context& ioc, Start&& start) {
  error_code result = asio::error::would_block;
  start([&result](error_code ec, auto&&...) { result = ec; });
  ioc.restart();
  ioc.run();
  return result;
}

// A connected, blocking TCP socket to 127.0.0.1:port; throws on failure.
int connect_loopback(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    const int err = errno;
    ::close(fd);
    throw std::runtime_error("connect to port " + std::to_string(port) + ": " + std::strerror(err));
  }
  return fd;
}

// True once `raw` holds a complete response with a Content-Length body.
bool complete_response(std::string_view raw) {
  const std::size_t end = raw.find("\r\n\r\n");
  if (end == std::string_view::npos) return false;
  const std::string head = lower(raw.substr(0, end));
  const std::size_t at = head.find("\r\ncontent-length:");
  if (at == std::string::npos) return false;
  const std::size_t length = std::stoul(head.substr(at + 17));
  return raw.size() >= end + 4 + length;
}

}  // namespace

std::string HttpResponse::header(std::string_view name) const {
  const auto it = headers.find(lower(name));
  return it == headers.end() ? std::string() : it->second;
}

boost::json::value HttpResponse::json() const { return boost::json::parse(body); }

std::string HttpResponse::describe() const {
  if (status == 0) return "no response: " + transport_error;
  std::string out = "HTTP " + std::to_string(status) +
                    (write_error.empty() ? "" : " (after a write error: " + write_error + ")") +
                    "\n";
  for (const auto& [name, value] : headers) out += name + ": " + value + "\n";
  return out + "\n" + body;
}

HttpConnection::HttpConnection(std::uint16_t port, std::chrono::milliseconds timeout)
    : port_(port), timeout_(timeout), stream_(ioc_) {
  const asio::ip::tcp::endpoint endpoint(asio::ip::address_v4::loopback(), port_);
  stream_.expires_after(timeout_);
  const error_code ec =
      run_one(ioc_, [&](auto handler) { stream_.async_connect(endpoint, std::move(handler)); });
  open_ = !ec;
  if (ec) connect_error_ = "connect to port " + std::to_string(port_) + ": " + ec.message();
}

HttpConnection::~HttpConnection() {
  error_code ignored;
  stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  stream_.socket().close(ignored);
}

HttpResponse HttpConnection::request(std::string_view method, std::string_view target,
                                     const Headers& headers, std::string body) {
  HttpResponse response;
  if (!open_) {
    response.transport_error = connect_error_.empty() ? "connection closed" : connect_error_;
    return response;
  }
  http::request<http::string_body> req;
  req.method_string(method);
  req.target(target);
  req.version(11);
  req.set(http::field::host, "127.0.0.1:" + std::to_string(port_));
  for (const auto& [name, value] : headers) req.insert(name, value);
  req.body() = std::move(body);
  req.prepare_payload();

  stream_.expires_after(timeout_);
  error_code ec =
      run_one(ioc_, [&](auto handler) { http::async_write(stream_, req, std::move(handler)); });
  // A server that answers early (413) and closes may reset the rest of our write: still try
  // to read what it sent.
  http::response_parser<http::string_body> parser;
  parser.body_limit(64 * 1024 * 1024);
  stream_.expires_after(timeout_);
  const error_code write_ec = ec;
  ec = run_one(
      ioc_, [&](auto handler) { http::async_read(stream_, buffer_, parser, std::move(handler)); });
  if (ec) {
    open_ = false;
    response.transport_error = (write_ec ? "write: " + write_ec.message() + "; " : std::string()) +
                               "read: " + ec.message();
    return response;
  }
  if (write_ec) response.write_error = write_ec.message();
  auto res = parser.release();
  response.status = res.result_int();
  for (const auto& field : res) response.headers[lower(field.name_string())] = field.value();
  response.body = std::move(res.body());
  if (write_ec || !res.keep_alive()) open_ = false;
  return response;
}

HttpResponse http_request(std::uint16_t port, std::string_view method, std::string_view target,
                          const Headers& headers, std::string body,
                          std::chrono::milliseconds timeout) {
  HttpConnection connection(port, timeout);
  return connection.request(method, target, headers, std::move(body));
}

std::string raw_request(std::string_view method, std::string_view target, const Headers& headers,
                        std::string_view body) {
  std::string out;
  out.append(method).append(" ").append(target).append(" HTTP/1.1\r\nHost: 127.0.0.1\r\n");
  for (const auto& [name, value] : headers) out += name + ": " + value + "\r\n";
  out += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  out.append(body);
  return out;
}

void send_and_close(std::uint16_t port, std::string_view bytes) {
  const int fd = connect_loopback(port);
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      throw std::runtime_error(std::string("send: ") + std::strerror(err));
    }
    sent += static_cast<std::size_t>(n);
  }
  ::close(fd);
}

namespace {

// Writes `bytes` while reading, until the server closes or resets the connection, `timeout`
// passes, or (with stop_at_response) one complete response arrived.
RawExchange exchange(std::uint16_t port, std::string_view bytes, std::chrono::milliseconds timeout,
                     bool stop_at_response) {
  const int fd = connect_loopback(port);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  RawExchange out;
  std::size_t sent = 0;
  bool can_write = true;
  char buffer[16 * 1024];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd, static_cast<short>(POLLIN | (can_write && sent < bytes.size() ? POLLOUT : 0)), 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) break;
    if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
      const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {  // closed or reset: return what we have
        out.closed = true;
        out.reset = n < 0;
        break;
      }
      out.received.append(buffer, static_cast<std::size_t>(n));
      if (stop_at_response && complete_response(out.received)) break;
      continue;
    }
    if (p.revents & POLLOUT) {
      const std::size_t chunk = std::min<std::size_t>(bytes.size() - sent, 64 * 1024);
      const ssize_t n = ::send(fd, bytes.data() + sent, chunk, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n < 0) {
        can_write = false;  // the server stopped reading; keep reading its answer
        continue;
      }
      sent += static_cast<std::size_t>(n);
    }
  }
  ::close(fd);
  return out;
}

}  // namespace

std::string send_and_read(std::uint16_t port, std::string_view bytes,
                          std::chrono::milliseconds timeout) {
  return exchange(port, bytes, timeout, true).received;
}

RawExchange send_and_read_to_close(std::uint16_t port, std::string_view bytes,
                                   std::chrono::milliseconds timeout) {
  return exchange(port, bytes, timeout, false);
}

std::vector<HttpResponse> raw_responses(std::string_view raw) {
  std::vector<HttpResponse> out;
  while (!raw.empty()) {
    http::response_parser<http::string_body> parser;
    parser.eager(true);
    error_code ec;
    const std::size_t used = parser.put(asio::buffer(raw.data(), raw.size()), ec);
    if (ec || !parser.is_done()) break;  // an incomplete or unreadable rest is not a response
    raw.remove_prefix(used);
    auto res = parser.release();
    HttpResponse response;
    response.status = res.result_int();
    for (const auto& field : res) response.headers[lower(field.name_string())] = field.value();
    response.body = std::move(res.body());
    out.push_back(std::move(response));
  }
  return out;
}

RawConnection::RawConnection(std::uint16_t port, std::string_view source) {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  sockaddr_in from{};
  from.sin_family = AF_INET;
  const std::string source_z(source);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::inet_pton(AF_INET, source_z.c_str(), &from.sin_addr) != 1 ||
      ::bind(fd_, reinterpret_cast<const sockaddr*>(&from), sizeof from) != 0 ||
      ::connect(fd_, reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0) {
    const int err = errno;
    ::close(fd_);
    throw std::runtime_error("connect from " + source_z + " to port " + std::to_string(port) +
                             ": " + std::strerror(err));
  }
}

RawConnection::~RawConnection() { ::close(fd_); }

bool RawConnection::send(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

bool RawConnection::receive_some(std::chrono::milliseconds timeout) {
  if (closed_) return false;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (bool once = true;; once = false) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 && !once) return false;
    pollfd p{fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::max<std::int64_t>(left.count(), 0)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return false;
    char buffer[16 * 1024];
    const ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      closed_ = true;
      return false;
    }
    received_.append(buffer, static_cast<std::size_t>(n));
    return true;
  }
}

HttpResponse RawConnection::read_response(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!complete_response(received_)) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (!receive_some(left)) {
      HttpResponse none;
      none.transport_error = closed_ ? "connection closed" : "timed out";
      return none;
    }
  }
  std::vector<HttpResponse> responses = raw_responses(received_);
  HttpResponse first = std::move(responses.at(0));
  const std::size_t end = received_.find("\r\n\r\n") + 4 + first.body.size();
  received_.erase(0, end);
  return first;
}

bool RawConnection::closed_within(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!closed_) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (!receive_some(left) && !closed_) return false;
  }
  return true;
}

unsigned raw_status(std::string_view raw) {
  if (raw.substr(0, 5) != "HTTP/") return 0;
  const std::size_t space = raw.find(' ');
  if (space == std::string_view::npos || raw.size() < space + 4) return 0;
  unsigned status = 0;
  for (char c : raw.substr(space + 1, 3)) {
    if (c < '0' || c > '9') return 0;
    status = status * 10 + static_cast<unsigned>(c - '0');
  }
  return status;
}

std::string raw_body(std::string_view raw) {
  const std::size_t end = raw.find("\r\n\r\n");
  return end == std::string_view::npos ? std::string() : std::string(raw.substr(end + 4));
}

}  // namespace payorch::test
