#include "vendor_sim/callback_receiver.h"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/beast/core/string.hpp>

#include <algorithm>
#include <cctype>

#include "support/daemon.h"

namespace payorch::test {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

CallbackReceiver::CallbackReceiver() {
  config::Server cfg;
  cfg.listen_host = "127.0.0.1";
  cfg.listen_port = 0;
  server_ = std::make_unique<http::Server>(ioc_, cfg, *this);
  server_->start();
  thread_ = std::thread([this] {
    auto guard = boost::asio::make_work_guard(ioc_);
    ioc_.run();
  });
}

CallbackReceiver::~CallbackReceiver() {
  server_->stop_accepting();
  ioc_.stop();
  thread_.join();
  server_.reset();
}

void CallbackReceiver::script(std::vector<unsigned> statuses, unsigned fallback) {
  std::lock_guard lock(mutex_);
  script_.assign(statuses.begin(), statuses.end());
  fallback_ = fallback;
}

std::uint16_t CallbackReceiver::port() const { return server_->port(); }

std::string CallbackReceiver::url() const {
  return "http://127.0.0.1:" + std::to_string(port()) + "/v1/callbacks/sim";
}

std::vector<ReceivedCallback> CallbackReceiver::received() const {
  std::lock_guard lock(mutex_);
  return received_;
}

bool CallbackReceiver::wait_for(std::size_t n, std::chrono::milliseconds timeout) const {
  return eventually([&] { return received().size() >= n; }, timeout);
}

void CallbackReceiver::handle(http::Request&& req, http::Responder done) {
  unsigned status = 200;
  {
    std::lock_guard lock(mutex_);
    ReceivedCallback r;
    r.target = std::string(req.target());
    for (const auto& field : req) r.headers[lower(field.name_string())] = std::string(field.value());
    r.body = req.body();
    received_.push_back(std::move(r));
    if (!script_.empty()) {
      status = script_.front();
      script_.pop_front();
    } else {
      status = fallback_;
    }
  }
  http::Response res{static_cast<http::beast_http::status>(status), 11};
  res.set(http::beast_http::field::content_type, "text/plain");
  res.body() = "ok";
  res.prepare_payload();
  done(std::move(res));
}

}  // namespace payorch::test
