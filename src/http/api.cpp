#include "http/api.h"

#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>

#include "http/admin_api.h"
#include "http/callbacks_api.h"
#include "http/console.h"
#include "http/instrumented.h"
#include "http/not_committed.h"
#include "http/request_fields.h"
#include "util/log.h"

namespace payorch::http {
namespace {

namespace bhttp = boost::beast::http;

// /v1/payments/{operation_id}
bool is_payment_path(std::string_view path) {
  return path.size() > payments_path.size() + 1 && path.starts_with(payments_path) &&
         path[payments_path.size()] == '/';
}

// /v1/refunds/{operation_id}
bool is_refund_path(std::string_view path) {
  return path.size() > refunds_path.size() + 1 && path.starts_with(refunds_path) &&
         path[refunds_path.size()] == '/';
}

// /v1/payments/{operation_id}/refunds: the payment's operation_id, or nullopt.
std::optional<std::string_view> refunds_of_payment(std::string_view path) {
  if (!is_payment_path(path) || !path.ends_with(refunds_segment)) return std::nullopt;
  std::string_view op = path.substr(payments_path.size() + 1);
  op.remove_suffix(refunds_segment.size());
  if (op.empty() || op.find('/') != std::string_view::npos) return std::nullopt;
  return op;
}

Response tenant_unauthorized(unsigned version) {
  return unauthorized("a valid bearer token is required", "payorch", version);
}

}  // namespace

Api::Api(ApiDeps deps) : deps_(deps), auth_(deps.config), started_(deps.clock.monotonic()) {
  for (const auto& t : deps_.config.tenants)
    if (t.webhook) push_tenants_.push_back(t.id);
}

std::optional<Response> Api::screen(const Request& header) {
  boost::urls::result<boost::urls::url_view> url = boost::urls::parse_origin_form(header.target());
  if (!url) return std::nullopt;  // handle() answers 400
  const std::string path = url->path();
  if (deps_.admin && AdminApi::owns(path)) return deps_.admin->screen(header);
  const bool tenant_route = path == events_path || path == payments_path || is_payment_path(path) ||
                            is_refund_path(path);
  if (tenant_route && !auth_.tenant(header[bhttp::field::authorization]))
    return tenant_unauthorized(header.version());
  return std::nullopt;
}

bool Api::is_operator_request(const Request& header) const {
  boost::urls::result<boost::urls::url_view> url = boost::urls::parse_origin_form(header.target());
  if (!url) return false;
  const std::string path = url->path();
  return path == "/healthz" || path == "/readyz" || path == "/status" || path == "/metrics" ||
         is_console_path(path) || (deps_.admin && AdminApi::owns(path));
}

void Api::handle(Request&& req, Responder done) {
  const unsigned v = req.version();
  boost::urls::result<boost::urls::url_view> url = boost::urls::parse_origin_form(req.target());
  if (!url) return done(make_problem(Problem::bad_request, "malformed request target", {}, v));
  const std::string path = url->path();
  const boost::urls::params_view query = url->params();
  const auto method = req.method();
  if (const std::vector<FieldError> repeated = repeated_query_parameters(query); !repeated.empty())
    return done(invalid_request("the query parameter " + repeated.front().field +
                                    " is given more than once",
                                repeated, v));

  // The operator console's static page: no token to load it; its data comes from the admin API.
  if (is_console_path(path)) return done(console_response(req, path));

  if (path == "/healthz") {
    if (method != bhttp::verb::get) return done(method_not_allowed("GET", v));
    return done(make_json(200, boost::json::object{{"status", "ok"}}, v));
  }
  if (path == "/readyz") {
    if (method != bhttp::verb::get) return done(method_not_allowed("GET", v));
    if (draining()) return done(make_problem(Problem::shutting_down, "payorchd is draining", {}, v));
    if (!ready_.load()) return done(make_problem(Problem::not_ready, "payorchd is starting", {}, v));
    return with_current_storage_health(
        [this, v, done = std::move(done)](bool stalled) { done(readiness(v, stalled)); });
  }

  if (path == "/status") {
    if (method != bhttp::verb::get) return done(method_not_allowed("GET", v));
    return with_current_storage_health([this, v, done = std::move(done)](bool stalled) {
      try {
        done(status(v, stalled));
      } catch (const std::exception& e) {
        done(request_failed(e, "/status", "GET", "the database cannot be read; retry", v));
      }
    });
  }

  if (path == "/metrics") {
    if (method != bhttp::verb::get) return done(method_not_allowed("GET", v));
    if (!deps_.metrics) return done(make_problem(Problem::not_found, "no such resource", {}, v));
    try {
      return done(metrics(v));
    } catch (const std::exception& e) {
      return done(request_failed(e, path, "GET", "the database cannot be read; retry", v));
    }
  }

  if (deps_.admin && AdminApi::owns(path))
    return deps_.admin->handle(std::move(req), std::move(done));
  if (deps_.callbacks && CallbacksApi::owns(path))
    return deps_.callbacks->handle(std::move(req), std::move(done));

  if (path == events_path) {
    auto tenant = auth_.tenant(req[bhttp::field::authorization]);
    if (!tenant) return done(tenant_unauthorized(v));
    log::note_tenant(*tenant);
    if (method != bhttp::verb::get) return done(method_not_allowed("GET", v));
    try {
      return done(list_events(req, *tenant, query));
    } catch (const std::exception& e) {
      return done(request_failed(e, path, "GET", "storage error; retry", v));
    }
  }

  const bool collection = path == payments_path;
  const bool item = is_payment_path(path);
  const bool refund_item = is_refund_path(path);
  if (!collection && !item && !refund_item) return done(make_problem(Problem::not_found, "no such resource", {}, v));

  auto tenant = auth_.tenant(req[bhttp::field::authorization]);
  if (!tenant) return done(tenant_unauthorized(v));
  log::note_tenant(*tenant);

  try {
    if (collection) {
      if (method == bhttp::verb::post) return post_payment(req, *tenant, std::move(done));
      if (method == bhttp::verb::get) return done(list_payments(req, *tenant, query));
      return done(method_not_allowed("GET, POST", v));
    }
    if (refund_item) {
      if (method != bhttp::verb::get) return done(method_not_allowed("GET", v));
      return get_refund(req, *tenant, std::string_view(path).substr(refunds_path.size() + 1), std::move(done));
    }
    if (auto payment_op = refunds_of_payment(path)) {
      if (method == bhttp::verb::post) return post_refund(req, *tenant, std::string(*payment_op), std::move(done));
      if (method == bhttp::verb::get) return done(list_refunds(req, *tenant, *payment_op));
      return done(method_not_allowed("GET, POST", v));
    }
    if (method != bhttp::verb::get) return done(method_not_allowed("GET", v));
    std::string_view operation_id = std::string_view(path).substr(payments_path.size() + 1);
    return get_payment(req, *tenant, operation_id, std::move(done));
  } catch (const std::exception& e) {
    return done(request_failed(e, path, req.method_string(), "storage error; retry with the same key", v));
  }
}

}  // namespace payorch::http
