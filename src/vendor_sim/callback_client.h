#pragma once
// The sim's outbound HTTP: one POST per callback delivery attempt, on a fresh connection,
// bounded by a deadline from the first step to the last byte. Plain http only: the sim is a
// local demo and test vendor (put a proxy in front of it for anything else).
#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace payorch::vendor_sim {

struct HttpUrl {
  std::string host;    // as written (a name, an IPv4 literal, or an IPv6 literal without [])
  std::string port;    // "80" when the URL names none
  std::string target;  // path and query, "/" when empty
};

// "http://host[:port][/path][?query]"; nullopt for another scheme, userinfo, a fragment or a
// malformed URL.
std::optional<HttpUrl> parse_http_url(std::string_view url);

struct PostResult {
  unsigned status = 0;  // 0: no complete answer (see error)
  std::string error;    // empty when a response was read
};

// Sends `body` as application/json with the extra `headers`, and calls `done` exactly once on
// `executor` with the status or the failure (connect refused, reset, deadline). Every step
// runs on `executor`, which must not be run by more than one thread at a time.
void post_json(boost::asio::any_io_executor executor, const HttpUrl& url,
               std::vector<std::pair<std::string, std::string>> headers, std::string body,
               std::chrono::milliseconds timeout, std::function<void(PostResult)> done);

}  // namespace payorch::vendor_sim
