#pragma once
// A tiny HTTP receiver for the sim's callbacks, in-process on its own io_context thread and
// port 0: records every request and answers with scripted statuses.
#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "http/server.h"

namespace payorch::test {

struct ReceivedCallback {
  std::string target;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
};

class CallbackReceiver final : public http::Handler {
public:
  CallbackReceiver();
  ~CallbackReceiver() override;
  CallbackReceiver(const CallbackReceiver&) = delete;
  CallbackReceiver& operator=(const CallbackReceiver&) = delete;

  // The next requests are answered with these statuses, in order; then `fallback`.
  void script(std::vector<unsigned> statuses, unsigned fallback = 200);

  std::uint16_t port() const;
  std::string url() const;  // http://127.0.0.1:PORT/v1/callbacks/sim
  std::vector<ReceivedCallback> received() const;
  // Waits (bounded) until at least `n` requests arrived; returns whether they did.
  bool wait_for(std::size_t n, std::chrono::milliseconds timeout = std::chrono::seconds(5)) const;

  void handle(http::Request&& req, http::Responder done) override;

private:
  mutable std::mutex mutex_;
  std::vector<ReceivedCallback> received_;
  std::deque<unsigned> script_;
  unsigned fallback_ = 200;
  boost::asio::io_context ioc_;
  std::unique_ptr<http::Server> server_;
  std::thread thread_;
};

}  // namespace payorch::test
