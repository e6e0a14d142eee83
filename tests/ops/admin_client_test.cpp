// The operator commands' client: each way of not getting an answer is one line for the operator.
#include <doctest/doctest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <chrono>
#include <string>
#include <thread>

#include "ops/admin_client.h"
#include "support/ports.h"

using payorch::ops::AdminClient;
using payorch::ops::DaemonAddress;
using payorch::ops::TransportError;
using namespace std::chrono_literals;

namespace {

std::string failure(AdminClient& client) {
  try {
    client.request("GET", "/status");
  } catch (const TransportError& e) {
    return e.what();
  }
  return "(answered)";
}

}  // namespace

TEST_CASE("admin client: nothing listening is 'payorchd is not running'") {
  const payorch::test::RefusingPort refusing;
  const std::uint16_t port = refusing.port();
  AdminClient client(DaemonAddress{"127.0.0.1", port, false}, "token");
  CHECK(failure(client) ==
        "payorchd is not running at 127.0.0.1:" + std::to_string(port) + " (connection refused)");
}

TEST_CASE("admin client: a listener that never answers is a timeout, the request maybe taken") {
  // Listening but never accepting: the kernel completes the connection and takes the request.
  boost::asio::io_context ioc;
  boost::asio::ip::tcp::acceptor silent(
      ioc, boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
  const std::uint16_t port = silent.local_endpoint().port();
  AdminClient client(DaemonAddress{"0.0.0.0", port, false}, "token", {}, 1s);
  CHECK(failure(client) == "payorchd at 0.0.0.0:" + std::to_string(port) +
                               " did not answer within 1s (the request was sent: it may have taken effect)");
}

TEST_CASE("admin client: HTTPS to a plain listener is a TLS failure, in one line") {
  boost::asio::io_context ioc;
  boost::asio::ip::tcp::acceptor plain(
      ioc, boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
  const std::uint16_t port = plain.local_endpoint().port();
  // Accepted and closed at once: the handshake gets no ServerHello.
  AdminClient client(DaemonAddress{"127.0.0.1", port, true}, "token", std::string(), 1s);
  std::thread closer([&] {
    boost::system::error_code ec;
    boost::asio::ip::tcp::socket s = plain.accept(ec);
  });
  const std::string message = failure(client);
  closer.join();
  CHECK(message.starts_with("no trusted HTTPS connection to payorchd at 127.0.0.1:" +
                            std::to_string(port) + ": TLS handshake with"));
  CHECK(message.find('\n') == std::string::npos);
}
