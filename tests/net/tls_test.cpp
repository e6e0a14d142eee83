// https: the certificate and the host name are always verified, and a failed handshake is
// not_sent (no byte of the request exists before the handshake completes).
#include <doctest/doctest.h>

#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <atomic>
#include <memory>
#include <string>

#include "net/client_fixture.h"
#include "net/fake_server.h"
#include "support/test_cert.h"

namespace {

namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using payorch::net::HttpResult;
using payorch::test::ClientFixture;
using payorch::test::get;

// A TLS vendor answering every request with 200 "hello over tls"; counts requests read.
struct TlsVendor {
  explicit TlsVendor(const payorch::test::TestCert& cert)
      : ctx(std::make_shared<ssl::context>(ssl::context::tls_server)),
        server([ctx = ctx, requests = requests](tcp::socket socket) -> asio::awaitable<void> {
          ssl::stream<tcp::socket> stream(std::move(socket), *ctx);
          try {
            co_await stream.async_handshake(ssl::stream_base::server, asio::use_awaitable);
            boost::beast::flat_buffer buffer;
            for (;;) {  // keep-alive until the client closes
              bhttp::request<bhttp::string_body> req;
              co_await bhttp::async_read(stream, buffer, req, asio::use_awaitable);
              ++*requests;
              bhttp::response<bhttp::string_body> res{bhttp::status::ok, 11};
              res.body() = "hello over tls";
              res.prepare_payload();
              co_await bhttp::async_write(stream, res, asio::use_awaitable);
            }
          } catch (const boost::system::system_error&) {
            // the client refused the certificate, or closed the connection
          }
        }) {
    ctx->use_certificate_chain(asio::buffer(cert.cert_pem));
    ctx->use_private_key(asio::buffer(cert.key_pem), ssl::context::pem);
  }

  std::string url(const std::string& host) const {
    return "https://" + host + ":" + std::to_string(server.port()) + "/v1/charges";
  }

  std::shared_ptr<ssl::context> ctx;
  std::shared_ptr<std::atomic<int>> requests = std::make_shared<std::atomic<int>>(0);
  payorch::test::RawServer server;
};

}  // namespace

TEST_CASE("https to an untrusted self-signed certificate: not_sent, nothing reached the server") {
  const auto cert = payorch::test::make_self_signed_cert("DNS:localhost,IP:127.0.0.1");
  TlsVendor vendor(cert);
  payorch::net::ClientOptions defaults;  // the production default: the system trust store
  REQUIRE(defaults.system_trust_store);
  ClientFixture f(defaults);
  const HttpResult res = f.run(get(vendor.url("127.0.0.1")));
  CHECK(res.kind == HttpResult::not_sent);
  CHECK(res.error.find("certificate verification failed") != std::string::npos);
  CHECK(res.failure == HttpResult::Failure::tls);
  CHECK(vendor.requests->load() == 0);
}

TEST_CASE("https to a trusted certificate: response; a certificate for another name: not_sent") {
  const auto cert = payorch::test::make_self_signed_cert("DNS:localhost");
  TlsVendor vendor(cert);
  auto options = payorch::test::test_options();
  options.extra_ca_pem = cert.cert_pem;
  ClientFixture f(options);

  const HttpResult ok = f.run(get(vendor.url("localhost")));
  REQUIRE(ok.kind == HttpResult::response);
  CHECK(ok.status == 200);
  CHECK(ok.body == "hello over tls");
  CHECK(ok.failure == HttpResult::Failure::none);
  // Kept alive: the next request reuses the verified connection.
  CHECK(f.run(get(vendor.url("localhost"))).kind == HttpResult::response);
  CHECK(f.client.stats().connections_opened == 1);
  CHECK(f.client.stats().connections_reused == 1);

  // Same server, same trusted certificate, but it does not name 127.0.0.1.
  const HttpResult wrong_name = f.run(get(vendor.url("127.0.0.1")));
  CHECK(wrong_name.kind == HttpResult::not_sent);
  CHECK(wrong_name.error.find("certificate verification failed") != std::string::npos);
  CHECK(wrong_name.failure == HttpResult::Failure::tls);
  CHECK(vendor.requests->load() == 2);
}
