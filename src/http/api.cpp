#include "http/api.h"

#include <boost/json/array.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>
#include <charconv>
#include <cstdio>

#include "core/digest.h"
#include "core/intent.h"
#include "core/view.h"
#include "store/intake.h"
#include "store/payments.h"
#include "util/failpoint.h"

namespace payorch::http {
namespace {

namespace bhttp = boost::beast::http;

constexpr std::string_view payments_path = "/v1/payments";

// Thrown inside the intake transaction by the `intake.before_commit` failpoint: the writer
// rolls the job back, exactly as it would for a real failure at that point.
struct InjectedRollback : std::runtime_error {
  InjectedRollback() : std::runtime_error("injected rollback before commit") {}
};

bool json_content_type(std::string_view ct) {
  auto semi = ct.find(';');
  std::string_view media = ct.substr(0, semi);
  while (!media.empty() && media.back() == ' ') media.remove_suffix(1);
  if (media.size() != 16) return false;
  for (std::size_t i = 0; i < media.size(); ++i) {
    char c = media[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != "application/json"[i]) return false;
  }
  return true;
}

boost::json::array field_errors(const std::vector<FieldError>& errors) {
  boost::json::array out;
  for (const auto& e : errors)
    out.push_back(boost::json::object{{"field", e.field}, {"code", e.code}, {"message", e.message}});
  return out;
}

Response unauthorized(unsigned version) {
  Response r = make_problem(401, "unauthorized", "a valid bearer token is required", {}, version);
  r.set(bhttp::field::www_authenticate, "Bearer realm=\"payorch\"");
  return r;
}

Response unavailable(std::string_view code, std::string detail, unsigned version, int retry_after_s) {
  Response r = make_problem(503, code, std::move(detail), {}, version);
  r.set(bhttp::field::retry_after, std::to_string(retry_after_s));
  return r;
}

Response method_not_allowed(std::string_view allow, unsigned version) {
  Response r = make_problem(405, "method-not-allowed", "allowed: " + std::string(allow), {}, version);
  r.set(bhttp::field::allow, allow);
  return r;
}

Response with_payment(unsigned status, const Payment& p, unsigned version) {
  Response r = make_json(status, payment_view(p), version);
  r.set(bhttp::field::location, std::string(payments_path) + "/" + p.operation_id);
  r.set("Idempotency-Key", p.operation_id);
  return r;
}

}  // namespace

Api::Api(ApiDeps deps) : deps_(deps), auth_(deps.config) {}

void Api::handle(Request&& req, Responder done) {
  const unsigned v = req.version();
  boost::urls::result<boost::urls::url_view> url = boost::urls::parse_origin_form(req.target());
  if (!url) return done(make_problem(400, "bad-request", "malformed request target", {}, v));
  const std::string path = url->path();
  const boost::urls::params_view query = url->params();
  const auto method = req.method();

  if (path == "/healthz") {
    if (method != bhttp::verb::get) return done(method_not_allowed("GET", v));
    return done(make_json(200, boost::json::object{{"status", "ok"}}, v));
  }
  if (path == "/readyz") {
    if (method != bhttp::verb::get) return done(method_not_allowed("GET", v));
    if (draining()) return done(unavailable("shutting-down", "payorchd is draining", v, 5));
    if (!ready_.load()) return done(unavailable("not-ready", "payorchd is starting", v, 1));
    return done(make_json(200, boost::json::object{{"ready", true}}, v));
  }

  const bool collection = path == payments_path;
  const bool item = path.size() > payments_path.size() + 1 && path.starts_with(payments_path) &&
                    path[payments_path.size()] == '/';
  if (!collection && !item) return done(make_problem(404, "not-found", "no such resource", {}, v));

  auto tenant = auth_.tenant(req[bhttp::field::authorization]);
  if (!tenant) return done(unauthorized(v));

  try {
    if (collection) {
      if (method == bhttp::verb::post) return post_payment(req, *tenant, std::move(done));
      if (method == bhttp::verb::get) return done(list_payments(req, *tenant, query));
      return done(method_not_allowed("GET, POST", v));
    }
    if (method != bhttp::verb::get) return done(method_not_allowed("GET", v));
    std::string_view operation_id = std::string_view(path).substr(payments_path.size() + 1);
    return done(get_payment(req, *tenant, operation_id));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "payorchd: api: %s %s: %s\n", std::string(req.method_string()).c_str(),
                 path.c_str(), e.what());
    return done(unavailable("storage-unavailable", "storage error; retry with the same key", v, 1));
  }
}

void Api::post_payment(Request& req, const std::string& tenant_id, Responder done) {
  const unsigned v = req.version();
  if (draining()) return done(unavailable("shutting-down", "payorchd is draining; retry with the same key", v, 5));
  if (!json_content_type(req[bhttp::field::content_type]))
    return done(make_problem(415, "unsupported-media-type", "Content-Type must be application/json", {}, v));

  std::optional<std::string_view> key_header;
  if (auto it = req.find("Idempotency-Key"); it != req.end()) key_header = it->value();
  auto parsed = parse_intent(req.body(), key_header);
  if (auto* rej = std::get_if<IntentRejection>(&parsed)) {
    boost::json::object extra;
    if (!rej->errors.empty()) extra["errors"] = field_errors(rej->errors);
    return done(make_problem(static_cast<unsigned>(rej->status), rej->problem, rej->detail, std::move(extra), v));
  }
  Intent intent = std::get<Intent>(std::move(parsed));
  intent.operation_type = "payment";

  std::string provider = intent.provider.value_or(deps_.config.default_provider);
  if (!deps_.config.find_provider(provider)) {
    std::vector<FieldError> errs{{"provider", "unknown_provider", "no provider named '" + provider + "'"}};
    return done(make_problem(422, "invalid-request", "the request names an unknown provider",
                             boost::json::object{{"errors", field_errors(errs)}}, v));
  }

  auto request = std::make_shared<store::IntakeRequest>();
  request->tenant_id = tenant_id;
  request->request_digest = request_digest(intent);
  request->intent = std::move(intent);
  request->provider = std::move(provider);
  auto outcome = std::make_shared<store::IntakeOutcome>();

  deps_.writer.submit(
      [request, outcome, this](store::Db& db) {
        *outcome = store::record_intake(db, *request, deps_.clock.now_ms(), deps_.rng);
        // Crash/error point: rows written, transaction not yet committed.
        if (failpoint::hit("intake.before_commit")) throw InjectedRollback();
      },
      [request, outcome, v, done = std::move(done)](store::WriteStatus status, const std::string& error) {
        switch (status) {
          case store::WriteStatus::committed: break;
          case store::WriteStatus::busy:
            return done(unavailable("storage-busy", "database busy; retry with the same key", v, 1));
          case store::WriteStatus::stopped:
            return done(unavailable("shutting-down", "payorchd is draining; retry with the same key", v, 5));
          case store::WriteStatus::rejected:
          case store::WriteStatus::failed:
            std::fprintf(stderr, "payorchd: intake %s/%s not recorded: %s\n", request->tenant_id.c_str(),
                         request->intent.operation_id.c_str(), error.c_str());
            return done(unavailable("storage-unavailable",
                                    "the payment was not recorded; retry with the same key", v, 1));
        }
        // Crash point: committed, not yet answered. The retry is a replay.
        failpoint::hit("intake.after_commit");
        using Kind = store::IntakeOutcome::Kind;
        switch (outcome->kind) {
          case Kind::created:
            return done(with_payment(201, outcome->payment, v));
          case Kind::replayed: {
            Response r = with_payment(200, outcome->payment, v);
            r.set("Idempotent-Replayed", "true");
            return done(std::move(r));
          }
          case Kind::conflict: {
            boost::json::object extra{{"operation_id", outcome->payment.operation_id},
                                      {"payment_id", outcome->payment.id},
                                      {"stored_digest", outcome->payment.request_digest},
                                      {"request_digest", outcome->attempted_digest}};
            return done(make_problem(422, "idempotency-key-reused",
                                     "operation_id was already used for a different request; the stored "
                                     "payment is unchanged",
                                     std::move(extra), v));
          }
        }
      });
}

Response Api::get_payment(const Request& req, const std::string& tenant_id, std::string_view operation_id) {
  const unsigned v = req.version();
  std::string op(operation_id);
  if (!valid_operation_id(op)) return make_problem(404, "not-found", "no such payment", {}, v);
  auto p = deps_.reads.with([&](store::Db& db) {
    return store::find_payment_by_operation(db, tenant_id, "payment", op);
  });
  // Another tenant's payment and a missing one look the same.
  if (!p) return make_problem(404, "not-found", "no such payment", {}, v);
  Response r = make_json(200, payment_view(*p), v);
  return r;
}

Response Api::list_payments(const Request& req, const std::string& tenant_id, boost::urls::params_view query) {
  const unsigned v = req.version();
  std::optional<PaymentState> state;
  int limit = 50;
  std::optional<std::string> cursor;
  std::vector<FieldError> errs;
  for (auto param : query) {
    std::string key = param.key;
    std::string value = param.has_value ? std::string(param.value) : std::string();
    if (key == "state") {
      state = parse_payment_state(value);
      if (!state) errs.push_back({"state", "invalid_format", "state must be PROCESSING, UNKNOWN, SUCCEEDED or FAILED_FINAL"});
    } else if (key == "limit") {
      auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), limit);
      if (ec != std::errc() || ptr != value.data() + value.size() || limit < 1 || limit > 200)
        errs.push_back({"limit", "out_of_range", "limit must be an integer from 1 to 200"});
    } else if (key == "cursor") {
      if (value.size() != 30 || !value.starts_with("pay_"))
        errs.push_back({"cursor", "invalid_format", "cursor must be a next_cursor value from a previous page"});
      else
        cursor = value;
    } else {
      errs.push_back({key, "unknown_field", "unknown query parameter"});
    }
  }
  if (!errs.empty())
    return make_problem(422, "invalid-request", "invalid query parameters",
                        boost::json::object{{"errors", field_errors(errs)}}, v);
  auto page = deps_.reads.with([&](store::Db& db) {
    return store::list_payments(db, tenant_id, state, limit, cursor);
  });
  boost::json::array data;
  for (const auto& p : page.payments) data.push_back(payment_view(p));
  boost::json::object body{{"data", std::move(data)}};
  if (page.next_cursor) body["next_cursor"] = *page.next_cursor;
  else body["next_cursor"] = nullptr;
  return make_json(200, body, v);
}

}  // namespace payorch::http
