#include "http/console.h"

namespace payorch::http {
namespace {

namespace bhttp = boost::beast::http;

// 'self' everywhere it is needed and nothing else: no inline script or style, no eval, no
// plugin, no <base> rewrite, no form posted anywhere (the page's forms are read by its script),
// and no page may frame it (clickjacking an operator's resolve button).
constexpr std::string_view content_security_policy =
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'";

const ConsoleAsset* find_asset(std::string_view name) {
  for (const ConsoleAsset& a : console_assets())
    if (a.name == name) return &a;
  return nullptr;
}

}  // namespace

bool is_console_path(std::string_view path) {
  return path == console_path ||
         (path.starts_with(console_path) && path.size() > console_path.size() && path[console_path.size()] == '/');
}

void console_security_headers(Response& res) {
  res.set("Content-Security-Policy", content_security_policy);
  res.set("X-Content-Type-Options", "nosniff");
  res.set("X-Frame-Options", "DENY");
  res.set("Referrer-Policy", "no-referrer");
  res.set("Cross-Origin-Opener-Policy", "same-origin");
  res.set("Cross-Origin-Resource-Policy", "same-origin");
}

Response console_response(const Request& req, std::string_view path) {
  const unsigned v = req.version();
  Response res;
  if (req.method() != bhttp::verb::get) {
    res = method_not_allowed("GET", v);
  } else {
    std::string_view name = path.substr(console_path.size());
    if (!name.empty()) name.remove_prefix(1);  // the '/'
    if (name.empty()) name = "index.html";
    const ConsoleAsset* asset = find_asset(name);
    if (!asset) {
      res = make_problem(Problem::not_found, "no such console page", {}, v);
    } else {
      res = Response{bhttp::status::ok, v};
      res.set(bhttp::field::content_type, asset->content_type);
      // Small, and changed with the binary: always asked for again, never a stale script
      // against a newer API.
      res.set(bhttp::field::cache_control, "no-store");
      res.body() = std::string(asset->body);
      res.prepare_payload();
    }
  }
  console_security_headers(res);
  return res;
}

}  // namespace payorch::http
