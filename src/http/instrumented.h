#pragma once
// Request metrics for GET /metrics: a Handler that wraps another and, for every request it
// answers, counts `payorch_http_requests_total{route,method,status}` and observes
// `payorch_http_request_duration_seconds{route}` from handle() to the Responder call (so an
// intake's time includes its group commit, and `Prefer: wait` its wait).
//
// Labels carry the route template, never the raw path: a path holds operation ids, case ids
// and payment ids, which are tenant data. Answers the server gives itself (413, 431, 408,
// malformed or ambiguously framed requests, 503 on a reserved connection) never reach a
// Handler and are not counted here.
#include <string>
#include <string_view>

#include "core/clock.h"
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

class InstrumentedHandler final : public Handler {
public:
  // Durations are read on `clock`'s monotonic time.
  InstrumentedHandler(Handler& inner, Metrics& metrics, const Clock& clock);
  void handle(Request&& req, Responder done) override;
  // The inner handler's screen; a refusal is counted like any answer, its duration zero.
  std::optional<Response> screen(const Request& header) override;
  bool is_operator_request(const Request& header) const override {
    return inner_.is_operator_request(header);
  }

private:
  Handler& inner_;
  Metrics& metrics_;
  const Clock& clock_;
};

}  // namespace payorch::http
