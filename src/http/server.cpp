#include "http/server.h"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/detect_ssl.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <openssl/ssl.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include "http/connection_slots.h"
#include "http/header_rules.h"
#include "http/instrumented.h"
#include "util/log.h"
#include "util/os_random.h"

namespace payorch::http {
namespace {

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
namespace beast = boost::beast;
using tcp = net::ip::tcp;
using error_code = boost::system::error_code;
using config::Millis;
using Clock = std::chrono::steady_clock;

using PlainStream = beast::tcp_stream;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

constexpr std::string_view continue_line = "HTTP/1.1 100 Continue\r\n\r\n";

// After an error response the rest of the client's request is read and discarded before the
// socket is closed ("lingering close", RFC 9112 §9.6): closing a socket that still has unread
// input makes the kernel send RST, and an RST can destroy the response before the client has
// read it. Bounded by bytes (below) and by read_timeout.
constexpr std::size_t linger_min_bytes = 16 * 1024 * 1024;
constexpr std::size_t linger_chunk_bytes = 16 * 1024;

// A failing accept (EMFILE, ENFILE, ENOBUFS) usually keeps failing for a while; retrying at
// once would spin a thread and flood the log.
constexpr Millis accept_retry_delay{100};

// Received bytes are read into buffers this size while waiting for a TLS request to start.
constexpr std::size_t tls_read_chunk_bytes = 16 * 1024;

// TLS 1.2 suites for the listener: forward secret and AEAD only (TLS 1.3's own suites are all
// AEAD and stay at OpenSSL's defaults). Older protocol versions are refused outright.
constexpr const char* tls12_ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

// The listener's TLS context. config::load() has checked the PEM already; this repeats the
// checks for a config::Server built in code. Throws std::runtime_error naming the file.
std::shared_ptr<ssl::context> make_tls_context(const config::Tls& tls) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                   ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 |
                   ssl::context::single_dh_use | ssl::context::no_compression);
  SSL_CTX* native = ctx->native_handle();
  // Client-initiated renegotiation costs the server a handshake per request: refused.
  SSL_CTX_set_options(native, SSL_OP_NO_RENEGOTIATION);
  if (SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION) != 1 ||
      SSL_CTX_set_cipher_list(native, tls12_ciphers) != 1)
    throw std::runtime_error("http: cannot set up the TLS protocol versions and ciphers");
  error_code ec;
  ctx->use_certificate_chain(net::buffer(tls.cert_pem), ec);
  if (ec)
    throw std::runtime_error("http: server.tls.cert_file " + tls.cert_file +
                             ": cannot use the certificate: " + ec.message());
  ctx->use_private_key(net::buffer(tls.key_pem), ssl::context::pem, ec);
  if (ec)
    throw std::runtime_error("http: server.tls.key_file " + tls.key_file +
                             ": cannot use the private key with the certificate in " +
                             tls.cert_file + ": " + ec.message());
  if (SSL_CTX_check_private_key(native) != 1)
    throw std::runtime_error("http: server.tls.key_file " + tls.key_file +
                             ": the private key does not match the certificate in " +
                             tls.cert_file);
  return ctx;
}

const boost::system::error_category& http_error_category() {
  static const auto& category = beast_http::make_error_code(beast_http::error::bad_method).category();
  return category;
}

using detail::ConnectionSlots;
using detail::ServerConnection;

// Owns the listening socket and the set of live sessions. Shared with every session, so it
// outlives the Server object while connections are still open.
class Listener : public std::enable_shared_from_this<Listener> {
public:
  Listener(net::io_context& ioc, const config::Server& cfg, Handler& handler)
      : ioc_(ioc),
        cfg_(cfg),
        handler_(handler),
        tls_(cfg.tls ? make_tls_context(*cfg.tls) : nullptr),
        acceptor_(ioc),
        accept_retry_(ioc),
        slots_(cfg.max_connections, cfg.reserved_connections, cfg.max_connections_per_client) {}

  void start();
  std::uint16_t port() const { return port_.load(); }
  void stop_accepting();
  std::size_t open_sessions() const { return slots_.open(); }
  void replace_tls(const config::Tls& tls);

  const config::Server& cfg() const { return cfg_; }
  Handler& handler() const { return handler_; }
  bool stopping() const { return stopping_.load(); }
  ConnectionSlots& slots() { return slots_; }

private:
  void do_accept();  // requires acceptor_mutex_
  void on_accept(const error_code& ec, tcp::socket socket);
  // Creates, registers and starts a session; `tls` is the TLS context for a TlsStream.
  template <class Stream>
  void launch(tcp::socket&& socket, const net::ip::address& client, bool reserved,
              std::shared_ptr<ssl::context> tls = nullptr);

  net::io_context& ioc_;
  const config::Server cfg_;
  Handler& handler_;
  // null: plain HTTP. Replaced whole by replace_tls(); a session keeps the one it started with.
  std::shared_ptr<ssl::context> tls_;
  mutable std::mutex tls_mutex_;
  // stop_accepting() runs on any thread, the accept chain on an io thread: every use of
  // acceptor_ and accept_retry_ holds this mutex (asio objects need external synchronisation).
  std::mutex acceptor_mutex_;
  tcp::acceptor acceptor_;
  net::steady_timer accept_retry_;
  bool at_limit_ = false;  // accept chain only (one accept outstanding at a time)
  std::atomic<bool> stopping_{false};
  std::atomic<std::uint16_t> port_{0};
  ConnectionSlots slots_;
};

// One connection over `Stream`: PlainStream, or TlsStream (HTTPS). Everything below runs on the
// connection's strand except make_responder()'s Responder, which only posts onto it. At most
// one request is in flight: the next one is read only after the response to the previous one
// is written. Both kinds share every limit and timeout; TLS adds a handshake in front (within
// the first request's read_timeout) and a close_notify before the lingering close.
template <class Stream>
class Session final : public ServerConnection,
                      public std::enable_shared_from_this<Session<Stream>> {
public:
  static constexpr bool is_tls = std::is_same_v<Stream, TlsStream>;

  // `reserved`: the connection holds one of the reserved slots (see server.h).
  // `tls_context`: the TLS context the stream uses (TlsStream only), kept for its lifetime.
  template <class... TlsContext>
  Session(tcp::socket&& socket, const net::ip::address& client, bool reserved,
          std::shared_ptr<Listener> listener, std::shared_ptr<ssl::context> tls_context,
          TlsContext&... tls)
      : ServerConnection(client, socket.native_handle()),
        strand_(socket.get_executor()),
        tls_context_(std::move(tls_context)),
        stream_(std::move(socket), tls...),
        deadline_(strand_),
        listener_(std::move(listener)),
        accepted_at_(Clock::now()),
        reserved_(reserved),
        last_request_(reserved) {}
  ~Session() override {
    listener_->slots().release(*this);
    listener_->slots().forget(this);
  }

  const net::any_io_executor& strand() const override { return strand_; }
  void start() {
    net::dispatch(strand_, [self = this->shared_from_this()] {
      if constexpr (is_tls) self->detect_tls();
      else self->read_next(true);
    });
  }
  // The server stopped accepting: a connection waiting for a request (or still shaking hands)
  // closes now; one with a request in flight answers it with Connection: close (see write()).
  // A plain connection whose next request has begun to arrive is not idle even if its
  // readability wait has not completed yet: closing it with unread bytes would reset it, and the
  // client would never learn whether its request was taken. It is read and answered 503.
  void on_stop() override {
    if (phase_ == Phase::handshake) return close();
    if (phase_ != Phase::idle) return;
    if constexpr (!is_tls) {
      error_code ec;
      if (buffer_.size() > 0 || stream_.socket().available(ec) > 0) return;
    }
    close();
  }
  // Evicted at a connection limit: waiting for a request, it closes now. If the request has
  // begun to arrive since the eviction looked (as in on_stop()), on_readable() sees the
  // eviction: the request is answered, with Connection: close.
  void on_evicted() override {
    if (phase_ != Phase::idle) return;
    if constexpr (!is_tls) {
      error_code ec;
      if (buffer_.size() > 0 || stream_.socket().available(ec) > 0) return;
    }
    close();
  }

private:
  enum class Phase { handshake, idle, reading, handling, writing, lingering, closed };

  const config::Server& cfg() const { return listener_->cfg(); }
  beast::tcp_stream& tcp() { return beast::get_lowest_layer(stream_); }

  void detect_tls();
  void on_detect(const error_code& ec, bool client_hello);
  void on_handshake(const error_code& ec, std::size_t used);
  void refuse_plaintext();
  void read_next(bool first);
  void wait_readable(bool first);
  void on_readable(const error_code& ec, bool first);
  void read_header();
  void on_header(const error_code& ec);
  void read_body();
  void on_request(const error_code& ec);
  void on_read_error(const error_code& ec);
  Responder make_responder();
  void on_response(std::uint64_t seq, Response res);
  void write_problem(Problem problem, std::string detail);
  std::string body_too_large() const {
    return "the request body exceeds " + std::to_string(cfg().max_body_bytes) + " bytes";
  }
  void write(Response res);
  void on_write(const error_code& ec);
  void linger_close();
  void linger_tcp();
  void linger_read();
  void refuse(Response res);
  void close();
  void arm_read_deadline(Clock::time_point at);
  void disarm_read_deadline();

  const net::any_io_executor strand_;
  const std::shared_ptr<ssl::context> tls_context_;  // outlives stream_
  Stream stream_;
  beast::flat_buffer buffer_;
  net::steady_timer deadline_;  // idle and read deadlines; see arm_read_deadline()
  std::shared_ptr<Listener> listener_;
  const Clock::time_point accepted_at_;
  std::optional<beast_http::request_parser<beast_http::string_body>> parser_;
  std::optional<Response> response_;  // kept alive while it is being written
  Phase phase_ = is_tls ? Phase::handshake : Phase::idle;
  std::uint64_t request_seq_ = 0;     // which request a Responder answers
  std::uint64_t deadline_seq_ = 0;    // which arming a deadline expiry belongs to
  bool timed_out_ = false;
  bool keep_alive_ = false;           // what the request asked for
  unsigned version_ = 11;
  bool close_after_write_ = false;
  bool tls_up_ = false;               // handshake done: close with a close_notify
  const bool reserved_;               // on a reserved slot: operator requests only
  bool last_request_;                 // close after this response (reserved, or evicted)
  std::size_t linger_left_ = 0;
};

// --- Session: TLS handshake -------------------------------------------------------------------

// The handshake shares the first request's deadline (read_timeout from accept), so a client
// that opens a connection and never finishes its handshake is dropped like a silent one.
template <class Stream>
void Session<Stream>::detect_tls() {
  arm_read_deadline(accepted_at_ + cfg().read_timeout);
  beast::async_detect_ssl(tcp(), buffer_,
                          [self = this->shared_from_this()](const error_code& ec, bool hello) {
                            self->on_detect(ec, hello);
                          });
}

template <class Stream>
void Session<Stream>::on_detect(const error_code& ec, bool client_hello) {
  if (phase_ == Phase::closed) return;
  if (ec) return close();  // timed out or gone before saying anything: nothing to answer
  if (!client_hello) return refuse_plaintext();
  if constexpr (is_tls) {
    // Boost 1.81 constrains the buffered handshake's handler to void(error_code) but calls it
    // with (error_code, bytes used): this one takes either.
    struct Done {
      std::shared_ptr<Session> self;
      void operator()(const error_code& hec, std::size_t used) const {
        self->on_handshake(hec, used);
      }
      void operator()(const error_code& hec) const { self->on_handshake(hec, 0); }
    };
    stream_.async_handshake(ssl::stream_base::server, buffer_.data(),
                            Done{this->shared_from_this()});
  }
}

template <class Stream>
void Session<Stream>::on_handshake(const error_code& ec, std::size_t used) {
  if (phase_ == Phase::closed) return;
  // Timed out, or no protocol version or cipher in common. Not logged: every port scan
  // would write lines.
  if (ec) return close();
  buffer_.consume(used);
  tls_up_ = true;
  read_next(true);
}

// The handler's answers carry the request's id (http/instrumented.h); the server's own (413,
// 431, 408, a malformed request, the connection limit, plain HTTP on the HTTPS port) get a fresh
// one, so that every answer names a request.
void name_request(Response& res) {
  if (res.find(request_id_header) != res.end()) return;
  OsRandom rng;
  res.set(request_id_header, new_request_id(rng));
}

// Plain HTTP sent to the HTTPS port gets one cleartext answer saying so (curl and browsers show
// it), then the lingering close; nothing of the request is handled.
template <class Stream>
void Session<Stream>::refuse_plaintext() {
  disarm_read_deadline();
  phase_ = Phase::writing;
  close_after_write_ = true;
  Response res = make_problem(Problem::bad_request,
                              "this port speaks HTTPS: send the request over TLS (https://)");
  name_request(res);
  res.keep_alive(false);
  response_.emplace(std::move(res));
  tcp().expires_after(cfg().read_timeout);
  beast_http::async_write(tcp(), *response_,
                          [self = this->shared_from_this()](const error_code& ec, std::size_t) {
                            self->on_write(ec);
                          });
}

// --- Session: reading -------------------------------------------------------------------------

// A new connection gets read_timeout for its first request, counted from accept. A kept-alive
// one may sit idle for idle_timeout; once the first byte of the next request arrives it gets
// read_timeout for the whole request. Waiting for readability (not reading) keeps the two apart.
template <class Stream>
void Session<Stream>::read_next(bool first) {
  if (phase_ == Phase::closed) return;
  if (listener_->stopping()) return close();
  tcp().expires_never();  // a write may have set it; reads use deadline_ instead
  parser_.emplace();
  // No body limit while the header is read: a Content-Length over it would fail the header
  // read with body_limit, and a client without a token would get 413 where it is owed a 401.
  // on_header() applies the limit.
  parser_->body_limit(boost::none);
  parser_->header_limit(static_cast<std::uint32_t>(
      std::min<std::size_t>(cfg().max_header_bytes, std::numeric_limits<std::uint32_t>::max())));
  timed_out_ = false;
  phase_ = Phase::idle;
  const Clock::time_point request_deadline =
      (first ? accepted_at_ : Clock::now()) + cfg().read_timeout;
  if (buffer_.size() > 0) {  // a pipelined request is already here
    arm_read_deadline(request_deadline);
    return read_header();
  }
  arm_read_deadline(first ? request_deadline : Clock::now() + cfg().idle_timeout);
  begin_waiting();
  wait_readable(first);
}

// Plain: the socket's readability. TLS: decrypted bytes may already wait inside the TLS layer
// where the socket cannot show them, so the first bytes are read into buffer_ instead.
template <class Stream>
void Session<Stream>::wait_readable(bool first) {
  if constexpr (is_tls) {
    stream_.async_read_some(
        buffer_.prepare(tls_read_chunk_bytes),
        [self = this->shared_from_this(), first](const error_code& ec, std::size_t n) {
          self->buffer_.commit(n);
          self->on_readable(ec, first);
        });
  } else {
    stream_.socket().async_wait(tcp::socket::wait_read,
                                [self = this->shared_from_this(), first](const error_code& ec) {
                                  self->on_readable(ec, first);
                                });
  }
}

template <class Stream>
void Session<Stream>::on_readable(const error_code& ec, bool first) {
  if (phase_ == Phase::closed) return;
  // Timed out or failed before a byte arrived: nothing was asked, so nothing is answered.
  if (ec) return close();
  if (!end_waiting()) {
    // Evicted just as this request began to arrive: it is answered, and is the last.
    listener_->slots().retake(*this);
    last_request_ = true;
  }
  if (!first) arm_read_deadline(Clock::now() + cfg().read_timeout);
  read_header();
}

template <class Stream>
void Session<Stream>::read_header() {
  phase_ = Phase::reading;
  beast_http::async_read_header(
      stream_, buffer_, *parser_,
      [self = this->shared_from_this()](const error_code& ec, std::size_t) {
        self->on_header(ec);
      });
}

template <class Stream>
void Session<Stream>::on_header(const error_code& ec) {
  if (phase_ == Phase::closed) return;
  if (ec) return on_read_error(ec);
  const Request& req = parser_->get();
  if (auto refusal = check_request_header(req))
    return write_problem(refusal->problem, std::move(refusal->detail));
  version_ = req.version();
  if (reserved_ && !listener_->handler().is_operator_request(req)) {
    return refuse(make_problem(Problem::too_many_connections,
                               "payorchd is at its connection limit; retry shortly", {},
                               req.version()));
  }
  std::optional<Response> screened;
  try {
    screened = listener_->handler().screen(req);
  } catch (const std::exception&) {
    screened = make_problem(Problem::internal_error, "the request handler failed");
  }
  if (screened) return refuse(std::move(*screened));
  // The body limit applies once the header has passed the handler's screen (see read_next()).
  if (const auto length = parser_->content_length(); length && *length > cfg().max_body_bytes)
    return write_problem(Problem::payload_too_large, body_too_large());
  parser_->body_limit(cfg().max_body_bytes);
  // curl and others wait (about a second) for "100 Continue" before sending a body.
  if (!parser_->is_done() && req.version() == 11 &&
      beast::iequals(req[beast_http::field::expect], "100-continue")) {
    net::async_write(stream_, net::buffer(continue_line.data(), continue_line.size()),
                     [self = this->shared_from_this()](const error_code& wec, std::size_t) {
                       if (self->phase_ == Phase::closed) return;
                       if (wec) return self->on_read_error(wec);
                       self->read_body();
                     });
    return;
  }
  read_body();
}

template <class Stream>
void Session<Stream>::read_body() {
  if (parser_->is_done()) return on_request({});
  beast_http::async_read(
      stream_, buffer_, *parser_,
      [self = this->shared_from_this()](const error_code& ec, std::size_t) {
        self->on_request(ec);
      });
}

template <class Stream>
void Session<Stream>::on_request(const error_code& ec) {
  if (phase_ == Phase::closed) return;
  if (ec) return on_read_error(ec);
  disarm_read_deadline();
  phase_ = Phase::handling;
  ++request_seq_;
  Request req = parser_->release();
  version_ = req.version();
  keep_alive_ = req.keep_alive();
  try {
    listener_->handler().handle(std::move(req), make_responder());
  } catch (const std::exception&) {
    // Handlers report errors as responses; an escaping exception is a bug, but it must not
    // take the daemon down with it. If the handler had answered already, this one is dropped.
    on_response(request_seq_, make_problem(Problem::internal_error, "the request handler failed"));
  }
}

template <class Stream>
void Session<Stream>::on_read_error(const error_code& ec) {
  disarm_read_deadline();
  if (timed_out_) {
    // Half a request after read_timeout is answered (best effort); a silent connection is not.
    if (buffer_.size() > 0 || parser_->got_some())
      return write_problem(Problem::request_timeout,
                           "the request was not received within " +
                               std::to_string(cfg().read_timeout.count()) + " ms");
    return close();
  }
  if (ec == beast_http::error::body_limit)
    return write_problem(Problem::payload_too_large, body_too_large());
  if (ec == beast_http::error::header_limit)
    return write_problem(Problem::headers_too_large,
                         "the request headers exceed " + std::to_string(cfg().max_header_bytes) +
                             " bytes");
  // The client went away (cleanly, mid-request or with a reset): nobody is left to answer.
  if (ec == beast_http::error::end_of_stream || ec == beast_http::error::partial_message ||
      ec.category() != http_error_category())
    return close();
  // Beast's messages name the syntax error, never the request's content.
  return write_problem(Problem::bad_request, "malformed HTTP request: " + ec.message());
}

// --- Session: answering -----------------------------------------------------------------------

// The Responder holds the session alive and may run on any thread; it only posts. A late,
// duplicate or stale call (the connection died, or this request was already answered) is
// dropped on the strand. It must run, or be destroyed, before the io_context is destroyed.
template <class Stream>
Responder Session<Stream>::make_responder() {
  return [self = this->shared_from_this(), seq = request_seq_](Response res) {
    net::post(self->strand(), [self, seq, res = std::move(res)]() mutable {
      self->on_response(seq, std::move(res));
    });
  };
}

template <class Stream>
void Session<Stream>::on_response(std::uint64_t seq, Response res) {
  if (phase_ != Phase::handling || seq != request_seq_) return;
  write(std::move(res));
}

// After a parse error or a timeout the byte stream cannot be trusted: answer, then close.
template <class Stream>
void Session<Stream>::write_problem(Problem problem, std::string detail) {
  keep_alive_ = false;
  version_ = 11;
  write(make_problem(problem, std::move(detail)));
}

// An answer to a request refused on its header: the connection closes after it, and the body
// is discarded with the rest of the input (lingering close).
template <class Stream>
void Session<Stream>::refuse(Response res) {
  keep_alive_ = false;
  write(std::move(res));
}

// A client that stops reading holds the connection for at most read_timeout per response.
template <class Stream>
void Session<Stream>::write(Response res) {
  phase_ = Phase::writing;
  res.version(version_);
  name_request(res);
  // HTTP/1.1: sets Connection: close.
  res.keep_alive(keep_alive_ && !last_request_ && !listener_->stopping());
  if (!res.has_content_length() && !res.chunked()) res.prepare_payload();
  close_after_write_ = !res.keep_alive();
  response_.emplace(std::move(res));
  tcp().expires_after(cfg().read_timeout);
  beast_http::async_write(
      stream_, *response_,
      [self = this->shared_from_this()](const error_code& ec, std::size_t) { self->on_write(ec); });
}

template <class Stream>
void Session<Stream>::on_write(const error_code& ec) {
  response_.reset();
  if (phase_ == Phase::closed) return;
  if (ec) return close();
  if (close_after_write_) return linger_close();
  read_next(false);
}

// --- Session: closing -------------------------------------------------------------------------

// TLS first sends its close_notify (the client's read ends cleanly) and waits for the client's,
// which also consumes what the client is still sending; then, as for plain HTTP, FIN and drain.
// read_timeout bounds the whole of it.
template <class Stream>
void Session<Stream>::linger_close() {
  phase_ = Phase::lingering;
  tcp().expires_after(cfg().read_timeout);  // on expiry tcp_stream closes the socket
  if constexpr (is_tls) {
    if (tls_up_) {
      tls_up_ = false;
      stream_.async_shutdown([self = this->shared_from_this()](const error_code&) {
        if (self->phase_ == Phase::closed) return;
        self->linger_tcp();
      });
      return;
    }
  }
  linger_tcp();
}

// Sends FIN (the client reads the response, then EOF) and discards whatever the client still
// sends until it closes too, up to max(16 MiB, 8 × max_body_bytes) bytes.
template <class Stream>
void Session<Stream>::linger_tcp() {
  error_code ec;
  tcp().socket().shutdown(tcp::socket::shutdown_send, ec);
  if (ec) return close();
  buffer_.clear();
  linger_left_ = std::max(linger_min_bytes, 8 * cfg().max_body_bytes);
  linger_read();
}

template <class Stream>
void Session<Stream>::linger_read() {
  tcp().async_read_some(
      buffer_.prepare(linger_chunk_bytes),  // never committed: the bytes are dropped
      [self = this->shared_from_this()](const error_code& ec, std::size_t n) {
        if (self->phase_ == Phase::closed) return;
        if (ec || n >= self->linger_left_) return self->close();
        self->linger_left_ -= n;
        self->linger_read();
      });
}

template <class Stream>
void Session<Stream>::close() {
  if (phase_ == Phase::closed) return;
  phase_ = Phase::closed;
  disarm_read_deadline();
  listener_->slots().release(*this);  // before the socket closes: see ConnectionSlots
  tcp().close();  // cancels pending operations; their handlers see phase_ == closed
}

// tcp_stream's own timeout closes the socket, which would make a 408 impossible; this deadline
// cancels the pending read instead, and on_read_error() decides what to answer.
template <class Stream>
void Session<Stream>::arm_read_deadline(Clock::time_point at) {
  const std::uint64_t seq = ++deadline_seq_;
  deadline_.expires_at(at);
  deadline_.async_wait([self = this->shared_from_this(), seq](const error_code& ec) {
    if (ec || seq != self->deadline_seq_) return;  // re-armed or disarmed meanwhile
    if (self->phase_ != Phase::handshake && self->phase_ != Phase::idle &&
        self->phase_ != Phase::reading)
      return;
    self->timed_out_ = true;
    error_code ignored;
    self->tcp().socket().cancel(ignored);
  });
}

template <class Stream>
void Session<Stream>::disarm_read_deadline() {
  ++deadline_seq_;
  deadline_.cancel();
}

// --- Listener ---------------------------------------------------------------------------------

void Listener::start() {
  const std::string where = cfg_.listen_host + ":" + std::to_string(cfg_.listen_port);
  error_code ec;
  tcp::resolver resolver(ioc_);
  const auto results =
      resolver.resolve(cfg_.listen_host, std::to_string(cfg_.listen_port),
                       tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (!ec && results.empty()) ec = net::error::host_not_found;
  if (ec) throw std::system_error(ec, "http: cannot resolve listen address " + where);
  const tcp::endpoint endpoint = results.begin()->endpoint();

  std::lock_guard lock(acceptor_mutex_);
  const auto check = [&](const char* step) {
    if (!ec) return;
    error_code ignored;
    acceptor_.close(ignored);
    throw std::system_error(ec, std::string("http: cannot ") + step + " " + where);
  };
  acceptor_.open(endpoint.protocol(), ec);
  check("open a socket for");
  acceptor_.set_option(net::socket_base::reuse_address(true), ec);
  check("set SO_REUSEADDR for");
  acceptor_.bind(endpoint, ec);
  check("bind");
  acceptor_.listen(net::socket_base::max_listen_connections, ec);
  check("listen on");
  const tcp::endpoint bound = acceptor_.local_endpoint(ec);
  check("read the bound port of");
  port_.store(bound.port());
  do_accept();
}

void Listener::do_accept() {
  if (!acceptor_.is_open()) return;
  acceptor_.async_accept(net::make_strand(ioc_),
                         [self = shared_from_this()](const error_code& ec, tcp::socket socket) {
                           self->on_accept(ec, std::move(socket));
                         });
}

template <class Stream>
void Listener::launch(tcp::socket&& socket, const net::ip::address& client, bool reserved,
                      std::shared_ptr<ssl::context> tls) {
  std::shared_ptr<Session<Stream>> session;
  if constexpr (std::is_same_v<Stream, TlsStream>)
    session = std::make_shared<Session<Stream>>(std::move(socket), client, reserved,
                                                shared_from_this(), tls, *tls);
  else
    session = std::make_shared<Session<Stream>>(std::move(socket), client, reserved,
                                                shared_from_this(), nullptr);
  slots_.add(session);
  // Registered before it looks at stopping(), so stop_accepting() cannot miss it.
  session->start();
}

void Listener::on_accept(const error_code& ec, tcp::socket socket) {
  if (ec == net::error::operation_aborted) return;  // the acceptor was closed
  if (ec) {
    log::error("http.accept_failed", "accepting a connection failed; retrying in 100 ms",
               {{"error", ec.message()}});
    std::lock_guard lock(acceptor_mutex_);
    if (!acceptor_.is_open()) return;
    accept_retry_.expires_after(accept_retry_delay);
    accept_retry_.async_wait([self = shared_from_this()](const error_code& wait_ec) {
      if (wait_ec) return;
      std::lock_guard relock(self->acceptor_mutex_);
      self->do_accept();
    });
    return;
  }
  error_code ignored;
  if (stopping()) {
    socket.close(ignored);  // accepted just before the acceptor closed
    return;
  }
  error_code peer_error;
  const tcp::endpoint peer = socket.remote_endpoint(peer_error);
  // A refused socket is closed at once, without an answer: writing a 503 would need a session
  // (buffers, a timer, lingering) — the very resources the limits protect. Reaching a limit is
  // logged once per episode, not per connection.
  const ConnectionSlots::Admission admission =
      peer_error ? ConnectionSlots::Admission{ConnectionSlots::Kind::refused, false}
              : slots_.admit(peer.address());
  if (admission.at_limit && !at_limit_)
    log::warn("http.connection_limit",
              "a connection limit is reached: idle connections give way to new ones, then the "
              "reserve serves operator requests; beyond those, new connections are closed",
              {{"max_connections", static_cast<std::uint64_t>(cfg_.max_connections)},
               {"max_connections_per_client",
                static_cast<std::uint64_t>(cfg_.max_connections_per_client)},
               {"reserved_connections", static_cast<std::uint64_t>(cfg_.reserved_connections)}});
  at_limit_ = admission.at_limit;
  if (admission.kind == ConnectionSlots::Kind::refused) {
    socket.close(ignored);
  } else {
    const bool reserved = admission.kind == ConnectionSlots::Kind::reserved;
    // A response leaves in as many writes as it takes (a large body, TLS records): none of them
    // may wait for the client's delayed ACK of the one before.
    socket.set_option(tcp::no_delay(true), ignored);
    std::shared_ptr<ssl::context> tls;
    {
      std::lock_guard lock(tls_mutex_);
      tls = tls_;
    }
    if (tls) launch<TlsStream>(std::move(socket), peer.address(), reserved, tls);
    else launch<PlainStream>(std::move(socket), peer.address(), reserved);
  }
  std::lock_guard lock(acceptor_mutex_);
  do_accept();
}

void Listener::replace_tls(const config::Tls& tls) {
  std::shared_ptr<ssl::context> fresh = make_tls_context(tls);
  std::lock_guard lock(tls_mutex_);
  if (!tls_)
    throw std::runtime_error("http: the listener speaks plain HTTP; enabling TLS needs a restart");
  tls_ = std::move(fresh);
}

void Listener::stop_accepting() {
  stopping_.store(true);
  {
    std::lock_guard lock(acceptor_mutex_);
    error_code ignored;
    acceptor_.close(ignored);
    accept_retry_.cancel();
  }
  for (auto& session : slots_.live())
    net::post(session->strand(), [session] { session->on_stop(); });
}

}  // namespace

// --- Server -----------------------------------------------------------------------------------

struct Server::Impl {
  std::shared_ptr<Listener> listener;
};

Server::Server(boost::asio::io_context& ioc, const config::Server& cfg, Handler& handler)
    : impl_(std::make_shared<Impl>(Impl{std::make_shared<Listener>(ioc, cfg, handler)})) {}

Server::~Server() { impl_->listener->stop_accepting(); }

void Server::start() { impl_->listener->start(); }

std::uint16_t Server::port() const { return impl_->listener->port(); }

void Server::stop_accepting() { impl_->listener->stop_accepting(); }

void Server::replace_tls(const config::Tls& tls) { impl_->listener->replace_tls(tls); }

std::size_t Server::open_sessions() const { return impl_->listener->open_sessions(); }

std::size_t Server::waiting_sessions() const { return impl_->listener->slots().waiting(); }

}  // namespace payorch::http
