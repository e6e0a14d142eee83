#pragma once
// Drives an HttpClient from the test thread: each call runs the client's io_context until the
// request's handler ran.
#include <boost/asio/io_context.hpp>

#include <optional>

#include "net/http_client.h"

namespace payorch::test {

// Client options for tests: the system trust store is not loaded (it costs ~100 ms per client
// and no test server has a publicly trusted certificate); verification stays on.
inline net::ClientOptions test_options() {
  net::ClientOptions options;
  options.system_trust_store = false;
  return options;
}

struct ClientFixture {
  explicit ClientFixture(net::ClientOptions options = test_options())
      : client(ioc.get_executor(), std::move(options)) {}

  net::HttpResult run(net::Request req) {
    std::optional<net::HttpResult> out;
    client.request(std::move(req), [&out](net::HttpResult r) { out = std::move(r); });
    ioc.restart();
    ioc.run();
    return out ? *out : net::HttpResult{net::HttpResult::not_sent, 0, {}, {}, "handler never ran"};
  }

  boost::asio::io_context ioc;
  net::HttpClient client;
};

inline net::Request get(std::string url, std::chrono::milliseconds timeout = std::chrono::seconds(2)) {
  net::Request req;
  req.url = std::move(url);
  req.connect_timeout = std::chrono::milliseconds(500);
  req.timeout = timeout;
  return req;
}

}  // namespace payorch::test
