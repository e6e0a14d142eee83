#include "http/instrumented.h"

#include <array>
#include <memory>

#include "core/hex.h"
#include "net/trace_context.h"
#include "util/log.h"

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

// The request's id: the caller's when valid, else a fresh one.
std::string id_of(const Request& req, Random& rng) {
  const auto given = req.find(request_id_header);
  if (given != req.end() && valid_request_id(given->value())) return std::string(given->value());
  return new_request_id(rng);
}

void write_access_line(std::string_view method, const std::string& route, const Response& res,
                       std::int64_t duration_ms, const log::Context& ctx, std::size_t request_bytes) {
  std::vector<log::Field> fields{{"method", method},
                                 {"route", route},
                                 {"status", res.result_int()},
                                 {"duration_ms", duration_ms}};
  if (!ctx.tenant.empty()) fields.emplace_back("tenant", ctx.tenant);
  if (!ctx.operation_id.empty()) fields.emplace_back("operation_id", ctx.operation_id);
  fields.emplace_back("bytes", std::uint64_t{res.body().size()});
  fields.emplace_back("request_bytes", std::uint64_t{request_bytes});
  fields.emplace_back("request_id", ctx.request_id);
  log::write(log::Level::info, "http.access", "", fields);
}

}  // namespace

bool valid_request_id(std::string_view id) {
  if (id.empty() || id.size() > 128) return false;
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    std::string_view("._:/+=-").find(c) != std::string_view::npos;
    if (!ok) return false;
  }
  return true;
}

std::string new_request_id(Random& rng) {
  std::array<std::uint8_t, 16> bytes{};
  rng.fill(bytes);
  return lower_hex(bytes);
}

RequestOrigin origin_of(const Request& req) {
  RequestOrigin origin;
  if (const auto id = req.find(request_id_header); id != req.end() && valid_request_id(id->value()))
    origin.request_id = std::string(id->value());
  // A traceparent that is repeated or invalid is ignored (W3C Trace Context: restart the trace;
  // payorch does not start one of its own).
  if (req.count(net::traceparent_header) == 1) {
    if (auto tp = net::parse_traceparent(req[net::traceparent_header])) {
      origin.trace_id = std::move(tp->trace_id);
      origin.trace_flags = std::move(tp->flags);
    }
  }
  return origin;
}

const std::vector<double>& request_duration_buckets() {
  static const std::vector<double> buckets{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                           0.5,   1,      2.5,   5,    10,    20,   30};
  return buckets;
}

std::string route_of(std::string_view target) {
  std::string_view path = target.substr(0, target.find_first_of("?#"));
  for (std::string_view fixed : {"/healthz", "/readyz", "/status", "/metrics", "/v1/payments",
                                 "/v1/events", "/v1/reconciliation", "/v1/reconciliation/import",
                                 "/v1/admin/payments", "/v1/admin/timeline", "/console"})
    if (path == fixed) return std::string(fixed);
  if (path.starts_with("/console/")) return "/console/{asset}";
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

InstrumentedHandler::InstrumentedHandler(Handler& inner, Metrics& metrics, const Clock& clock,
                                         Random& rng, bool access_log)
    : inner_(inner), metrics_(metrics), clock_(clock), rng_(rng), access_log_(access_log) {
  metrics_.declare_counter(requests_metric,
                           "HTTP requests answered, by route template, method and status");
  metrics_.declare_histogram(
      request_duration_metric,
      "Time from a request's arrival at the API to its answer, by route template and method",
      request_duration_buckets());
}

void InstrumentedHandler::handle(Request&& req, Responder done) {
  struct Pending {
    std::string route;
    std::string method;
    MonotonicTime started;
    std::size_t request_bytes = 0;
    log::Context ctx;
  };
  auto p = std::make_shared<Pending>(Pending{route_of(req.target()), method_label(req.method_string()),
                                             clock_.monotonic(), req.body().size(),
                                             log::Context{id_of(req, rng_), "", ""}});
  // The inner handler reads the id from the request (origin_of), whether given or fresh; lines
  // logged while it runs on this thread carry it (and the tenant, once Api has authenticated
  // it: log::note_tenant).
  req.set(request_id_header, p->ctx.request_id);
  log::ContextScope scope(p->ctx);
  inner_.handle(std::move(req), [this, p, done = std::move(done)](Response res) {
    const auto elapsed = clock_.monotonic() - p->started;
    const double seconds = std::chrono::duration<double>(elapsed).count();
    metrics_.inc(requests_metric,
                 {{"route", p->route}, {"method", p->method}, {"status", std::to_string(res.result_int())}});
    metrics_.observe(request_duration_metric, {{"route", p->route}, {"method", p->method}}, seconds);
    res.set(request_id_header, p->ctx.request_id);
    if (access_log_)
      write_access_line(p->method, p->route, res,
                        std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count(), p->ctx,
                        p->request_bytes);
    done(std::move(res));
  });
}

std::optional<Response> InstrumentedHandler::screen(const Request& header) {
  std::optional<Response> refusal = inner_.screen(header);
  if (!refusal) return refusal;
  const std::string route = route_of(header.target());
  const std::string method = method_label(header.method_string());
  metrics_.inc(requests_metric,
               {{"route", route}, {"method", method}, {"status", std::to_string(refusal->result_int())}});
  metrics_.observe(request_duration_metric, {{"route", route}, {"method", method}}, 0.0);
  const log::Context ctx{id_of(header, rng_), "", ""};
  refusal->set(request_id_header, ctx.request_id);
  if (access_log_) write_access_line(method, route, *refusal, 0, ctx, 0);
  return refusal;
}

}  // namespace payorch::http
