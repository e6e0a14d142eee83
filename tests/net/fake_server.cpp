#include "net/fake_server.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <utility>

namespace payorch::test {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

std::uint16_t unused_port() {
  asio::io_context ioc;
  tcp::acceptor acceptor(ioc, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  return acceptor.local_endpoint().port();  // closed on return: nothing listens there
}

// --- FakeServer ------------------------------------------------------------------------------

class FakeServer::Handler : public http::Handler {
public:
  explicit Handler(Script script) : script_(std::move(script)) {}

  void handle(http::Request&& req, http::Responder done) override {
    Reply reply = script_(req);
    std::lock_guard lock(mutex_);
    requests_.push_back(std::move(req));
    switch (reply.what) {
      case Reply::respond: done(std::move(reply.response)); break;
      case Reply::drop: break;  // the last reference to the session goes: it closes
      case Reply::hold: held_.push_back(std::move(done)); break;
    }
  }

  std::vector<http::Request> requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }
  void release_held() {
    std::lock_guard lock(mutex_);
    held_.clear();
  }

private:
  Script script_;
  mutable std::mutex mutex_;
  std::vector<http::Request> requests_;
  std::vector<http::Responder> held_;
};

config::Server FakeServer::default_config() {
  config::Server cfg;
  cfg.listen_host = "127.0.0.1";
  cfg.listen_port = 0;
  cfg.read_timeout = 5s;
  cfg.idle_timeout = 5s;
  return cfg;
}

FakeServer::FakeServer(Script script, config::Server cfg)
    : handler_(std::make_unique<Handler>(std::move(script))),
      server_(std::make_unique<http::Server>(ioc_, cfg, *handler_)) {
  server_->start();
  thread_ = std::thread([this] {
    auto work = asio::make_work_guard(ioc_);
    ioc_.run();
  });
}

FakeServer::~FakeServer() {
  server_->stop_accepting();
  ioc_.stop();
  thread_.join();
  handler_->release_held();  // held responders keep sessions that must die before ioc_
  server_.reset();
}

std::size_t FakeServer::request_count() const { return handler_->requests().size(); }

std::vector<http::Request> FakeServer::requests() const { return handler_->requests(); }

bool FakeServer::wait_until_no_connections(std::chrono::milliseconds limit) const {
  return eventually([this] { return open_connections() == 0; }, limit);
}

// --- RawServer -------------------------------------------------------------------------------

RawServer::RawServer(Session session)
    : acceptor_(ioc_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)),
      session_(std::move(session)) {
  port_ = acceptor_.local_endpoint().port();
  asio::co_spawn(ioc_, accept_loop(), asio::detached);
  thread_ = std::thread([this] { ioc_.run(); });
}

RawServer::~RawServer() {
  ioc_.stop();
  thread_.join();
}

asio::awaitable<void> RawServer::accept_loop() {
  for (;;) {
    tcp::socket socket = co_await acceptor_.async_accept(asio::use_awaitable);
    ++accepted_;
    asio::co_spawn(ioc_, session_(std::move(socket)), [](std::exception_ptr) {});
  }
}

}  // namespace payorch::test
