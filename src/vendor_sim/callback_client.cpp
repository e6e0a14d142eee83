#include "vendor_sim/callback_client.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/url/parse.hpp>

#include <memory>

namespace payorch::vendor_sim {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using error_code = boost::system::error_code;

// A receiver's answer body is never used; a bound keeps a misbehaving one from costing memory.
constexpr std::size_t max_response_body = 64 * 1024;

// resolve → connect → write → read, with one deadline over all of them. When it fires, the
// resolver is cancelled and the socket closed; the pending step then fails and reports.
class Post : public std::enable_shared_from_this<Post> {
public:
  Post(net::any_io_executor ex, HttpUrl url, http::request<http::string_body> req,
       std::function<void(PostResult)> done)
      : resolver_(ex), stream_(ex), deadline_(ex), url_(std::move(url)), req_(std::move(req)),
        done_(std::move(done)) {
    parser_.body_limit(max_response_body);
  }

  void start(std::chrono::milliseconds timeout) {
    deadline_.expires_after(timeout);
    deadline_.async_wait([self = shared_from_this()](const error_code& ec) {
      if (ec) return;  // cancelled: finished in time
      self->timed_out_ = true;
      self->resolver_.cancel();
      error_code ignored;
      self->stream_.socket().close(ignored);
    });
    resolver_.async_resolve(url_.host, url_.port,
                            [self = shared_from_this()](const error_code& ec,
                                                        tcp::resolver::results_type results) {
                              if (ec) return self->finish(0, "resolve", ec);
                              self->connect(results);
                            });
  }

private:
  void connect(const tcp::resolver::results_type& results) {
    stream_.async_connect(results, [self = shared_from_this()](const error_code& ec,
                                                               const tcp::endpoint&) {
      if (ec) return self->finish(0, "connect", ec);
      http::async_write(self->stream_, self->req_,
                        [self](const error_code& wec, std::size_t) {
                          if (wec) return self->finish(0, "write", wec);
                          self->read();
                        });
    });
  }

  void read() {
    http::async_read(stream_, buffer_, parser_,
                     [self = shared_from_this()](const error_code& ec, std::size_t) {
                       if (ec) return self->finish(0, "read", ec);
                       self->finish(self->parser_.get().result_int(), "", {});
                     });
  }

  void finish(unsigned status, std::string_view step, const error_code& ec) {
    deadline_.cancel();
    error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.socket().close(ignored);
    PostResult result;
    result.status = status;
    if (status == 0)
      result.error = timed_out_ ? std::string("no answer within the timeout")
                                : std::string(step) + ": " + ec.message();
    auto done = std::move(done_);
    if (done) done(std::move(result));
  }

  tcp::resolver resolver_;
  beast::tcp_stream stream_;
  net::steady_timer deadline_;
  HttpUrl url_;
  http::request<http::string_body> req_;
  http::response_parser<http::string_body> parser_;
  beast::flat_buffer buffer_;
  std::function<void(PostResult)> done_;
  bool timed_out_ = false;
};

}  // namespace

std::optional<HttpUrl> parse_http_url(std::string_view text) {
  const auto parsed = boost::urls::parse_uri(text);
  if (!parsed) return std::nullopt;
  const boost::urls::url_view& u = *parsed;
  if (u.scheme() != "http" || u.has_userinfo() || u.has_fragment() || u.host().empty())
    return std::nullopt;
  HttpUrl out;
  out.host = u.host_type() == boost::urls::host_type::ipv6 ? u.host_address() : u.host();
  out.port = u.has_port() ? std::string(u.port()) : std::string("80");
  if (out.port.empty()) return std::nullopt;
  out.target = std::string(u.encoded_path());
  if (out.target.empty()) out.target = "/";
  if (u.has_query()) out.target += "?" + std::string(u.encoded_query());
  return out;
}

void post_json(net::any_io_executor executor, const HttpUrl& url,
               std::vector<std::pair<std::string, std::string>> headers, std::string body,
               std::chrono::milliseconds timeout, std::function<void(PostResult)> done) {
  http::request<http::string_body> req{http::verb::post, url.target, 11};
  const bool ipv6 = url.host.find(':') != std::string::npos;
  req.set(http::field::host, (ipv6 ? "[" + url.host + "]" : url.host) + ":" + url.port);
  req.set(http::field::user_agent, "payorch-vendor-sim");
  req.set(http::field::content_type, "application/json");
  req.keep_alive(false);
  for (auto& [name, value] : headers) req.set(name, value);
  req.body() = std::move(body);
  req.prepare_payload();
  std::make_shared<Post>(std::move(executor), url, std::move(req), std::move(done))->start(timeout);
}

}  // namespace payorch::vendor_sim
