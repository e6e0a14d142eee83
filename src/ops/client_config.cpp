#include "ops/client_config.h"

#include <boost/url/parse.hpp>
#include <filesystem>
#include <stdexcept>

#include "config/config.h"
#include "config/reader.h"

namespace payorch::ops {

DaemonAddress parse_daemon_url(const std::string& url, const std::string& where) {
  const auto bad = [&](const std::string& why) {
    return std::invalid_argument(where + ": '" + url + "' is not a daemon address (" + why +
                                 "); expected http://HOST:PORT or https://HOST:PORT");
  };
  auto parsed = boost::urls::parse_absolute_uri(url);
  if (!parsed) throw bad("not a URL");
  DaemonAddress a;
  const std::string scheme = parsed->scheme();
  if (scheme != "http" && scheme != "https") throw bad("the scheme must be http or https");
  a.tls = scheme == "https";
  if (!parsed->has_port() || parsed->port_number() == 0) throw bad("no port");
  if (!parsed->encoded_path().empty() && parsed->encoded_path() != "/") throw bad("it has a path");
  if (parsed->has_query() || parsed->has_fragment() || parsed->has_userinfo()) throw bad("it has more than a host and port");
  a.host = parsed->host_type() == boost::urls::host_type::ipv6 ? std::string(parsed->host_ipv6_address().to_string())
                                                              : std::string(parsed->host());
  if (a.host.empty()) throw bad("no host");
  a.port = parsed->port_number();
  return a;
}

ClientSettings load_client_config(const std::string& path) {
  using config::ConfigError;
  using config::detail::Reader;
  using config::detail::Section;
  std::string os_error;
  const std::optional<std::string> text = config::detail::read_whole_file(path, os_error);
  if (!text) throw ConfigError(path + ": cannot read the client configuration: " + os_error);
  std::filesystem::path base_dir = std::filesystem::path(path).parent_path();
  if (base_dir.empty()) base_dir = ".";
  Reader reader(path, base_dir);
  YAML::Node root;
  try {
    root = YAML::Load(*text);
  } catch (const YAML::Exception& e) {
    reader.error(e.mark, "YAML syntax error", e.msg);
    throw ConfigError(reader.report());
  }
  if (!root.IsMap()) {
    reader.error(root.Mark(), "(top level)", "expected a mapping with url and token_file");
    throw ConfigError(reader.report());
  }
  const Section top(reader, root, root.Mark(), "", {"url", "token", "token_file", "ca_file"});
  ClientSettings s;
  std::string url;
  if (top.text("url", url, true)) {
    try {
      s.address = parse_daemon_url(url, "url");
    } catch (const std::invalid_argument& e) {
      reader.error(top.mark_of("url"), "url", e.what() + std::string("url: ").size());
    }
  }
  if (auto token = top.secret("token", true)) s.token = std::move(token->value);
  std::string ca_file;
  if (top.text("ca_file", ca_file, false) && !ca_file.empty()) {
    std::string problem;
    if (auto resolved = reader.resolve(ca_file, problem)) s.ca_file = resolved->string();
    else reader.error(top.mark_of("ca_file"), "ca_file", problem);
  }
  if (reader.failed()) throw ConfigError(reader.report());
  return s;
}

}  // namespace payorch::ops
