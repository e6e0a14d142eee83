#include "vendor_sim/listener.h"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/json/serialize.hpp>

#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <optional>
#include <system_error>
#include <utility>
#include <vector>

#include "util/log.h"
#include "vendor_sim/charge.h"

namespace payorch::vendor_sim {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
using tcp = net::ip::tcp;
using error_code = boost::system::error_code;
using namespace std::chrono_literals;

constexpr std::uint64_t max_body_bytes = 64 * 1024;
constexpr std::uint32_t max_header_bytes = 16 * 1024;
constexpr auto request_timeout = 10s;  // first byte to last, and for writing the answer
constexpr auto idle_timeout = 60s;
constexpr std::size_t max_connections = 1024;
constexpr std::size_t read_chunk_bytes = 4096;
// After a Connection: close answer the client's unread input is read and dropped, up to this
// much, before closing: closing with unread input sends a reset, which can destroy the answer.
constexpr std::size_t drain_limit_bytes = 1024 * 1024;
constexpr auto accept_retry_delay = 100ms;

const boost::system::error_category& parse_errors() {
  static const auto& category = beast_http::make_error_code(beast_http::error::bad_method).category();
  return category;
}

}  // namespace

Response json_response(unsigned status, const boost::json::value& body) {
  Response res{static_cast<beast_http::status>(status), 11};
  res.set(beast_http::field::content_type, "application/json");
  res.set(beast_http::field::cache_control, "no-store");
  res.body() = boost::json::serialize(body);
  res.prepare_payload();
  return res;
}

class Connection;

struct ListenerShared {
  ListenerShared(net::io_context& context, RequestHandler h)
      : ioc(context), handler(std::move(h)), acceptor(context), retry(context) {}

  void accept_next();  // holds acceptor_mutex
  void on_accept(const error_code& ec, tcp::socket socket,
                 const std::shared_ptr<ListenerShared>& self);

  net::io_context& ioc;
  const RequestHandler handler;
  std::mutex acceptor_mutex;  // the accept chain and stop_accepting() run on different threads
  tcp::acceptor acceptor;
  net::steady_timer retry;
  std::atomic<std::uint16_t> port{0};
  std::atomic<bool> stopping{false};
  std::atomic<std::size_t> open{0};
  std::mutex connections_mutex;
  std::vector<std::weak_ptr<Connection>> connections;
  std::weak_ptr<ListenerShared> weak_self;
};

// One connection. Everything runs on its strand; the Responder only posts onto it. While a
// request is being handled no operation is pending, so the Responder's reference is what keeps
// the connection open.
class Connection : public std::enable_shared_from_this<Connection> {
public:
  Connection(tcp::socket&& socket, std::shared_ptr<ListenerShared> shared)
      : stream_(std::move(socket)), shared_(std::move(shared)) {
    ++shared_->open;
  }
  ~Connection() { --shared_->open; }

  void start() {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->await_request(); });
  }

  // The listener stopped: a connection with nothing of a request received closes now. Any
  // thread: the work is posted onto the connection's strand.
  void stop() {
    net::post(stream_.get_executor(), [self = shared_from_this()] {
      error_code ec;
      if (self->waiting_ && self->buffer_.size() == 0 &&
          self->stream_.socket().available(ec) == 0)
        self->close();
    });
  }

private:
  // Waits up to idle_timeout for the first bytes of the next request.
  void await_request() {
    if (closed_) return;
    if (shared_->stopping) return close();
    if (buffer_.size() > 0) return read_request();  // pipelined: already here
    waiting_ = true;
    stream_.expires_after(idle_timeout);
    stream_.async_read_some(buffer_.prepare(read_chunk_bytes),
                            [self = shared_from_this()](const error_code& ec, std::size_t n) {
                              self->waiting_ = false;
                              self->buffer_.commit(n);
                              if (ec || self->closed_) return self->close();
                              self->read_request();
                            });
  }

  void read_request() {
    parser_.emplace();
    parser_->body_limit(max_body_bytes);
    parser_->header_limit(max_header_bytes);
    stream_.expires_after(request_timeout);
    beast_http::async_read(stream_, buffer_, *parser_,
                           [self = shared_from_this()](const error_code& ec, std::size_t) {
                             self->on_request(ec);
                           });
  }

  void on_request(const error_code& ec) {
    if (closed_) return;
    if (ec == beast_http::error::body_limit) return refuse(413);
    if (ec == beast_http::error::header_limit) return refuse(431);
    if (ec) {
      // A parse error is answered; a timeout, a reset or the client closing is not: nobody is
      // left to answer.
      const bool malformed = ec.category() == parse_errors() &&
                             ec != beast_http::error::end_of_stream &&
                             ec != beast_http::error::partial_message;
      return malformed ? refuse(400) : close();
    }
    Request req = parser_->release();
    version_ = req.version();
    keep_alive_ = req.keep_alive();
    handling_ = true;
    const std::uint64_t seq = ++seq_;
    try {
      shared_->handler(std::move(req), responder(seq));
    } catch (const std::exception& e) {
      log::error("sim.handler_failed", e.what());
      answer(seq, json_response(500, error_json("internal_error")));
    }
  }

  Responder responder(std::uint64_t seq) {
    return [self = shared_from_this(), seq](Response res) {
      net::post(self->stream_.get_executor(), [self, seq, res = std::move(res)]() mutable {
        self->answer(seq, std::move(res));
      });
    };
  }

  // The answer to request `seq`; a second or stale one is dropped.
  void answer(std::uint64_t seq, Response res) {
    if (closed_ || !handling_ || seq != seq_) return;
    handling_ = false;
    res.version(version_);
    res.keep_alive(keep_alive_ && !shared_->stopping);
    if (!res.has_content_length() && !res.chunked()) res.prepare_payload();
    write(std::move(res));
  }

  // After a refusal the byte stream cannot be trusted: answer, then close.
  void refuse(unsigned status) {
    version_ = 11;
    Response res = json_response(status, error_json("invalid_request"));
    res.keep_alive(false);
    write(std::move(res));
  }

  void write(Response res) {
    response_.emplace(std::move(res));
    stream_.expires_after(request_timeout);
    beast_http::async_write(stream_, *response_,
                            [self = shared_from_this()](const error_code& ec, std::size_t) {
                              const bool keep = self->response_->keep_alive();
                              self->response_.reset();
                              if (ec || self->closed_) return self->close();
                              if (!keep) return self->drain_and_close();
                              self->await_request();
                            });
  }

  void drain_and_close() {
    error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    if (ec) return close();
    drain_left_ = drain_limit_bytes;
    stream_.expires_after(request_timeout);
    drain();
  }

  void drain() {
    stream_.async_read_some(buffer_.prepare(read_chunk_bytes),  // never committed: dropped
                            [self = shared_from_this()](const error_code& ec, std::size_t n) {
                              if (ec || self->closed_ || n >= self->drain_left_)
                                return self->close();
                              self->drain_left_ -= n;
                              self->drain();
                            });
  }

  void close() {
    if (closed_) return;
    closed_ = true;
    waiting_ = false;
    stream_.close();  // pending operations complete with an error and see closed_
  }

  beast::tcp_stream stream_;
  std::shared_ptr<ListenerShared> shared_;
  beast::flat_buffer buffer_;
  std::optional<beast_http::request_parser<beast_http::string_body>> parser_;
  std::optional<Response> response_;  // alive while it is written
  std::uint64_t seq_ = 0;             // which request an answer belongs to
  unsigned version_ = 11;
  bool keep_alive_ = false;
  bool waiting_ = false;   // waiting for the first byte of a request
  bool handling_ = false;  // a request is with the handler
  bool closed_ = false;
  std::size_t drain_left_ = 0;
};

void ListenerShared::accept_next() {
  if (!acceptor.is_open()) return;
  acceptor.async_accept(net::make_strand(ioc),
                        [self = weak_self.lock()](const error_code& ec, tcp::socket socket) {
                          self->on_accept(ec, std::move(socket), self);
                        });
}

void ListenerShared::on_accept(const error_code& ec, tcp::socket socket,
                               const std::shared_ptr<ListenerShared>& self) {
  if (ec == net::error::operation_aborted) return;  // the acceptor closed
  std::lock_guard lock(acceptor_mutex);
  if (ec) {  // EMFILE and the like tend to last: retry shortly instead of spinning
    log::error("sim.accept_failed", ec.message());
    retry.expires_after(accept_retry_delay);
    retry.async_wait([self](const error_code& wait_ec) {
      if (wait_ec) return;
      std::lock_guard relock(self->acceptor_mutex);
      self->accept_next();
    });
    return;
  }
  error_code ignored;
  if (stopping || open >= max_connections) {
    socket.close(ignored);
  } else {
    socket.set_option(tcp::no_delay(true), ignored);
    auto connection = std::make_shared<Connection>(std::move(socket), self);
    {
      std::lock_guard guard(connections_mutex);
      std::erase_if(connections, [](const auto& c) { return c.expired(); });
      connections.push_back(connection);
    }
    connection->start();
  }
  accept_next();
}

Listener::Listener(net::io_context& ioc, RequestHandler handler)
    : shared_(std::make_shared<ListenerShared>(ioc, std::move(handler))) {
  shared_->weak_self = shared_;
}

Listener::~Listener() { stop_accepting(); }

void Listener::listen(const std::string& host, std::uint16_t port) {
  const std::string where = host + ":" + std::to_string(port);
  error_code ec;
  const net::ip::address address = net::ip::make_address(host, ec);
  if (ec) throw std::system_error(ec, "cannot listen on " + where);
  std::lock_guard lock(shared_->acceptor_mutex);
  try {
    // Opens, sets SO_REUSEADDR, binds and listens.
    shared_->acceptor = tcp::acceptor(shared_->ioc, tcp::endpoint(address, port));
    shared_->port = shared_->acceptor.local_endpoint().port();
  } catch (const boost::system::system_error& e) {
    throw std::system_error(e.code(), "cannot listen on " + where);
  }
  shared_->accept_next();
}

std::uint16_t Listener::port() const { return shared_->port; }

void Listener::stop_accepting() {
  shared_->stopping = true;
  {
    std::lock_guard lock(shared_->acceptor_mutex);
    error_code ignored;
    shared_->acceptor.close(ignored);
    shared_->retry.cancel();
  }
  std::lock_guard guard(shared_->connections_mutex);
  for (const auto& weak : shared_->connections)
    if (auto c = weak.lock()) c->stop();
}

std::size_t Listener::open_connections() const { return shared_->open; }

}  // namespace payorch::vendor_sim
