#include "ops/admin_client.h"

#include <boost/json/serialize.hpp>
#include <utility>

namespace payorch::ops {
namespace {

constexpr std::size_t max_response_bytes = 64ull * 1024 * 1024;

std::string connect_host(const std::string& listen_host) {
  if (listen_host == "0.0.0.0" || listen_host.empty()) return "127.0.0.1";
  if (listen_host == "::") return "::1";
  return listen_host;
}

std::string host_port(const std::string& host, std::uint16_t port) {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

net::ClientOptions client_options(bool tls, std::optional<std::string> ca_pem) {
  net::ClientOptions options;
  options.max_response_body_bytes = max_response_bytes;
  options.user_agent = "payorchd-cli";
  // Plain HTTP needs no trust anchors: loading the system store would only cost time.
  options.system_trust_store = tls && !ca_pem;
  if (tls && ca_pem) options.extra_ca_pem = std::move(*ca_pem);
  return options;
}

void pretty(const boost::json::value& v, std::string& out, int depth) {
  const std::string indent(static_cast<std::size_t>(depth + 1) * 2, ' ');
  const std::string close(static_cast<std::size_t>(depth) * 2, ' ');
  if (v.is_object() && !v.as_object().empty()) {
    out += "{\n";
    bool first = true;
    for (const auto& kv : v.as_object()) {
      out += first ? "" : ",\n";
      first = false;
      out += indent + boost::json::serialize(boost::json::value(kv.key())) + ": ";
      pretty(kv.value(), out, depth + 1);
    }
    out += "\n" + close + "}";
  } else if (v.is_array() && !v.as_array().empty()) {
    out += "[\n";
    bool first = true;
    for (const auto& e : v.as_array()) {
      out += first ? "" : ",\n";
      first = false;
      out += indent;
      pretty(e, out, depth + 1);
    }
    out += "\n" + close + "]";
  } else {
    out += boost::json::serialize(v);
  }
}

}  // namespace

AdminClient::AdminClient(DaemonAddress address, std::string token,
                         std::optional<std::string> ca_pem, std::chrono::milliseconds timeout)
    : address_(std::move(address)),
      token_(std::move(token)),
      timeout_(timeout),
      client_(ioc_.get_executor(), client_options(address_.tls, std::move(ca_pem))) {}

std::string AdminClient::endpoint() const { return host_port(address_.host, address_.port); }

ClientResponse AdminClient::request(std::string_view method, const std::string& target,
                                    const std::string& body, const std::string& content_type) {
  net::Request req;
  req.method = std::string(method);
  req.url = (address_.tls ? "https://" : "http://") +
            host_port(connect_host(address_.host), address_.port) + target;
  req.headers = {{"Authorization", "Bearer " + token_}, {"Accept", "application/json"}};
  if (!content_type.empty()) req.headers.emplace_back("Content-Type", content_type);
  req.body = body;
  req.connect_timeout = timeout_;
  req.timeout = timeout_;

  std::optional<net::HttpResult> result;
  client_.request(std::move(req), [&result](net::HttpResult r) { result = std::move(r); });
  ioc_.restart();
  ioc_.run();
  if (!result) throw TransportError("payorchd at " + endpoint() + ": the request never finished");
  if (result->kind == net::HttpResult::response)
    return ClientResponse{static_cast<unsigned>(result->status), result->header("content-type"),
                          std::move(result->body)};

  using Failure = net::HttpResult::Failure;
  const std::string sent = result->kind == net::HttpResult::sent_no_answer
                               ? " (the request was sent: it may have taken effect)"
                               : "";
  switch (result->failure) {
    case Failure::refused:
      throw TransportError("payorchd is not running at " + endpoint() + " (connection refused)");
    case Failure::timeout:
      throw TransportError("payorchd at " + endpoint() + " did not answer within " +
                           std::to_string(timeout_.count() / 1000) + "s" + sent);
    case Failure::tls:
      throw TransportError("no trusted HTTPS connection to payorchd at " + endpoint() + ": " +
                           result->error);
    case Failure::none:
    case Failure::other:
      break;
  }
  throw TransportError("cannot reach payorchd at " + endpoint() + ": " + result->error + sent);
}

std::string pretty_json(const boost::json::value& v) {
  std::string out;
  pretty(v, out, 0);
  return out;
}

}  // namespace payorch::ops
