#pragma once
// The sim's HTTP/1.1 listener, on Boost.Beast: plain HTTP with keep-alive, one request at a
// time per connection, each connection on its own strand. It owns sockets, parsers, limits and
// timeouts; what a request means is the RequestHandler's business.
//
// Limits: a body over 64 KiB is answered 413, headers over 16 KiB 431, a malformed request
// 400 (each with {"error":{"type":"invalid_request"}}, then the connection closes). A request
// must arrive whole within 10 s of its first byte, and an answer be taken within 10 s, or the
// connection closes; a keep-alive connection idle for 60 s closes. Past 1,024 open connections
// a new one is closed at once.
#include <boost/asio/io_context.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace payorch::vendor_sim {

namespace beast_http = boost::beast::http;
using Request = beast_http::request<beast_http::string_body>;
using Response = beast_http::response<beast_http::string_body>;

// Answers one request; call it at most once, from any thread. The connection waits for it:
// destroying it unanswered closes the connection without an answer (how commit_then_hang
// hangs up). The listener sets the version, keep-alive and Content-Length.
using Responder = std::function<void(Response)>;

// Runs on the connection's strand, an io thread: it must not block (the sim posts the work to
// its logic thread). An exception it lets escape is answered 500 internal_error.
using RequestHandler = std::function<void(Request&& req, Responder done)>;

// `status` with a JSON body (Content-Type: application/json, Cache-Control: no-store).
Response json_response(unsigned status, const boost::json::value& body);

struct ListenerShared;

class Listener {
public:
  // `handler` must outlive the io_context's run.
  Listener(boost::asio::io_context& ioc, RequestHandler handler);
  // Stops accepting; open connections live on in the io_context.
  ~Listener();
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  // Binds `host` (a numeric IPv4 or IPv6 address) and `port` (0: any free one) and starts
  // accepting. Throws std::system_error naming the address when it cannot.
  void listen(const std::string& host, std::uint16_t port);
  // The bound port, after listen().
  std::uint16_t port() const;
  // Closes the listening socket (any thread). Connections waiting for a request close; one
  // with a request in flight answers it with Connection: close, then closes.
  void stop_accepting();
  std::size_t open_connections() const;

private:
  std::shared_ptr<ListenerShared> shared_;
};

}  // namespace payorch::vendor_sim
