#pragma once
// The operator console (docs/console.md): one static page at /console, its assets
// compiled into the binary (tools/embed_assets.cmake), nothing loaded from elsewhere. The page
// needs no token to load; everything it shows comes from the admin API, which it calls with the
// admin token as a bearer header.
#include <optional>
#include <string_view>
#include <vector>

#include "http/problem.h"

namespace payorch::http {

struct ConsoleAsset {
  std::string_view name;          // "index.html", "console.js", ...
  std::string_view content_type;
  std::string_view body;
};

// Every file of src/http/console/, embedded at build time.
const std::vector<ConsoleAsset>& console_assets();

inline constexpr std::string_view console_path = "/console";

// True for /console and /console/{asset}.
bool is_console_path(std::string_view path);

// The answer to a request for a console path: the page (GET /console, /console/), an asset, a
// 404 for a name that is not one, a 405 for a method other than GET. Every answer carries the console's
// security headers (console_security_headers).
Response console_response(const Request& req, std::string_view path);

// The headers every console answer carries: a Content-Security-Policy that allows the page's
// own scripts, styles and API calls only (no inline script, no other origin, no framing),
// X-Content-Type-Options: nosniff, Referrer-Policy: no-referrer, X-Frame-Options: DENY.
void console_security_headers(Response& res);

}  // namespace payorch::http
