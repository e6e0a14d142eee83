#include "net/http_client.h"

#include <openssl/ssl.h>

#include <boost/beast/core/string.hpp>

#include <stdexcept>
#include <utility>

#include "core/enum_names.h"
#include "net/client_shared.h"
#include "net/trace_context.h"

namespace payorch::net {
namespace detail {
namespace {

namespace ssl = boost::asio::ssl;

// TLS 1.2 or later, peer verification against the system trust store and/or extra_ca_pem.
// Host names are checked per connection (Connection::expect_peer_name).
ssl::context make_tls_context(const ClientOptions& options) {
  ssl::context ctx(ssl::context::tls_client);
  if (SSL_CTX_set_min_proto_version(ctx.native_handle(), TLS1_2_VERSION) != 1)
    throw std::runtime_error("net: cannot require TLS 1.2");
  ctx.set_options(ssl::context::default_workarounds | ssl::context::no_compression);
  ctx.set_verify_mode(ssl::verify_peer);
  if (options.system_trust_store) ctx.set_default_verify_paths();
  if (!options.extra_ca_pem.empty())
    ctx.add_certificate_authority(
        boost::asio::buffer(options.extra_ca_pem.data(), options.extra_ca_pem.size()));
  return ctx;
}

}  // namespace

ClientShared::ClientShared(boost::asio::any_io_executor ex, ClientOptions opts)
    : executor(std::move(ex)),
      options(std::move(opts)),
      tls(make_tls_context(options)),
      pool(options.pool) {}

}  // namespace detail

namespace {

constexpr EnumNames<HttpResult::Kind, 3> kind_names{{
    {HttpResult::response, "response"},
    {HttpResult::not_sent, "not_sent"},
    {HttpResult::sent_no_answer, "sent_no_answer"},
}};

}  // namespace

std::string_view to_string(HttpResult::Kind kind) { return name_of(kind_names, kind); }

HttpClient::HttpClient(boost::asio::any_io_executor ex, ClientOptions options)
    : shared_(std::make_shared<detail::ClientShared>(std::move(ex), std::move(options))) {}

HttpClient::~HttpClient() = default;

void HttpClient::request(Request req, Handler done) {
  // A vendor call made for a payment that arrived with a traceparent continues its trace.
  if (const std::optional<OutgoingTrace> trace = current_outgoing_trace()) {
    bool given = false;
    for (const auto& header : req.headers)
      given = given || boost::beast::iequals(header.first, traceparent_header);
    if (!given) req.headers.emplace_back(std::string(traceparent_header), outgoing_traceparent(*trace));
  }
  detail::start_exchange(shared_, std::move(req), std::move(done));
}

const boost::asio::any_io_executor& HttpClient::get_executor() const { return shared_->executor; }

ClientStats HttpClient::stats() const {
  return ClientStats{shared_->connections_opened.load(), shared_->connections_reused.load(),
                     shared_->pool.idle_count()};
}

}  // namespace payorch::net
