#include "ops/admin_client.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/json/serialize.hpp>

namespace payorch::ops {
namespace {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = boost::asio::ip::tcp;

constexpr std::uint64_t max_response_bytes = 64ull * 1024 * 1024;

std::string connect_host(const std::string& listen_host) {
  if (listen_host == "0.0.0.0" || listen_host.empty()) return "127.0.0.1";
  if (listen_host == "::") return "::1";
  return listen_host;
}

std::string host_port(const std::string& host, std::uint16_t port) {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
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

AdminClient::AdminClient(std::string host, std::uint16_t port, std::string token,
                         std::chrono::milliseconds timeout)
    : host_(std::move(host)), port_(port), token_(std::move(token)), timeout_(timeout) {}

std::string AdminClient::endpoint() const { return host_port(host_, port_); }

ClientResponse AdminClient::request(bhttp::verb method, const std::string& target,
                                    const std::string& body, const std::string& content_type,
                                    const std::string& operator_name) {
  const std::string host = connect_host(host_);
  boost::system::error_code ec;
  const auto address = boost::asio::ip::make_address(host, ec);
  if (ec) throw TransportError("server.listen host '" + host_ + "' is not an IP address");

  boost::asio::io_context ioc;
  beast::tcp_stream stream(ioc);
  stream.expires_after(timeout_);
  stream.connect(tcp::endpoint(address, port_), ec);
  if (ec == boost::asio::error::connection_refused)
    throw TransportError("payorchd is not running at " + endpoint() + " (connection refused)");
  if (ec) throw TransportError("cannot reach payorchd at " + endpoint() + ": " + ec.message());

  bhttp::request<bhttp::string_body> req{method, target, 11};
  req.set(bhttp::field::host, host_port(host, port_));
  req.set(bhttp::field::authorization, "Bearer " + token_);
  req.set(bhttp::field::user_agent, "payorchd-cli");
  req.set(bhttp::field::accept, "application/json");
  if (!operator_name.empty()) req.set("Payorch-Operator", operator_name);
  if (!content_type.empty()) req.set(bhttp::field::content_type, content_type);
  req.body() = body;
  req.prepare_payload();

  bhttp::write(stream, req, ec);
  if (ec) throw TransportError("sending to payorchd at " + endpoint() + " failed: " + ec.message());
  beast::flat_buffer buffer;
  bhttp::response_parser<bhttp::string_body> parser;
  parser.body_limit(max_response_bytes);
  bhttp::read(stream, buffer, parser, ec);
  if (ec == beast::error::timeout)
    throw TransportError("payorchd at " + endpoint() + " did not answer within " +
                         std::to_string(timeout_.count() / 1000) + "s");
  if (ec) throw TransportError("reading from payorchd at " + endpoint() + " failed: " + ec.message());
  stream.socket().shutdown(tcp::socket::shutdown_both, ec);

  const auto& res = parser.get();
  return ClientResponse{res.result_int(), std::string(res[bhttp::field::content_type]), res.body()};
}

std::string pretty_json(const boost::json::value& v) {
  std::string out;
  pretty(v, out, 0);
  return out;
}

}  // namespace payorch::ops
