#include "http/header_rules.h"

#include <boost/beast/core/string.hpp>

#include <vector>

namespace payorch::http {
namespace {

// The fields check_fields() allows once at most (see header_rules.h).
constexpr std::string_view single_fields[] = {"Host", "Authorization", "Idempotency-Key",
                                              "Content-Type", "Payorch-Operator"};

std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The coding names of every Transfer-Encoding line, in order, parameters dropped.
std::vector<std::string_view> transfer_codings(const Request& header) {
  std::vector<std::string_view> codings;
  const auto [first, last] = header.equal_range(beast_http::field::transfer_encoding);
  for (auto line = first; line != last; ++line) {
    std::string_view rest = line->value();
    while (!rest.empty()) {
      const std::size_t comma = rest.find(',');
      std::string_view item = rest.substr(0, comma);
      rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
      item = trim_ows(item.substr(0, item.find(';')));
      if (!item.empty()) codings.push_back(item);
    }
  }
  return codings;
}

std::optional<HeaderRefusal> check_framing(const Request& header) {
  const auto lines = header.equal_range(beast_http::field::transfer_encoding);
  if (lines.first == lines.second) return std::nullopt;
  const auto bad = [](std::string detail) {
    return HeaderRefusal{Problem::bad_request, std::move(detail)};
  };
  if (header.find(beast_http::field::content_length) != header.end())
    return bad("a request may carry Content-Length or Transfer-Encoding, not both");
  if (header.version() < 11) return bad("HTTP/1.0 has no Transfer-Encoding");
  if (std::next(lines.first) == lines.second &&
      boost::beast::iequals(trim_ows(lines.first->value()), "chunked"))
    return std::nullopt;

  const std::vector<std::string_view> codings = transfer_codings(header);
  std::size_t chunked = 0;
  for (std::string_view c : codings) chunked += boost::beast::iequals(c, "chunked") ? 1 : 0;
  if (codings.empty() || !boost::beast::iequals(codings.back(), "chunked"))
    return bad("the body's length is unknown: chunked must be the last transfer coding");
  if (chunked > 1) return bad("chunked is given more than once in Transfer-Encoding");
  return HeaderRefusal{Problem::unsupported_transfer_encoding,
                       "chunked is the only transfer coding payorchd reads"};
}

std::optional<HeaderRefusal> check_fields(const Request& header) {
  if (header.version() >= 11 && header.find(beast_http::field::host) == header.end())
    return HeaderRefusal{Problem::bad_request, "an HTTP/1.1 request needs a Host header"};
  for (std::string_view name : single_fields) {
    const auto [first, last] = header.equal_range(name);
    if (first != last && std::next(first) != last)
      return HeaderRefusal{Problem::bad_request,
                           "the " + std::string(name) + " header may appear only once"};
  }
  return std::nullopt;
}

}  // namespace

std::optional<HeaderRefusal> check_request_header(const Request& header) {
  if (auto refusal = check_framing(header)) return refusal;
  return check_fields(header);
}

}  // namespace payorch::http
