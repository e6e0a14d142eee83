#include "support/tls_client.h"

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <openssl/ssl.h>

#include <array>

namespace payorch::test {

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
namespace bhttp = boost::beast::http;

namespace {

// Every setting is made before the stream exists: OpenSSL copies them into each connection.
ssl::context client_context(const TlsClientOptions& options) {
  ssl::context ctx(ssl::context::tls_client);
  ctx.add_certificate_authority(net::buffer(options.trusted_cert_pem));
  ctx.set_verify_mode(ssl::verify_peer);
  if (options.min_version != 0 || options.max_version != 0) {
    // Old protocol versions are below OpenSSL's default security level: allowed here, so that
    // it is the server that refuses them.
    SSL_CTX_set_security_level(ctx.native_handle(), 0);
    SSL_CTX_set_min_proto_version(ctx.native_handle(), options.min_version);
    SSL_CTX_set_max_proto_version(ctx.native_handle(), options.max_version);
  }
  return ctx;
}

}  // namespace

TlsClient::TlsClient(std::uint16_t port, TlsClientOptions options)
    : options_(std::move(options)), ctx_(client_context(options_)), stream_(ioc_, ctx_) {
  stream_.set_verify_callback(ssl::host_name_verification("127.0.0.1"));
  boost::beast::get_lowest_layer(stream_).socket().connect(
      net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), port), connect_error_);
}

template <class Start>
TlsClient::error_code TlsClient::run(Start start) {
  error_code result = net::error::would_block;
  tcp().expires_after(options_.timeout);
  start([&result](error_code ec, auto&&...) { result = ec; });
  ioc_.restart();
  ioc_.run();
  return result;
}

TlsClient::error_code TlsClient::handshake() {
  return run([&](auto done) { stream_.async_handshake(ssl::stream_base::client, done); });
}

std::string TlsClient::protocol() { return SSL_get_version(stream_.native_handle()); }

TlsClient::error_code TlsClient::send(Request req) {
  if (req.find(bhttp::field::host) == req.end()) req.set(bhttp::field::host, "127.0.0.1");
  req.prepare_payload();
  return run([&](auto done) { bhttp::async_write(stream_, req, done); });
}

TlsClient::error_code TlsClient::send_raw(const std::string& bytes) {
  return run([&](auto done) { net::async_write(stream_, net::buffer(bytes), done); });
}

std::optional<TlsClient::Response> TlsClient::receive(error_code& error) {
  bhttp::response_parser<bhttp::string_body> parser;
  parser.body_limit(16 * 1024 * 1024);
  error = run([&](auto done) { bhttp::async_read(stream_, buffer_, parser, done); });
  if (error) return std::nullopt;
  return parser.release();
}

TlsClient::error_code TlsClient::next_read_error(std::size_t& got) {
  std::array<char, 256> scratch{};
  got = 0;
  return run([&](auto done) {
    stream_.async_read_some(net::buffer(scratch),
                            [&got, done](error_code e, std::size_t n) mutable {
                              got = n;
                              done(e);
                            });
  });
}

boost::beast::tcp_stream& TlsClient::tcp() { return boost::beast::get_lowest_layer(stream_); }

std::optional<TlsClient::Response> https_request(std::uint16_t port, TlsClientOptions options,
                                                 TlsClient::Request req, std::string& error) {
  TlsClient client(port, std::move(options));
  if (client.connect_error()) {
    error = "connect: " + client.connect_error().message();
    return std::nullopt;
  }
  if (const auto ec = client.handshake()) {
    error = "handshake: " + ec.message();
    return std::nullopt;
  }
  if (const auto ec = client.send(std::move(req))) {
    error = "send: " + ec.message();
    return std::nullopt;
  }
  TlsClient::error_code ec;
  std::optional<TlsClient::Response> res = client.receive(ec);
  if (!res) error = "receive: " + ec.message();
  return res;
}

}  // namespace payorch::test
