// One request/response exchange: connect (or reuse), write, read — and the classification of
// every way that can fail into not_sent or sent_no_answer (see HttpResult::Kind).
//
// Phases and what a failure in each means:
//   connecting  (resolve, TCP connect, TLS handshake)  → not_sent: no request byte exists yet
//   writing     → not_sent only if the kernel accepted no byte of the request (CountingSocket);
//                 on a pooled connection that case is retried once on a new connection
//   reading     → sent_no_answer: the vendor may have acted on the request
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/http.hpp>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "core/ascii.h"
#include "net/client_shared.h"
#include "net/connection.h"
#include "net/url.h"

namespace payorch::net::detail {
namespace {

namespace asio = boost::asio;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;
using SteadyClock = std::chrono::steady_clock;

bool is_token(std::string_view s) {
  static constexpr std::string_view extra = "!#$%&'*+-.^_`|~";
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return std::isalnum(c) || extra.find(static_cast<char>(c)) != std::string_view::npos;
  });
}

// A CR or LF in a header value would let the value write headers (or a second request) of
// its own.
bool is_field_value(std::string_view s) {
  return s.find_first_of(std::string_view("\r\n\0", 3)) == std::string_view::npos;
}

std::string ms(std::chrono::milliseconds d) { return std::to_string(d.count()) + " ms"; }

class Exchange : public std::enable_shared_from_this<Exchange> {
public:
  Exchange(std::shared_ptr<ClientShared> shared, Request req, HttpClient::Handler done)
      : shared_(std::move(shared)),
        strand_(asio::make_strand(shared_->executor)),
        resolver_(strand_),
        timer_(strand_),
        req_(std::move(req)),
        done_(std::move(done)) {}

  void start() {
    asio::post(strand_, [self = shared_from_this()] { self->begin(); });
  }

private:
  enum class Phase { connecting, writing, reading, finished };

  // Every completion runs on this exchange's strand; the socket may belong to another strand's
  // former exchange (pooled), so handlers are bound explicitly.
  template <class F>
  auto on_strand(F&& f) {
    return asio::bind_executor(strand_, std::forward<F>(f));
  }

  void begin();
  std::optional<std::string> build_message();
  void connect();
  void on_resolve(const error_code& ec, const tcp::resolver::results_type& endpoints);
  void on_connect(const error_code& ec);
  void on_handshake(const error_code& ec);
  void write();
  void on_write(const error_code& ec);
  void read();
  void on_read(const error_code& ec);
  void arm_timer(SteadyClock::time_point at);
  void on_timeout();
  std::string describe_handshake_error(const error_code& ec);
  std::string describe_read_error(const error_code& ec) const;
  HttpResult take_response();

  using Failure = HttpResult::Failure;
  void finish_not_sent(std::string error, Failure failure = Failure::other) {
    finish(HttpResult{HttpResult::not_sent, 0, {}, {}, std::move(error), failure});
  }
  void finish_sent_no_answer(std::string error, Failure failure = Failure::other) {
    finish(HttpResult{HttpResult::sent_no_answer, 0, {}, {}, std::move(error), failure});
  }
  void finish(HttpResult result);

  const std::shared_ptr<ClientShared> shared_;
  const asio::strand<asio::any_io_executor> strand_;
  tcp::resolver resolver_;
  asio::steady_timer timer_;
  std::uint64_t timer_generation_ = 0;  // which arming a timer expiry belongs to
  Request req_;
  HttpClient::Handler done_;
  ParsedUrl url_;
  bhttp::request<bhttp::string_body> message_;
  SteadyClock::time_point deadline_{};  // the whole request (req_.timeout)
  // Outlives every operation started on it: closed, never destroyed, before the exchange ends.
  std::unique_ptr<Connection> conn_;
  bool reused_ = false;                 // conn_ came from the pool
  std::uint64_t bytes_before_write_ = 0;
  std::optional<bhttp::response_parser<bhttp::string_body>> parser_;
  Phase phase_ = Phase::connecting;
  bool timed_out_ = false;              // the deadline closed the connection mid-write/read
};

void Exchange::begin() {
  std::string error;
  auto url = parse_url(req_.url, error);
  if (!url) return finish_not_sent(std::move(error));
  url_ = std::move(*url);
  if (auto bad = build_message()) return finish_not_sent(std::move(*bad));
  deadline_ = SteadyClock::now() + req_.timeout;
  conn_ = shared_->pool.take(url_.origin.key(), SteadyClock::now());
  if (!conn_) return connect();
  reused_ = true;
  ++shared_->connections_reused;
  write();
}

// Returns an error message when the request cannot be expressed safely.
std::optional<std::string> Exchange::build_message() {
  if (!is_token(req_.method)) return "invalid HTTP method";
  message_.version(11);
  const bhttp::verb verb = bhttp::string_to_verb(req_.method);
  if (verb == bhttp::verb::unknown)
    message_.method_string(req_.method);
  else
    message_.method(verb);
  message_.target(url_.target);
  message_.set(bhttp::field::host, url_.origin.host_header);
  message_.set(bhttp::field::user_agent, shared_->options.user_agent);
  for (const auto& [name, value] : req_.headers) {
    if (!is_token(name) || !is_field_value(value))
      return "invalid header \"" + name + "\" (bad name or a CR/LF in its value)";
    message_.set(name, value);
  }
  message_.body() = req_.body;
  message_.keep_alive(true);
  message_.prepare_payload();
  return std::nullopt;
}

// --- connecting: every failure here is not_sent -------------------------------------------

void Exchange::connect() {
  phase_ = Phase::connecting;
  reused_ = false;
  conn_ = std::make_unique<Connection>(shared_->executor,
                                       url_.origin.tls ? &shared_->tls : nullptr);
  arm_timer(std::min(SteadyClock::now() + req_.connect_timeout, deadline_));
  resolver_.async_resolve(
      url_.origin.host, std::to_string(url_.origin.port), tcp::resolver::numeric_service,
      on_strand([self = shared_from_this()](const error_code& ec,
                                            const tcp::resolver::results_type& endpoints) {
        self->on_resolve(ec, endpoints);
      }));
}

void Exchange::on_resolve(const error_code& ec, const tcp::resolver::results_type& endpoints) {
  if (phase_ == Phase::finished) return;
  if (ec) return finish_not_sent("cannot resolve " + url_.origin.host + ": " + ec.message());
  asio::async_connect(conn_->socket(), endpoints,
                      on_strand([self = shared_from_this()](const error_code& cec,
                                                            const tcp::endpoint&) {
                        self->on_connect(cec);
                      }));
}

void Exchange::on_connect(const error_code& ec) {
  if (phase_ == Phase::finished) return;
  if (ec)
    return finish_not_sent("cannot connect to " + url_.origin.key() + ": " + ec.message(),
                           ec == asio::error::connection_refused ? Failure::refused
                                                                 : Failure::other);
  ++shared_->connections_opened;
  error_code ignored;
  conn_->socket().set_option(tcp::no_delay(true), ignored);
  if (!conn_->is_tls()) return write();
  std::string error;
  if (!conn_->expect_peer_name(url_.origin.host, error))
    return finish_not_sent(std::move(error), Failure::tls);
  conn_->tls().async_handshake(
      asio::ssl::stream_base::client,
      on_strand([self = shared_from_this()](const error_code& hec) { self->on_handshake(hec); }));
}

void Exchange::on_handshake(const error_code& ec) {
  if (phase_ == Phase::finished) return;
  if (ec) return finish_not_sent(describe_handshake_error(ec), Failure::tls);
  write();
}

std::string Exchange::describe_handshake_error(const error_code& ec) {
  std::string out = "TLS handshake with " + url_.origin.key() + " failed: ";
  const long verify = SSL_get_verify_result(conn_->tls().native_handle());
  if (verify != X509_V_OK)
    return out + "certificate verification failed: " +
           X509_verify_cert_error_string(verify);
  return out + ec.message();
}

// --- writing: not_sent only while the kernel has accepted no byte of the request ----------

void Exchange::write() {
  phase_ = Phase::writing;
  arm_timer(deadline_);
  bytes_before_write_ = conn_->bytes_written();
  conn_->with_stream([this](auto& stream) {
    bhttp::async_write(stream, message_,
                       on_strand([self = shared_from_this()](const error_code& ec, std::size_t) {
                         self->on_write(ec);
                       }));
  });
}

void Exchange::on_write(const error_code& ec) {
  if (phase_ == Phase::finished) return;
  const bool some_sent = conn_->bytes_written() != bytes_before_write_;
  if (timed_out_) {
    if (some_sent)
      return finish_sent_no_answer("request timeout (" + ms(req_.timeout) +
                                   ") while sending the request", Failure::timeout);
    return finish_not_sent("request timeout (" + ms(req_.timeout) +
                           ") before any byte of the request was sent", Failure::timeout);
  }
  if (ec) {
    if (some_sent)
      return finish_sent_no_answer("connection failed while sending the request: " +
                                   ec.message());
    // The peer closed this pooled connection while it sat idle, and not one byte of the
    // request left: sending it on a new connection cannot make a second charge.
    if (reused_) {
      conn_->close();
      return connect();
    }
    return finish_not_sent("sending failed before any byte left: " + ec.message());
  }
  read();
}

// --- reading: every failure here is sent_no_answer -----------------------------------------

void Exchange::read() {
  phase_ = Phase::reading;
  parser_.emplace();
  parser_->body_limit(shared_->options.max_response_body_bytes);
  parser_->header_limit(shared_->options.max_response_header_bytes);
  if (message_.method() == bhttp::verb::head) parser_->skip(true);
  conn_->with_stream([this](auto& stream) {
    bhttp::async_read(stream, conn_->buffer(), *parser_,
                      on_strand([self = shared_from_this()](const error_code& ec, std::size_t) {
                        self->on_read(ec);
                      }));
  });
}

void Exchange::on_read(const error_code& ec) {
  if (phase_ == Phase::finished) return;
  const std::string no_answer_in_time = "no complete response within the request timeout (" +
                                        ms(req_.timeout) + "); the request was sent";
  if (ec && timed_out_) return finish_sent_no_answer(no_answer_in_time, Failure::timeout);
  if (ec) return finish_sent_no_answer(describe_read_error(ec));
  // A final response read in full counts even if the deadline closed the socket just after.
  const unsigned status = parser_->get().result_int();
  if (status >= 100 && status < 200 && status != 101) {  // interim: the final one follows
    if (timed_out_) return finish_sent_no_answer(no_answer_in_time, Failure::timeout);
    return read();
  }
  const bool reusable = !timed_out_ && parser_->keep_alive() && status >= 200 &&
                        conn_->buffer().size() == 0;
  HttpResult result = take_response();
  if (reusable) shared_->pool.give_back(url_.origin.key(), std::move(conn_), SteadyClock::now());
  finish(std::move(result));
}

std::string Exchange::describe_read_error(const error_code& ec) const {
  const std::string was_sent = " (the request was sent)";
  if (ec == bhttp::error::end_of_stream)
    return "connection closed before any response" + was_sent;
  if (ec == bhttp::error::partial_message || ec == asio::ssl::error::stream_truncated)
    return "connection closed in the middle of the response" + was_sent;
  if (ec == bhttp::error::body_limit)
    return "response body over " + std::to_string(shared_->options.max_response_body_bytes) +
           " bytes" + was_sent;
  if (ec == bhttp::error::header_limit)
    return "response header over " + std::to_string(shared_->options.max_response_header_bytes) +
           " bytes" + was_sent;
  if (ec.category() == bhttp::make_error_code(bhttp::error::bad_version).category())
    return "unparseable response: " + ec.message() + was_sent;
  return "connection failed while waiting for the response: " + ec.message() + was_sent;
}

HttpResult Exchange::take_response() {
  bhttp::response<bhttp::string_body> res = parser_->release();
  HttpResult out;
  out.kind = HttpResult::response;
  out.status = static_cast<int>(res.result_int());
  for (const auto& field : res) {
    auto [it, inserted] = out.headers.emplace(ascii_lower(field.name_string()), field.value());
    if (!inserted) it->second += ", " + std::string(field.value());
  }
  out.body = std::move(res.body());
  return out;
}

// --- deadlines ------------------------------------------------------------------------------

void Exchange::arm_timer(SteadyClock::time_point at) {
  const std::uint64_t generation = ++timer_generation_;
  timer_.expires_at(at);
  timer_.async_wait([self = shared_from_this(), generation](const error_code& ec) {
    if (ec || generation != self->timer_generation_ || self->phase_ == Phase::finished) return;
    self->on_timeout();
  });
}

void Exchange::on_timeout() {
  if (phase_ == Phase::connecting) {
    // Finished at once: a stuck name lookup cannot be interrupted, and nothing was sent.
    if (SteadyClock::now() >= deadline_)
      return finish_not_sent("request timeout (" + ms(req_.timeout) +
                             ") before the request was sent", Failure::timeout);
    return finish_not_sent("no connection to " + url_.origin.key() + " within the connect timeout (" +
                           ms(req_.connect_timeout) + ")", Failure::timeout);
  }
  // Writing or reading: whether bytes left is known only when the pending operation completes
  // (its handler counts them), so close the socket and let on_write / on_read decide.
  timed_out_ = true;
  conn_->close();
}

void Exchange::finish(HttpResult result) {
  if (phase_ == Phase::finished) return;
  phase_ = Phase::finished;
  ++timer_generation_;
  timer_.cancel();
  resolver_.cancel();
  if (conn_) conn_->close();  // not reset: operations still pending on it hold references
  asio::post(shared_->executor, [done = std::move(done_), result = std::move(result)]() mutable {
    done(std::move(result));
  });
}

}  // namespace

void start_exchange(std::shared_ptr<ClientShared> shared, Request req, HttpClient::Handler done) {
  std::make_shared<Exchange>(std::move(shared), std::move(req), std::move(done))->start();
}

}  // namespace payorch::net::detail
