#pragma once
// The operator commands' client of the local payorchd: one request at a time on the calling
// thread, with the admin bearer token, over the project's HTTP(S) client (net::HttpClient).
// Blocking is fine here: it runs in a short-lived command, never inside the daemon.
//
// Over HTTPS the daemon's certificate chain is verified against the trust anchors (the system
// trust store, or only the PEM certificates given) and the certificate must name the address
// connected to; there is no switch to turn either check off.
#include <boost/asio/io_context.hpp>
#include <boost/json/value.hpp>
#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "net/http_client.h"

namespace payorch::ops {

// The daemon could not be reached or did not answer; what() is the one-line message for the
// operator.
class TransportError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

struct ClientResponse {
  unsigned status = 0;
  std::string content_type;
  std::string body;
};

// Where the daemon listens, as its configuration says (server.listen, server.tls).
struct DaemonAddress {
  std::string host;  // an IP literal without [brackets]; a wildcard (0.0.0.0, ::) is reached on loopback
  std::uint16_t port = 0;
  bool tls = false;
};

class AdminClient {
public:
  // `ca_pem`: over HTTPS, trust only these PEM certificates; nullopt: the system trust store.
  // Throws std::system_error when the trust anchors cannot be loaded (no certificate in
  // `ca_pem`, no system store).
  AdminClient(DaemonAddress address, std::string token, std::optional<std::string> ca_pem = {},
              std::chrono::milliseconds timeout = std::chrono::seconds(30));

  // `method` is "GET" or "POST"; `target` the path and query. Throws TransportError when no
  // answer came: connection refused, timeout, TLS failure (untrusted certificate, name
  // mismatch), broken connection.
  ClientResponse request(std::string_view method, const std::string& target,
                         const std::string& body = {}, const std::string& content_type = {});

  // "HOST:PORT" as the operator configured it.
  std::string endpoint() const;

private:
  DaemonAddress address_;
  std::string token_;
  std::chrono::milliseconds timeout_;
  boost::asio::io_context ioc_;
  net::HttpClient client_;
};

// JSON indented by two spaces, for people.
std::string pretty_json(const boost::json::value& v);

}  // namespace payorch::ops
