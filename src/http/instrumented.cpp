#include "http/instrumented.h"

#include <array>
#include <memory>

namespace payorch::http {
namespace {

// One path segment at a time, without the leading slash; "" once the path is used up.
std::string_view next_segment(std::string_view& path) {
  if (path.starts_with('/')) path.remove_prefix(1);
  const std::size_t slash = path.find('/');
  std::string_view seg = path.substr(0, slash);
  path = slash == std::string_view::npos ? std::string_view{} : path.substr(slash);
  return seg;
}

}  // namespace

std::string route_of(std::string_view target) {
  std::string_view path = target.substr(0, target.find_first_of("?#"));
  for (std::string_view fixed : {"/healthz", "/readyz", "/status", "/metrics", "/v1/payments",
                                 "/v1/events", "/v1/reconciliation", "/v1/reconciliation/import"})
    if (path == fixed) return std::string(fixed);
  std::array<std::string_view, 5> seg{};
  std::size_t n = 0;
  while (!path.empty() && n < seg.size()) seg[n++] = next_segment(path);
  if (!path.empty() || n < 3 || seg[0] != "v1") return "other";
  for (std::size_t i = 0; i < n; ++i)
    if (seg[i].empty()) return "other";
  if (n == 3 && seg[1] == "payments") return "/v1/payments/{operation_id}";
  if (n == 4 && seg[1] == "payments" && seg[3] == "refunds") return "/v1/payments/{operation_id}/refunds";
  if (n == 3 && seg[1] == "refunds") return "/v1/refunds/{operation_id}";
  if (n == 3 && seg[1] == "callbacks") return "/v1/callbacks/{provider}";
  if (n == 3 && seg[1] == "reconciliation") return "/v1/reconciliation/{case_id}";
  if (n == 4 && seg[1] == "reconciliation" && seg[3] == "resolve") return "/v1/reconciliation/{case_id}/resolve";
  if (n == 4 && seg[1] == "admin" && seg[2] == "payments") return "/v1/admin/payments/{payment_id}";
  if (n == 4 && seg[1] == "admin" && seg[2] == "refunds") return "/v1/admin/refunds/{refund_id}";
  return "other";
}

std::string method_label(std::string_view method) {
  for (std::string_view known : {"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"})
    if (method == known) return std::string(known);
  return "other";
}

InstrumentedHandler::InstrumentedHandler(Handler& inner, Metrics& metrics, const Clock& clock)
    : inner_(inner), metrics_(metrics), clock_(clock) {
  metrics_.declare_counter(requests_metric,
                           "HTTP requests answered, by route template, method and status");
  metrics_.declare_histogram(request_duration_metric,
                             "Time from a request's arrival at the API to its answer, by route template");
}

void InstrumentedHandler::handle(Request&& req, Responder done) {
  struct Pending {
    std::string route;
    std::string method;
    MonotonicTime started;
  };
  auto p = std::make_shared<Pending>(
      Pending{route_of(req.target()), method_label(req.method_string()), clock_.monotonic()});
  inner_.handle(std::move(req), [this, p, done = std::move(done)](Response res) {
    const double seconds = std::chrono::duration<double>(clock_.monotonic() - p->started).count();
    metrics_.inc(requests_metric,
                 {{"route", p->route}, {"method", p->method}, {"status", std::to_string(res.result_int())}});
    metrics_.observe(request_duration_metric, {{"route", p->route}}, seconds);
    done(std::move(res));
  });
}

std::optional<Response> InstrumentedHandler::screen(const Request& header) {
  std::optional<Response> refusal = inner_.screen(header);
  if (!refusal) return refusal;
  const std::string route = route_of(header.target());
  metrics_.inc(requests_metric, {{"route", route},
                                 {"method", method_label(header.method_string())},
                                 {"status", std::to_string(refusal->result_int())}});
  metrics_.observe(request_duration_metric, {{"route", route}}, 0.0);
  return refusal;
}

}  // namespace payorch::http
