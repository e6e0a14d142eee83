#pragma once
// What a request's header must satisfy before its body is read, beyond what Beast's parser
// checks. Pure: no I/O. The server answers a refusal and closes the connection, because after
// it the byte stream cannot be trusted to say where the next request begins.
#include <optional>
#include <string>
#include <string_view>

#include "http/problem.h"

namespace payorch::http {

struct HeaderRefusal {
  Problem problem;
  std::string detail;
};

// Framing (RFC 9112 §6): a Transfer-Encoding must be exactly `chunked` (any case, optional
// whitespace) on one line, and never comes with a Content-Length. Chunked missing or not last,
// or given twice, makes the body's length unknowable: 400. A coding payorchd does not implement
// in front of chunked (`gzip, chunked`): 501. Content-Length and Transfer-Encoding together,
// or a Transfer-Encoding on HTTP/1.0: 400.
// Fields: an HTTP/1.1 request without Host (RFC 9112 §3.2), or with Host, Authorization,
// Idempotency-Key, Content-Type or Payorch-Operator twice, even with the same value: 400. Each
// is read as one value, and which of two a server (or a proxy in front of it) reads is
// anybody's guess.
std::optional<HeaderRefusal> check_request_header(const Request& header);

}  // namespace payorch::http
