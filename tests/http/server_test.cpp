#include "http/server.h"

#include <doctest/doctest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/json/parse.hpp>
#include <openssl/ssl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <array>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "support/process.h"
#include "support/test_cert.h"
#include "support/tls_client.h"

namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;
using error_code = boost::system::error_code;
using payorch::http::Request;
using payorch::http::Responder;
using payorch::http::Response;
using payorch::http::Server;
using namespace std::chrono_literals;

// Only a bound on a failing test: every wait below ends as soon as its condition holds. Scaled
// for sanitizer builds (support/slowdown.h), where a TLS handshake on a loaded machine is slow.
const auto client_deadline = payorch::test::scaled(std::chrono::milliseconds(2000));

payorch::config::Server test_config() {
  payorch::config::Server cfg;
  cfg.listen_host = "127.0.0.1";
  cfg.listen_port = 0;
  cfg.read_timeout = 2000ms;
  cfg.idle_timeout = 5000ms;
  return cfg;
}

Response echo(const Request& req) {
  Response res{bhttp::status::ok, 11};
  res.set(bhttp::field::content_type, "text/plain");
  res.body() = std::string(req.method_string()) + " " + std::string(req.target()) + " " +
               std::to_string(req.body().size());
  res.prepare_payload();
  return res;
}

// Answers "METHOD TARGET BODY_BYTES". Targets starting with "/async" are answered from another
// thread after 20 ms, "/defer" are held until answer_deferred(), "/twice" are answered twice;
// everything else at once. "/screened" is refused 401 on its header. A target containing
// "probe" is an operator request.
class TestHandler : public payorch::http::Handler {
public:
  bool is_operator_request(const Request& header) const override {
    return header.target().find("probe") != std::string_view::npos;
  }
  std::optional<Response> screen(const Request& header) override {
    if (!header.target().starts_with("/screened")) return std::nullopt;
    return payorch::http::make_problem(payorch::http::Problem::unauthorized, "screened");
  }

  void handle(Request&& req, Responder done) override {
    std::lock_guard lock(mutex_);
    ++handled_;
    const std::string target(req.target());
    if (target.starts_with("/async")) {
      threads_.emplace_back([res = echo(req), done = std::move(done)]() mutable {
        std::this_thread::sleep_for(20ms);
        done(std::move(res));
        done = nullptr;  // drop the session while the io_context is surely alive
      });
    } else if (target.starts_with("/defer")) {
      deferred_.emplace_back(echo(req), std::move(done));
    } else if (target.starts_with("/twice")) {
      done(echo(req));
      done(payorch::http::make_problem(payorch::http::Problem::internal_error, "second answer"));
    } else {
      done(echo(req));
    }
  }

  std::size_t handled() {
    std::lock_guard lock(mutex_);
    return handled_;
  }
  std::size_t deferred() {
    std::lock_guard lock(mutex_);
    return deferred_.size();
  }
  // Answers every held request from a thread that is not an io_context thread.
  void answer_deferred() {
    std::vector<std::pair<Response, Responder>> held;
    {
      std::lock_guard lock(mutex_);
      held.swap(deferred_);
    }
    std::thread([&held] {
      for (auto& [res, done] : held) done(std::move(res));
    }).join();
  }
  // Called while the io_context still runs: no Responder may outlive it.
  void quiesce() {
    std::vector<std::thread> threads;
    std::vector<std::pair<Response, Responder>> held;
    {
      std::lock_guard lock(mutex_);
      threads.swap(threads_);
      held.swap(deferred_);
    }
    for (auto& t : threads) t.join();
  }

private:
  std::mutex mutex_;
  std::size_t handled_ = 0;
  std::vector<std::thread> threads_;
  std::vector<std::pair<Response, Responder>> deferred_;
};

// The server on an io_context run by two threads (so strands matter), bound to a free port.
class TestServer {
public:
  explicit TestServer(TestHandler& handler, const payorch::config::Server& cfg = test_config())
      : handler_(handler), server_(ioc_, cfg, handler) {
    server_.start();
    for (int i = 0; i < 2; ++i) threads_.emplace_back([this] { ioc_.run(); });
  }
  TestServer(const TestServer&) = delete;
  TestServer& operator=(const TestServer&) = delete;
  ~TestServer() {
    handler_.quiesce();
    server_.stop_accepting();
    ioc_.stop();
    for (auto& t : threads_) t.join();
  }

  Server& server() { return server_; }
  std::uint16_t port() const { return server_.port(); }

private:
  TestHandler& handler_;
  net::io_context ioc_;
  net::executor_work_guard<net::io_context::executor_type> work_ = net::make_work_guard(ioc_);
  Server server_;
  std::vector<std::thread> threads_;
};

// A blocking client where every step has a deadline, so a server bug fails a test instead of
// hanging it.
class Client {
public:
  explicit Client(std::uint16_t port) {
    stream_.socket().connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port),
                             connect_error_);
  }
  const error_code& connect_error() const { return connect_error_; }
  std::uint16_t local_port() const { return stream_.socket().local_endpoint().port(); }

  error_code send(const Request& req) {
    return run([&](auto done) { bhttp::async_write(stream_, req, done); });
  }
  error_code send_raw(const std::string& bytes) {
    return run([&](auto done) { net::async_write(stream_, net::buffer(bytes), done); });
  }
  Response receive() {
    bhttp::response_parser<bhttp::string_body> parser;
    const error_code ec = run([&](auto done) { bhttp::async_read(stream_, buffer_, parser, done); });
    REQUIRE_MESSAGE(!ec, ec.message());
    return parser.release();
  }
  // What the next read returns when no more response bytes are expected (eof on a clean close).
  error_code next_read_error() {
    std::array<char, 256> scratch{};
    std::size_t got = 0;
    const error_code ec = run([&](auto done) {
      stream_.async_read_some(net::buffer(scratch), [&got, done](error_code e, std::size_t n) mutable {
        got = n;
        done(e, n);
      });
    });
    CHECK(got == 0);
    return ec;
  }
  void close() {
    error_code ignored;
    stream_.socket().close(ignored);
  }

private:
  template <class Start>
  error_code run(Start start) {
    error_code result = net::error::would_block;
    stream_.expires_after(client_deadline);
    start([&result](error_code ec, std::size_t) { result = ec; });
    ioc_.restart();
    ioc_.run();
    return result;
  }

  net::io_context ioc_;
  beast::tcp_stream stream_{ioc_};
  beast::flat_buffer buffer_;
  error_code connect_error_;
};

Request get(std::string target, unsigned version = 11) {
  Request req{bhttp::verb::get, target, version};
  req.set(bhttp::field::host, "127.0.0.1");
  return req;
}

Request post(std::string target, std::string body) {
  Request req{bhttp::verb::post, target, 11};
  req.set(bhttp::field::host, "127.0.0.1");
  req.body() = std::move(body);
  req.prepare_payload();
  return req;
}

using payorch::test::eventually;

void check_problem(const Response& res, unsigned status, std::string_view code) {
  CHECK(res.result_int() == status);
  CHECK(res[bhttp::field::content_type] == "application/problem+json");
  CHECK_FALSE(res.keep_alive());
  const auto body = boost::json::parse(res.body()).as_object();
  CHECK(body.at("type").as_string() == std::string(payorch::http::problem_base) + std::string(code));
  CHECK(body.at("status").as_int64() == status);
}

}  // namespace

TEST_CASE("server: keep-alive serves several requests on one connection") {
  TestHandler handler;
  TestServer ts(handler);
  CHECK(ts.port() != 0);
  Client client(ts.port());
  REQUIRE_FALSE(client.connect_error());

  REQUIRE_FALSE(client.send(get("/a")));
  Response first = client.receive();
  CHECK(first.result() == bhttp::status::ok);
  CHECK(first.body() == "GET /a 0");
  CHECK(first.keep_alive());

  REQUIRE_FALSE(client.send(post("/b", "hello")));
  Response second = client.receive();
  CHECK(second.body() == "POST /b 5");
  CHECK(second.keep_alive());
  CHECK(handler.handled() == 2);
}

TEST_CASE("server: accepted connections send at once (TCP_NODELAY), never after a delayed ACK") {
  TestHandler handler;
  TestServer ts(handler);
  Client client(ts.port());
  REQUIRE_FALSE(client.connect_error());
  REQUIRE_FALSE(client.send(get("/a")));
  CHECK(client.receive().result() == bhttp::status::ok);

  // The server's end of this connection is a socket of this process: found by its two ports.
  std::optional<int> nodelay;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    const int fd = std::atoi(entry.path().filename().c_str());
    sockaddr_in local{}, peer{};
    socklen_t local_len = sizeof local, peer_len = sizeof peer;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) != 0 ||
        ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0 ||
        local.sin_family != AF_INET || ntohs(local.sin_port) != ts.port() ||
        ntohs(peer.sin_port) != client.local_port())
      continue;
    int value = 0;
    socklen_t len = sizeof value;
    REQUIRE(::getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &value, &len) == 0);
    nodelay = value;
  }
  REQUIRE_MESSAGE(nodelay.has_value(), "the server's socket of the connection was not found");
  CHECK(*nodelay != 0);
}

TEST_CASE("server: pipelined and chunked requests are answered in order") {
  TestHandler handler;
  TestServer ts(handler);
  Client client(ts.port());
  REQUIRE_FALSE(client.send_raw(
      "POST /chunked HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
      "GET /next HTTP/1.1\r\nHost: x\r\n\r\n"));
  CHECK(client.receive().body() == "POST /chunked 11");
  CHECK(client.receive().body() == "GET /next 0");
}

TEST_CASE("server: an HTTP/1.0 request without keep-alive is answered, then closed") {
  TestHandler handler;
  TestServer ts(handler);
  Client client(ts.port());
  REQUIRE_FALSE(client.send(get("/old", 10)));
  Response res = client.receive();
  CHECK(res.version() == 10);
  CHECK(res.body() == "GET /old 0");
  CHECK_FALSE(res.keep_alive());
  CHECK(client.next_read_error() == net::error::eof);
}

TEST_CASE("server: Expect: 100-continue gets 100 Continue before the body is sent") {
  TestHandler handler;
  TestServer ts(handler);
  Client client(ts.port());
  REQUIRE_FALSE(client.send_raw(
      "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n"));
  CHECK(client.receive().result() == bhttp::status::continue_);
  REQUIRE_FALSE(client.send_raw("abcd"));
  CHECK(client.receive().body() == "POST /upload 4");
}

TEST_CASE("server: a body over the limit is answered 413 after the client sent it all") {
  TestHandler handler;
  TestServer ts(handler);  // max_body_bytes 64 KiB
  Client client(ts.port());
  // The whole MiB must go through: the server keeps reading (and discarding) after its 413.
  REQUIRE_FALSE(client.send(post("/v1/payments", std::string(1024 * 1024, 'x'))));
  check_problem(client.receive(), 413, "payload-too-large");
  // A clean FIN, not a reset that could have destroyed the response.
  CHECK(client.next_read_error() == net::error::eof);
  CHECK(handler.handled() == 0);
}

TEST_CASE("server: a chunked body over the limit is answered 413") {
  TestHandler handler;
  auto cfg = test_config();
  cfg.max_body_bytes = 8;
  TestServer ts(handler, cfg);
  Client client(ts.port());
  REQUIRE_FALSE(client.send_raw(
      "POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
      "6\r\nabcdef\r\n6\r\nghijkl\r\n0\r\n\r\n"));
  check_problem(client.receive(), 413, "payload-too-large");
  CHECK(client.next_read_error() == net::error::eof);
}

TEST_CASE("server: a request refused by the handler's screen is answered before its body, then closed") {
  TestHandler handler;
  TestServer ts(handler);  // max_body_bytes 64 KiB
  {
    // Nothing of the body is sent: the answer does not wait for it.
    Client client(ts.port());
    REQUIRE_FALSE(client.send_raw("POST /screened HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n"));
    check_problem(client.receive(), 401, "unauthorized");
    CHECK(client.next_read_error() == net::error::eof);
  }
  {
    // A body over the limit: the screen's answer, not a 413; the body is discarded, and the
    // close is a clean FIN.
    Client client(ts.port());
    REQUIRE_FALSE(client.send(post("/screened", std::string(1024 * 1024, 'x'))));
    check_problem(client.receive(), 401, "unauthorized");
    CHECK(client.next_read_error() == net::error::eof);
  }
  {
    // Expect: 100-continue gets the refusal instead of 100 Continue.
    Client client(ts.port());
    REQUIRE_FALSE(client.send_raw("POST /screened HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                                  "Content-Length: 10\r\n\r\n"));
    check_problem(client.receive(), 401, "unauthorized");
  }
  CHECK(handler.handled() == 0);
  // Requests the screen lets through still get the body limit.
  Client client(ts.port());
  REQUIRE_FALSE(client.send(post("/other", std::string(1024 * 1024, 'x'))));
  check_problem(client.receive(), 413, "payload-too-large");
}

TEST_CASE("server: headers over the limit are answered 431") {
  TestHandler handler;
  auto cfg = test_config();
  cfg.max_header_bytes = 4096;
  TestServer ts(handler, cfg);
  Client client(ts.port());
  Request req = get("/big");
  req.set("X-Padding", std::string(8192, 'p'));
  REQUIRE_FALSE(client.send(req));
  check_problem(client.receive(), 431, "headers-too-large");
  CHECK(client.next_read_error() == net::error::eof);
}

TEST_CASE("server: a malformed request is answered 400 and closed") {
  TestHandler handler;
  TestServer ts(handler);
  Client client(ts.port());
  REQUIRE_FALSE(client.send_raw("this is not http\r\n\r\n"));
  check_problem(client.receive(), 400, "bad-request");
  CHECK(client.next_read_error() == net::error::eof);
  CHECK(handler.handled() == 0);
}

TEST_CASE("server: a responder called from another thread answers, on keep-alive too") {
  TestHandler handler;
  TestServer ts(handler);
  Client client(ts.port());
  REQUIRE_FALSE(client.send(get("/async/1")));
  CHECK(client.receive().body() == "GET /async/1 0");
  REQUIRE_FALSE(client.send(post("/async/2", "xyz")));
  Response res = client.receive();
  CHECK(res.body() == "POST /async/2 3");
  CHECK(res.keep_alive());
}

TEST_CASE("server: a second call of a responder is dropped") {
  TestHandler handler;
  TestServer ts(handler);
  Client client(ts.port());
  REQUIRE_FALSE(client.send(get("/twice")));
  CHECK(client.receive().body() == "GET /twice 0");
  // Had the second answer been written, it would be read here instead.
  REQUIRE_FALSE(client.send(get("/after")));
  CHECK(client.receive().body() == "GET /after 0");
}

TEST_CASE("server: a responder called after the client left is harmless") {
  TestHandler handler;
  TestServer ts(handler);
  {
    Client client(ts.port());
    REQUIRE_FALSE(client.send(get("/defer/gone")));
    REQUIRE(eventually([&] { return handler.deferred() == 1; }));
    client.close();
  }
  handler.answer_deferred();
  CHECK(eventually([&] { return ts.server().open_sessions() == 0; }));
  Client next(ts.port());
  REQUIRE_FALSE(next.send(get("/still-serving")));
  CHECK(next.receive().body() == "GET /still-serving 0");
}

TEST_CASE("server: read timeout answers half a request with 408 and closes") {
  TestHandler handler;
  auto cfg = test_config();
  cfg.read_timeout = 150ms;
  TestServer ts(handler, cfg);

  Client partial(ts.port());
  REQUIRE_FALSE(partial.send_raw("POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc"));
  check_problem(partial.receive(), 408, "request-timeout");
  CHECK(partial.next_read_error() == net::error::eof);

  // A connection that never sends a byte is closed without an answer.
  Client silent(ts.port());
  CHECK(silent.next_read_error() == net::error::eof);
  CHECK(handler.handled() == 0);
}

TEST_CASE("server: an idle keep-alive connection closes after idle_timeout") {
  TestHandler handler;
  auto cfg = test_config();
  cfg.idle_timeout = 100ms;
  TestServer ts(handler, cfg);
  Client client(ts.port());
  REQUIRE_FALSE(client.send(get("/once")));
  CHECK(client.receive().keep_alive());
  CHECK(client.next_read_error() == net::error::eof);
  CHECK(eventually([&] { return ts.server().open_sessions() == 0; }));
}

TEST_CASE("server: stop_accepting closes idle connections, refuses new ones, finishes in flight") {
  TestHandler handler;
  TestServer ts(handler);
  Client idle(ts.port());
  REQUIRE_FALSE(idle.send(get("/first")));
  CHECK(idle.receive().keep_alive());
  Client busy(ts.port());
  REQUIRE_FALSE(busy.send(get("/defer/in-flight")));
  REQUIRE(eventually([&] { return handler.deferred() == 1; }));
  CHECK(ts.server().open_sessions() == 2);

  ts.server().stop_accepting();
  CHECK(idle.next_read_error() == net::error::eof);
  Client refused(ts.port());
  CHECK(refused.connect_error() == net::error::connection_refused);

  handler.answer_deferred();
  Response res = busy.receive();
  CHECK(res.body() == "GET /defer/in-flight 0");
  CHECK_FALSE(res.keep_alive());
  CHECK(res[bhttp::field::connection] == "close");
  CHECK(busy.next_read_error() == net::error::eof);
  busy.close();  // the server discards input until the client's FIN (lingering close)
  CHECK(eventually([&] { return ts.server().open_sessions() == 0; }));
}

TEST_CASE("server: open_sessions counts open connections") {
  TestHandler handler;
  TestServer ts(handler);
  CHECK(ts.server().open_sessions() == 0);
  auto a = std::make_unique<Client>(ts.port());
  auto b = std::make_unique<Client>(ts.port());
  for (Client* c : {a.get(), b.get()}) {
    REQUIRE_FALSE(c->send(get("/x")));
    c->receive();
  }
  CHECK(ts.server().open_sessions() == 2);
  a.reset();
  CHECK(eventually([&] { return ts.server().open_sessions() == 1; }));
  b.reset();
  CHECK(eventually([&] { return ts.server().open_sessions() == 0; }));
}

namespace {

// A client whose connection is idle: its request answered, and the server waiting for the next.
void make_idle(Client& client, TestServer& ts, std::size_t waiting_after) {
  REQUIRE_FALSE(client.send(get("/idle")));
  CHECK(client.receive().keep_alive());
  REQUIRE(eventually([&] { return ts.server().waiting_sessions() == waiting_after; }));
}

}  // namespace

TEST_CASE("server: at max_connections the longest-idle connection gives way, a busy one never") {
  TestHandler handler;
  auto cfg = test_config();
  cfg.max_connections = 3;
  cfg.reserved_connections = 0;
  TestServer ts(handler, cfg);
  Client busy(ts.port());
  REQUIRE_FALSE(busy.send(get("/defer/held")));
  REQUIRE(eventually([&] { return handler.deferred() == 1; }));
  Client older(ts.port());
  make_idle(older, ts, 1);
  Client younger(ts.port());
  make_idle(younger, ts, 2);

  Client next(ts.port());
  REQUIRE_FALSE(next.send(get("/next")));
  CHECK(next.receive().body() == "GET /next 0");
  CHECK(older.next_read_error() == net::error::eof);
  CHECK(ts.server().open_sessions() == 3);
  REQUIRE_FALSE(younger.send(get("/younger")));
  CHECK(younger.receive().body() == "GET /younger 0");

  // Waiting for a response is not idle: the held request is answered.
  handler.answer_deferred();
  CHECK(busy.receive().body() == "GET /defer/held 0");
}

TEST_CASE("server: with nothing idle to evict, connections beyond max_connections are closed at once") {
  TestHandler handler;
  auto cfg = test_config();
  cfg.max_connections = 1;
  TestServer ts(handler, cfg);
  auto first = std::make_unique<Client>(ts.port());
  REQUIRE_FALSE(first->send(get("/defer/one")));
  REQUIRE(eventually([&] { return handler.deferred() == 1; }));

  Client extra(ts.port());
  REQUIRE_FALSE(extra.connect_error());  // the kernel accepts; the server closes it
  CHECK(extra.next_read_error() == net::error::eof);
  CHECK(ts.server().open_sessions() == 1);

  handler.answer_deferred();
  CHECK(first->receive().body() == "GET /defer/one 0");
  first.reset();
  REQUIRE(eventually([&] { return ts.server().open_sessions() == 0; }));
  Client later(ts.port());
  REQUIRE_FALSE(later.send(get("/two")));
  CHECK(later.receive().body() == "GET /two 0");
}

TEST_CASE("server: a client address over max_connections_per_client evicts its own idle one") {
  TestHandler handler;
  auto cfg = test_config();
  cfg.max_connections_per_client = 2;
  TestServer ts(handler, cfg);
  Client a(ts.port());
  make_idle(a, ts, 1);
  Client b(ts.port());
  make_idle(b, ts, 2);
  Client c(ts.port());
  REQUIRE_FALSE(c.send(get("/c")));
  CHECK(c.receive().body() == "GET /c 0");
  CHECK(a.next_read_error() == net::error::eof);

  // With none of its connections idle, the next one is closed unanswered.
  REQUIRE_FALSE(b.send(get("/defer/b")));
  REQUIRE_FALSE(c.send(get("/defer/c")));
  REQUIRE(eventually([&] { return handler.deferred() == 2; }));
  Client d(ts.port());
  CHECK(d.next_read_error() == net::error::eof);
  handler.answer_deferred();
  CHECK(b.receive().body() == "GET /defer/b 0");
  CHECK(c.receive().body() == "GET /defer/c 0");
}

TEST_CASE("server: reserved connections serve one operator request each, and nothing else") {
  TestHandler handler;
  auto cfg = test_config();
  cfg.max_connections = 3;
  cfg.reserved_connections = 2;
  TestServer ts(handler, cfg);
  Client busy(ts.port());
  REQUIRE_FALSE(busy.send(get("/defer/ordinary")));  // the one ordinary slot
  REQUIRE(eventually([&] { return handler.deferred() == 1; }));

  {
    Client probe(ts.port());
    REQUIRE_FALSE(probe.send(get("/probe")));
    const Response res = probe.receive();
    CHECK(res.body() == "GET /probe 0");
    CHECK_FALSE(res.keep_alive());
    CHECK(probe.next_read_error() == net::error::eof);
  }
  {
    Client other(ts.port());
    REQUIRE_FALSE(other.send(post("/other", "unread")));
    const Response res = other.receive();
    check_problem(res, 503, "too-many-connections");
    CHECK(res[bhttp::field::retry_after] == "1");
  }
  // Both reserved connections busy: a new one is closed unanswered.
  REQUIRE(eventually([&] { return ts.server().open_sessions() == 1; }));
  Client held_1(ts.port());
  REQUIRE_FALSE(held_1.send(get("/defer/probe-1")));
  Client held_2(ts.port());
  REQUIRE_FALSE(held_2.send(get("/defer/probe-2")));
  REQUIRE(eventually([&] { return handler.deferred() == 3; }));
  Client over(ts.port());
  CHECK(over.next_read_error() == net::error::eof);
  CHECK(handler.handled() == 4);  // the 503 was not handled

  handler.answer_deferred();
  CHECK(busy.receive().keep_alive());  // an ordinary connection stays open
  CHECK_FALSE(held_1.receive().keep_alive());
  CHECK_FALSE(held_2.receive().keep_alive());
}

TEST_CASE("server: start() on a port in use throws std::system_error") {
  TestHandler handler;
  TestServer ts(handler);
  net::io_context ioc;
  auto cfg = test_config();
  cfg.listen_port = ts.port();
  Server second(ioc, cfg, handler);
  CHECK_THROWS_AS(second.start(), std::system_error);
}

// --- HTTPS ------------------------------------------------------------------------------------

namespace {

using payorch::test::TlsClient;
using payorch::test::TlsClientOptions;

// One self-signed certificate for 127.0.0.1 per test run (key generation is the slow part).
const payorch::test::TestCert& server_cert() {
  static const payorch::test::TestCert cert = payorch::test::make_self_signed_cert("IP:127.0.0.1");
  return cert;
}

payorch::config::Server tls_config() {
  payorch::config::Server cfg = test_config();
  cfg.tls = payorch::config::Tls{"cert.pem", "key.pem", server_cert().cert_pem,
                                 server_cert().key_pem};
  return cfg;
}

TlsClientOptions trusting_server() {
  TlsClientOptions options;
  options.trusted_cert_pem = server_cert().cert_pem;
  options.timeout = client_deadline;
  return options;
}

Response receive_tls(TlsClient& client) {
  TlsClient::error_code ec;
  std::optional<Response> res = client.receive(ec);
  REQUIRE_MESSAGE(res.has_value(), ec.message());
  return std::move(*res);
}

}  // namespace

TEST_CASE("server tls: requests are served over HTTPS, keep-alive included") {
  TestHandler handler;
  TestServer ts(handler, tls_config());
  TlsClient client(ts.port(), trusting_server());
  REQUIRE_FALSE(client.connect_error());
  REQUIRE_FALSE(client.handshake());
  CHECK(client.protocol() == "TLSv1.3");

  REQUIRE_FALSE(client.send(get("/a")));
  Response first = receive_tls(client);
  CHECK(first.body() == "GET /a 0");
  CHECK(first.keep_alive());
  REQUIRE_FALSE(client.send(post("/async/b", "hello")));
  CHECK(receive_tls(client).body() == "POST /async/b 5");
  // Pipelined: both requests arrive in one TLS write and are answered in order.
  REQUIRE_FALSE(client.send_raw("GET /p1 HTTP/1.1\r\nHost: x\r\n\r\nGET /p2 HTTP/1.1\r\nHost: x\r\n\r\n"));
  CHECK(receive_tls(client).body() == "GET /p1 0");
  CHECK(receive_tls(client).body() == "GET /p2 0");
  CHECK(handler.handled() == 4);
}

TEST_CASE("server tls: TLS 1.2 is accepted, TLS 1.1 and an untrusted certificate are not") {
  TestHandler handler;
  TestServer ts(handler, tls_config());
  {
    TlsClientOptions tls12 = trusting_server();
    tls12.min_version = TLS1_2_VERSION;
    tls12.max_version = TLS1_2_VERSION;
    TlsClient client(ts.port(), tls12);
    REQUIRE_FALSE(client.handshake());
    CHECK(client.protocol() == "TLSv1.2");
    REQUIRE_FALSE(client.send(get("/v12")));
    CHECK(receive_tls(client).body() == "GET /v12 0");
  }
  {
    TlsClientOptions tls11 = trusting_server();
    tls11.min_version = TLS1_1_VERSION;
    tls11.max_version = TLS1_1_VERSION;
    TlsClient client(ts.port(), tls11);
    const TlsClient::error_code ec = client.handshake();
    CHECK(ec);
    // The server's alert, not a client that could not even offer TLS 1.1.
    CHECK_MESSAGE(ec.message().find("protocol version") != std::string::npos, ec.message());
  }
  {
    TlsClientOptions stranger = trusting_server();
    stranger.trusted_cert_pem = payorch::test::make_self_signed_cert("IP:127.0.0.1").cert_pem;
    TlsClient client(ts.port(), stranger);
    const TlsClient::error_code ec = client.handshake();
    CHECK_MESSAGE(ec.message().find("certificate verify failed") != std::string::npos,
                  ec.message());
  }
  CHECK(handler.handled() == 1);
  CHECK(eventually([&] { return ts.server().open_sessions() == 0; }));
}

TEST_CASE("server tls: plain HTTP to the HTTPS port gets a cleartext 400 and is closed") {
  TestHandler handler;
  TestServer ts(handler, tls_config());
  Client client(ts.port());
  REQUIRE_FALSE(client.send(post("/v1/payments", "{}")));
  Response res = client.receive();
  check_problem(res, 400, "bad-request");
  CHECK(res.body().find("HTTPS") != std::string::npos);
  CHECK(client.next_read_error() == net::error::eof);
  CHECK(handler.handled() == 0);
}

TEST_CASE("server tls: a handshake that never finishes is dropped after read_timeout") {
  TestHandler handler;
  auto cfg = tls_config();
  cfg.read_timeout = 200ms;
  TestServer ts(handler, cfg);
  const auto started = std::chrono::steady_clock::now();

  Client silent(ts.port());  // connects, says nothing
  Client stalled(ts.port());  // starts a ClientHello and stops
  REQUIRE_FALSE(stalled.send_raw(std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11)));
  TlsClient idle(ts.port(), trusting_server());  // finishes the handshake, sends no request
  REQUIRE_FALSE(idle.handshake());

  CHECK(silent.next_read_error() == net::error::eof);
  const error_code stalled_end = stalled.next_read_error();
  CHECK_MESSAGE((stalled_end == net::error::eof || stalled_end == net::error::connection_reset),
                stalled_end.message());
  std::size_t got = 0;
  CHECK(idle.next_read_error(got));  // closed: no response, no request was made
  CHECK(got == 0);
  const auto elapsed = std::chrono::steady_clock::now() - started;
  CHECK(elapsed >= 200ms);
  CHECK(elapsed < client_deadline);
  CHECK(eventually([&] { return ts.server().open_sessions() == 0; }));
  CHECK(handler.handled() == 0);
}

TEST_CASE("server tls: the limits and timeouts of plain HTTP hold over TLS") {
  TestHandler handler;
  auto cfg = tls_config();
  cfg.read_timeout = 300ms;
  cfg.idle_timeout = 300ms;
  cfg.max_header_bytes = 4096;
  TestServer ts(handler, cfg);
  std::size_t got = 0;

  SUBCASE("a body over the limit is answered 413 after the client sent it all") {
    TlsClient client(ts.port(), trusting_server());
    REQUIRE_FALSE(client.handshake());
    REQUIRE_FALSE(client.send(post("/v1/payments", std::string(1024 * 1024, 'x'))));
    check_problem(receive_tls(client), 413, "payload-too-large");
    CHECK(client.next_read_error(got) == net::error::eof);  // the server's close_notify
  }
  SUBCASE("headers over the limit are answered 431") {
    TlsClient client(ts.port(), trusting_server());
    REQUIRE_FALSE(client.handshake());
    Request req = get("/big");
    req.set("X-Padding", std::string(8192, 'p'));
    REQUIRE_FALSE(client.send(req));
    check_problem(receive_tls(client), 431, "headers-too-large");
    CHECK(client.next_read_error(got) == net::error::eof);
  }
  SUBCASE("half a request is answered 408 after read_timeout") {
    TlsClient client(ts.port(), trusting_server());
    REQUIRE_FALSE(client.handshake());
    REQUIRE_FALSE(client.send_raw("POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc"));
    check_problem(receive_tls(client), 408, "request-timeout");
    CHECK(client.next_read_error(got) == net::error::eof);
  }
  SUBCASE("a malformed request is answered 400") {
    TlsClient client(ts.port(), trusting_server());
    REQUIRE_FALSE(client.handshake());
    REQUIRE_FALSE(client.send_raw("this is not http\r\n\r\n"));
    check_problem(receive_tls(client), 400, "bad-request");
  }
  SUBCASE("an idle keep-alive connection closes after idle_timeout") {
    TlsClient client(ts.port(), trusting_server());
    REQUIRE_FALSE(client.handshake());
    REQUIRE_FALSE(client.send(get("/once")));
    CHECK(receive_tls(client).keep_alive());
    CHECK(client.next_read_error(got));
    CHECK(got == 0);
  }
  CHECK(handler.handled() <= 1);
  CHECK(eventually([&] { return ts.server().open_sessions() == 0; }));
}

TEST_CASE("server tls: stop_accepting closes idle TLS connections and finishes those in flight") {
  TestHandler handler;
  TestServer ts(handler, tls_config());
  TlsClient idle(ts.port(), trusting_server());
  REQUIRE_FALSE(idle.handshake());
  REQUIRE_FALSE(idle.send(get("/first")));
  CHECK(receive_tls(idle).keep_alive());
  TlsClient busy(ts.port(), trusting_server());
  REQUIRE_FALSE(busy.handshake());
  REQUIRE_FALSE(busy.send(get("/defer/in-flight")));
  REQUIRE(eventually([&] { return handler.deferred() == 1; }));

  ts.server().stop_accepting();
  std::size_t got = 0;
  CHECK(idle.next_read_error(got));
  CHECK(got == 0);
  handler.answer_deferred();
  Response res = receive_tls(busy);
  CHECK(res.body() == "GET /defer/in-flight 0");
  CHECK_FALSE(res.keep_alive());
  CHECK(busy.next_read_error(got) == net::error::eof);
  busy.tcp().close();
  CHECK(eventually([&] { return ts.server().open_sessions() == 0; }));
}

TEST_CASE("server tls: at max_connections an idle TLS connection gives way") {
  TestHandler handler;
  auto cfg = tls_config();
  cfg.max_connections = 1;
  TestServer ts(handler, cfg);
  TlsClient idle(ts.port(), trusting_server());
  REQUIRE_FALSE(idle.handshake());
  REQUIRE_FALSE(idle.send(get("/first")));
  CHECK(receive_tls(idle).keep_alive());
  REQUIRE(eventually([&] { return ts.server().waiting_sessions() == 1; }));

  TlsClient next(ts.port(), trusting_server());
  REQUIRE_FALSE(next.handshake());
  REQUIRE_FALSE(next.send(get("/next")));
  CHECK(receive_tls(next).body() == "GET /next 0");
  std::size_t got = 0;
  CHECK(idle.next_read_error(got));
  CHECK(got == 0);
}

TEST_CASE("server tls: a key that does not match the certificate is refused at construction") {
  TestHandler handler;
  net::io_context ioc;
  auto cfg = tls_config();
  cfg.tls->key_pem = payorch::test::make_self_signed_cert("IP:127.0.0.1").key_pem;
  CHECK_THROWS_WITH_AS(Server(ioc, cfg, handler),
                       doctest::Contains("key.pem: cannot use the private key with the "
                                         "certificate in cert.pem: key values mismatch"),
                       std::runtime_error);
  cfg.tls->cert_pem = "not a certificate";
  CHECK_THROWS_WITH_AS(Server(ioc, cfg, handler), doctest::Contains("cert_file cert.pem"),
                       std::runtime_error);
}
