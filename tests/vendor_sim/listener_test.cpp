#include "vendor_sim/listener.h"

#include <doctest/doctest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/json/parse.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "support/http_client.h"
#include "support/process.h"

namespace {

using namespace payorch::vendor_sim;
using namespace std::chrono_literals;
namespace json = boost::json;

// The listener on port 0 with its own io thread. /echo answers the body back; /drop lets the
// Responder go unanswered; /later answers from another thread.
struct Running {
  Running()
      : listener(ioc, [this](Request&& req, Responder done) { handle(std::move(req), std::move(done)); }) {
    listener.listen("127.0.0.1", 0);
    thread = std::thread([this] { ioc.run(); });
  }
  ~Running() {
    listener.stop_accepting();
    work.reset();
    ioc.stop();
    thread.join();
    // Each /later thread holds a Responder, and through it the connection and its timer: they
    // must be gone before the io_context they belong to.
    for (auto& t : later) t.join();
  }
  void handle(Request&& req, Responder done) {
    if (req.target() == "/drop") return;
    if (req.target() == "/later") {
      later.emplace_back([done = std::move(done)] { done(json_response(202, json::object{{"later", true}})); });
      return;
    }
    done(json_response(200, json::object{{"body", req.body()}}));
  }
  std::uint16_t port() const { return listener.port(); }

  boost::asio::io_context ioc;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work{
      ioc.get_executor()};
  Listener listener;
  std::thread thread;
  std::vector<std::thread> later;  // started on the io thread, joined after it
};

using payorch::test::eventually;

}  // namespace

TEST_CASE("sim listener: keep-alive requests, JSON answers, answers from another thread") {
  Running r;
  payorch::test::HttpConnection c(r.port());
  auto res = c.request("POST", "/echo", {}, "hello");
  REQUIRE_MESSAGE(res.status == 200, res.describe());
  CHECK(res.header("content-type") == "application/json");
  CHECK(res.header("cache-control") == "no-store");
  CHECK(res.json().at("body").as_string() == "hello");
  res = c.request("GET", "/later");
  CHECK(res.status == 202);
  CHECK(c.is_open());
  CHECK(r.listener.open_connections() == 1);
}

TEST_CASE("sim listener: an unanswered request closes its connection without an answer") {
  Running r;
  const auto res = payorch::test::http_request(r.port(), "POST", "/drop", {}, "x", 5s);
  CHECK(res.status == 0);
  CHECK(!res.transport_error.empty());
  CHECK(eventually([&] { return r.listener.open_connections() == 0; }));
}

TEST_CASE("sim listener: too large, malformed: answered, then closed") {
  Running r;
  const auto big = payorch::test::http_request(r.port(), "POST", "/echo", {}, std::string(64 * 1024 + 1, 'x'));
  CHECK(big.status == 413);
  CHECK(json::parse(big.body).at("error").at("type").as_string() == "invalid_request");
  const auto fits = payorch::test::http_request(r.port(), "POST", "/echo", {}, std::string(64 * 1024, 'x'));
  CHECK(fits.status == 200);
  const auto malformed = payorch::test::send_and_read_to_close(r.port(), "GET / HTTP/1.1\r\nHost x\r\n\r\n", 5s);
  CHECK(malformed.received.starts_with("HTTP/1.1 400"));
  CHECK(malformed.closed);
}

TEST_CASE("sim listener: stop_accepting closes idle connections and refuses new ones") {
  Running r;
  payorch::test::HttpConnection idle(r.port());
  REQUIRE(idle.request("GET", "/echo").status == 200);
  r.listener.stop_accepting();
  CHECK(eventually([&] { return r.listener.open_connections() == 0; }));
  CHECK(payorch::test::http_request(r.port(), "GET", "/echo", {}, {}, 2s).status == 0);
}
