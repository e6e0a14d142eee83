#include "support/webhook_receiver.h"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/steady_timer.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "support/process.h"

namespace payorch::test {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

std::string ReceivedWebhook::header(std::string_view name) const {
  const auto it = headers.find(std::string(name));
  return it == headers.end() ? std::string() : it->second;
}

WebhookReceiver::WebhookReceiver() {
  listen(0);
  thread_ = std::thread([this] {
    auto guard = boost::asio::make_work_guard(ioc_);
    ioc_.run();
  });
}

WebhookReceiver::~WebhookReceiver() {
  {
    std::lock_guard lock(mutex_);
    for (auto& s : servers_) s->stop_accepting();
  }
  ioc_.stop();
  thread_.join();
  servers_.clear();
  if (placeholder_ >= 0) ::close(placeholder_);
}

void WebhookReceiver::listen(std::uint16_t port) {
  config::Server cfg;
  cfg.listen_host = "127.0.0.1";
  cfg.listen_port = port;
  auto server = std::make_unique<http::Server>(ioc_, cfg, *this);
  server->start();
  std::lock_guard lock(mutex_);
  port_ = server->port();
  servers_.push_back(std::move(server));
  up_ = true;
}

void WebhookReceiver::answer_with(unsigned status) {
  std::lock_guard lock(mutex_);
  status_ = status;
}

void WebhookReceiver::fail_next(std::size_t n, unsigned status) {
  std::lock_guard lock(mutex_);
  script_.assign(n, status);
}

void WebhookReceiver::script(std::vector<unsigned> statuses, unsigned fallback) {
  std::lock_guard lock(mutex_);
  script_.assign(statuses.begin(), statuses.end());
  status_ = fallback;
}

void WebhookReceiver::delay_answers(std::chrono::milliseconds delay) {
  std::lock_guard lock(mutex_);
  delay_ = delay;
}

void WebhookReceiver::go_down() {
  std::lock_guard lock(mutex_);
  if (!up_) return;
  servers_.back()->stop_accepting();
  up_ = false;
  // Both sockets set SO_REUSEADDR and this one never listens: the server of come_back() may
  // bind beside it, while an outgoing connection or another listener may not.
  placeholder_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int on = 1;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port_);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (placeholder_ < 0 ||
      ::setsockopt(placeholder_, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) != 0 ||
      ::bind(placeholder_, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    throw std::runtime_error("webhook receiver: cannot hold port " + std::to_string(port_));
  }
}

void WebhookReceiver::come_back() {
  std::uint16_t port = 0;
  {
    std::lock_guard lock(mutex_);
    if (up_) return;
    port = port_;
  }
  listen(port);
  std::lock_guard lock(mutex_);
  ::close(placeholder_);
  placeholder_ = -1;
}

bool WebhookReceiver::up() const {
  std::lock_guard lock(mutex_);
  return up_;
}

std::string WebhookReceiver::url(std::string_view path) const {
  return "http://127.0.0.1:" + std::to_string(port_) + std::string(path);
}

std::vector<ReceivedWebhook> WebhookReceiver::received() const {
  std::lock_guard lock(mutex_);
  return received_;
}

std::size_t WebhookReceiver::count() const {
  std::lock_guard lock(mutex_);
  return received_.size();
}

bool WebhookReceiver::wait_for(std::size_t n, std::chrono::milliseconds timeout) const {
  return eventually([&] { return count() >= n; }, timeout);
}

bool WebhookReceiver::wait_until(
    const std::function<bool(const std::vector<ReceivedWebhook>&)>& done,
    std::chrono::milliseconds timeout) const {
  return eventually([&] { return done(received()); }, timeout);
}

void WebhookReceiver::handle(http::Request&& req, http::Responder done) {
  unsigned status = 200;
  std::chrono::milliseconds delay{0};
  {
    std::lock_guard lock(mutex_);
    ReceivedWebhook r;
    r.method = std::string(req.method_string());
    r.target = std::string(req.target());
    for (const auto& field : req) r.headers[lower(field.name_string())] = std::string(field.value());
    r.body = req.body();
    r.arrived_at = std::chrono::steady_clock::now();
    if (!script_.empty()) {
      status = script_.front();
      script_.pop_front();
    } else {
      status = status_;
    }
    r.answered = status;
    received_.push_back(std::move(r));
    delay = delay_;
  }
  http::Response res{static_cast<http::beast_http::status>(status), 11};
  res.set(http::beast_http::field::content_type, "text/plain");
  res.body() = status < 300 ? "ok" : "not now";
  res.prepare_payload();
  if (delay.count() == 0) return done(std::move(res));
  auto timer = std::make_shared<boost::asio::steady_timer>(ioc_, delay);
  timer->async_wait([timer, done = std::move(done), res = std::move(res)](
                        boost::system::error_code) mutable { done(std::move(res)); });
}

}  // namespace payorch::test
