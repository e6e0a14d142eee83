#pragma once
// A scripted HTTP receiver for tests — a tenant's webhook endpoint, or where the vendor sim
// sends its callbacks — in-process on its own io_context thread and port 0: records every
// request as it arrives and answers as scripted — 2xx, a list of statuses for the next
// requests, after a delay — and can be truly down (nothing listening: connections are refused)
// and come back later on the same port. It checks nothing itself: tests verify signatures,
// bodies and order from what it recorded.
#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "http/server.h"

namespace payorch::test {

struct ReceivedWebhook {
  std::string method;
  std::string target;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  std::chrono::steady_clock::time_point arrived_at;
  unsigned answered = 0;  // the status it was (or will be, after the delay) answered with

  // The header's value, "" when absent; `name` lower-case.
  std::string header(std::string_view name) const;
};

class WebhookReceiver final : public http::Handler {
public:
  // Listening on 127.0.0.1, a free port.
  WebhookReceiver();
  ~WebhookReceiver() override;
  WebhookReceiver(const WebhookReceiver&) = delete;
  WebhookReceiver& operator=(const WebhookReceiver&) = delete;

  // Every later request is answered with `status` (200 initially).
  void answer_with(unsigned status);
  // The next `n` requests are answered with `status`, then the answer_with() status again.
  void fail_next(std::size_t n, unsigned status = 500);
  // The next requests are answered with `statuses`, in order; then `fallback` (which becomes
  // the answer_with() status).
  void script(std::vector<unsigned> statuses, unsigned fallback = 200);
  // Answers are held back this long (the request is recorded at once). 0 = answer at once.
  void delay_answers(std::chrono::milliseconds delay);

  // Stops listening (new connections are refused) and closes idle connections; a request
  // already being answered still gets its answer. The port stays bound (by a socket that does
  // not listen), so no other process's connection or listener takes it meanwhile.
  void go_down();
  // Listens again on the same port, then lets the placeholder go.
  void come_back();
  bool up() const;

  std::uint16_t port() const { return port_; }
  // http://127.0.0.1:PORT<path>
  std::string url(std::string_view path = "/hooks/payorch") const;

  std::vector<ReceivedWebhook> received() const;
  std::size_t count() const;
  // Waits (bounded) until at least `n` requests arrived; returns whether they did.
  bool wait_for(std::size_t n, std::chrono::milliseconds timeout = std::chrono::seconds(5)) const;
  // Waits (bounded) until `done(received())` holds; returns whether it did.
  bool wait_until(const std::function<bool(const std::vector<ReceivedWebhook>&)>& done,
                  std::chrono::milliseconds timeout = std::chrono::seconds(10)) const;

  void handle(http::Request&& req, http::Responder done) override;

private:
  void listen(std::uint16_t port);

  mutable std::mutex mutex_;
  std::vector<ReceivedWebhook> received_;
  unsigned status_ = 200;
  std::deque<unsigned> script_;  // answers for the next requests, before status_
  std::chrono::milliseconds delay_{0};
  bool up_ = false;
  std::uint16_t port_ = 0;
  int placeholder_ = -1;  // while down: bound to port_, not listening
  boost::asio::io_context ioc_;
  // Each come_back() listens with a new server; stopped ones are kept until the io_context
  // stops, since their connections may still be answering.
  std::vector<std::unique_ptr<http::Server>> servers_;
  std::thread thread_;
};

}  // namespace payorch::test
