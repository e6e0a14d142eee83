#pragma once
// What every request answered by a Handler gets, in one place: a Handler that wraps another and
//  - gives the request its id: the caller's X-Request-Id when valid_request_id() accepts it,
//    else a fresh one (32 hex digits, 128 random bits); the answer carries it as X-Request-Id,
//    and every line logged while the request is handled on its thread carries request_id=
//    (and tenant= once authenticated; see log::Context);
//  - counts `payorch_http_requests_total{route,method,status}` and observes
//    `payorch_http_request_duration_seconds{route,method}` from handle() to the Responder call
//    (so an intake's time includes its group commit, and `Prefer: wait` its wait — hence
//    buckets up to 30 s, and the method label that keeps a waiting GET apart from an intake);
//  - writes one access line per answer (event=http.access: method, route, status, duration_ms,
//    tenant when authenticated, bytes of the answer's body, request_bytes, request_id), unless
//    log.access is false.
//
// Labels carry the route template, never the raw path: a path holds operation ids, case ids
// and payment ids, which are tenant data. Answers the server gives itself (413, 431, 408,
// malformed or ambiguously framed requests, 503 on a reserved connection) never reach a
// Handler: they are not counted, logged or given a request id here.
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/payment.h"
#include "http/server.h"
#include "util/metrics.h"

namespace payorch::http {

inline constexpr const char* requests_metric = "payorch_http_requests_total";
inline constexpr const char* request_duration_metric = "payorch_http_request_duration_seconds";

// The route template of a request target: "/v1/payments/{operation_id}",
// "/v1/reconciliation/{case_id}/resolve", ...; "other" for a path payorch does not serve.
std::string route_of(std::string_view target);
// The method as a label: GET, HEAD, POST, PUT, DELETE, PATCH, OPTIONS, or "other".
std::string method_label(std::string_view method);

// The header a request id travels in, both ways.
inline constexpr std::string_view request_id_header = "X-Request-Id";
// Whether a caller's X-Request-Id is kept: 1-128 characters of [A-Za-z0-9._:/+=-]. Anything
// else (spaces, controls, quotes: a forged log field) is replaced by a fresh id.
bool valid_request_id(std::string_view id);
// A fresh request id: 32 lowercase hex digits from `rng`.
std::string new_request_id(Random& rng);
// What a write caused by a request keeps of it (core/payment.h): its X-Request-Id (handle() has
// set a valid one on every request it hands on) and the trace of a valid W3C traceparent.
RequestOrigin origin_of(const Request& req);
// The upper bounds of the duration histogram, in seconds: 1 ms ... 30 s.
const std::vector<double>& request_duration_buckets();

class InstrumentedHandler final : public Handler {
public:
  // Durations are read on `clock`'s monotonic time; fresh request ids come from `rng` (called
  // from the io threads: it must be thread-safe, as OsRandom is). `access_log` is log.access.
  InstrumentedHandler(Handler& inner, Metrics& metrics, const Clock& clock, Random& rng,
                      bool access_log = true);
  void handle(Request&& req, Responder done) override;
  // The inner handler's screen; a refusal is counted, logged and given its id like any answer,
  // its duration zero.
  std::optional<Response> screen(const Request& header) override;
  bool is_operator_request(const Request& header) const override {
    return inner_.is_operator_request(header);
  }

private:
  Handler& inner_;
  Metrics& metrics_;
  const Clock& clock_;
  Random& rng_;
  bool access_log_;
};

}  // namespace payorch::http
