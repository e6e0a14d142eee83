#pragma once
// A small synchronous HTTP/1.1 client for the operator commands: one request per connection to
// the local payorchd, with the admin bearer token. Blocking is fine here: it runs in a
// short-lived command, never inside the daemon.
#include <boost/beast/http/verb.hpp>
#include <boost/json/value.hpp>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace payorch::ops {

// The daemon could not be reached or did not answer; what() is the message for the operator.
class TransportError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

struct ClientResponse {
  unsigned status = 0;
  std::string content_type;
  std::string body;
};

class AdminClient {
public:
  // `host` is the daemon's listen address: a wildcard (0.0.0.0, ::) is reached on loopback.
  AdminClient(std::string host, std::uint16_t port, std::string token,
              std::chrono::milliseconds timeout = std::chrono::seconds(30));

  // Throws TransportError on connection refused, timeouts and broken connections.
  ClientResponse request(boost::beast::http::verb method, const std::string& target,
                         const std::string& body = {}, const std::string& content_type = {},
                         const std::string& operator_name = {});

  // "HOST:PORT" as the operator configured it.
  std::string endpoint() const;

private:
  std::string host_;
  std::uint16_t port_;
  std::string token_;
  std::chrono::milliseconds timeout_;
};

// JSON indented by two spaces, for people.
std::string pretty_json(const boost::json::value& v);

}  // namespace payorch::ops
