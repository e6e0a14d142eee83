#pragma once
// The vendor HTTP client's request and result types. The result's Kind is the one fact the
// payment engine cannot do without: whether the request may have reached the vendor.
#include <chrono>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace payorch::net {

struct Request {
  std::string method = "GET";
  std::string url;  // absolute: http(s)://host[:port][/path][?query]
  std::vector<std::pair<std::string, std::string>> headers;  // Host and Content-Length are set
  std::string body;
  // Name resolution, TCP connect and TLS handshake together (all before a byte of the request
  // can leave); bounded by `timeout` as well.
  std::chrono::milliseconds connect_timeout{2'000};
  // The whole request, from the call to the last byte of the response.
  std::chrono::milliseconds timeout{10'000};
};

struct HttpResult {
  enum Kind {
    // A complete response was read: status, headers and body are set.
    response,
    // The request bytes certainly never reached the peer: invalid URL, DNS failure, connect
    // refused/unreachable/timed out, TLS handshake or certificate failure, or a write that
    // failed before the kernel accepted a single byte of it. Safe to send again.
    not_sent,
    // Some or all of the request may have reached the peer, and no complete response came:
    // timeout after writing started, reset, EOF before a full response, unparseable response,
    // response over the body limit. The peer may have acted on it.
    sent_no_answer,
  };
  // What went wrong, for a message to a person (the engine needs only Kind); none for a
  // response.
  enum class Failure {
    none,
    refused,  // the peer refused the TCP connection: nothing listens there
    timeout,  // the connect timeout or the request timeout ran out
    tls,      // TLS handshake or certificate verification (chain, host name) failed
    other,
  };
  Kind kind = not_sent;
  int status = 0;                              // response only
  std::map<std::string, std::string> headers;  // response only; keys lower-case, repeated
                                               // fields joined with ", "
  std::string body;                            // response only
  std::string error;                           // not_sent / sent_no_answer: what happened
  Failure failure = Failure::none;

  // The header's value, "" when absent. `name` must be lower-case.
  std::string header(std::string_view name) const {
    const auto it = headers.find(std::string(name));
    return it == headers.end() ? std::string() : it->second;
  }
};

std::string_view to_string(HttpResult::Kind kind);

}  // namespace payorch::net
