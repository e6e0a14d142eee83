#include "net/url.h"

#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>

namespace payorch::net {

std::string Origin::key() const {
  const bool v6 = host.find(':') != std::string::npos;
  return std::string(tls ? "https://" : "http://") + (v6 ? "[" + host + "]" : host) + ":" +
         std::to_string(port);
}

std::optional<ParsedUrl> parse_url(std::string_view url, std::string& error) {
  const auto parsed = boost::urls::parse_absolute_uri(url);
  if (!parsed) {
    error = "invalid URL: " + parsed.error().message();
    return std::nullopt;
  }
  const boost::urls::url_view& u = *parsed;
  ParsedUrl out;
  if (u.scheme_id() == boost::urls::scheme::https) {
    out.origin.tls = true;
  } else if (u.scheme_id() != boost::urls::scheme::http) {
    error = "unsupported URL scheme \"" + std::string(u.scheme()) + "\" (http or https)";
    return std::nullopt;
  }
  // Credentials in a URL would end up in logs; vendors take them in headers.
  if (u.has_userinfo()) {
    error = "URL must not carry user info";
    return std::nullopt;
  }
  out.origin.host = u.host_address();
  if (out.origin.host.empty()) {
    error = "URL has no host";
    return std::nullopt;
  }
  if (u.has_port()) {
    if (u.port().empty() || u.port_number() == 0) {
      error = "URL has an invalid port";
      return std::nullopt;
    }
    out.origin.port = u.port_number();
  } else {
    out.origin.port = out.origin.tls ? 443 : 80;
  }
  out.origin.host_header = std::string(u.encoded_host());
  if (u.has_port()) out.origin.host_header += ":" + std::to_string(out.origin.port);
  out.target = std::string(u.encoded_target());
  if (out.target.empty() || out.target.front() != '/') out.target.insert(0, "/");
  return out;
}

}  // namespace payorch::net
