#include "http/api.h"

#include <boost/json/array.hpp>
#include <boost/json/parse.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <algorithm>
#include <charconv>
#include <mutex>
#include <tuple>

#include "core/digest.h"
#include "http/admin_api.h"
#include "http/callbacks_api.h"
#include "http/instrumented.h"
#include "http/not_committed.h"
#include "http/request_fields.h"
#include "core/intent.h"
#include "core/view.h"
#include "store/commit_sequence.h"
#include "store/engine_store.h"
#include "store/intake.h"
#include "store/outbox.h"
#include "store/status.h"
#include "store/payments.h"
#include "util/failpoint.h"
#include "util/log.h"

namespace payorch::http {
namespace {

namespace bhttp = boost::beast::http;

constexpr std::string_view payments_path = "/v1/payments";
constexpr std::string_view events_path = "/v1/events";

// Thrown inside the intake transaction by the `intake.before_commit` failpoint: the writer
// rolls the job back, exactly as it would for a real failure at that point.
struct InjectedRollback : std::runtime_error {
  InjectedRollback() : std::runtime_error("injected rollback before commit") {}
};

// Thrown inside the intake transaction when a new payment cannot be taken for a reason of the
// present configuration — its provider is at a risk cap, or is not configured (any more): the
// insert is rolled back. Both are judged only once the store has said the intent is new, so a
// replay of a stored payment always answers 200 with it, whatever the config says today.
// The reason is kept beside the job (the writer reports only that the job was rejected).
struct IntakeRefused : std::runtime_error {
  enum class Why { paused, unknown_provider };
  IntakeRefused() : std::runtime_error("new intent refused by the configuration") {}
};

// /v1/payments/{operation_id}
bool is_payment_path(std::string_view path) {
  return path.size() > payments_path.size() + 1 && path.starts_with(payments_path) &&
         path[payments_path.size()] == '/';
}

Response tenant_unauthorized(unsigned version) {
  return unauthorized("a valid bearer token is required", "payorch", version);
}

// The request's `Prefer: wait` in seconds: every Prefer line, read as one list.
int wait_preference(const Request& req) {
  std::vector<std::string_view> lines;
  for (auto [it, end] = req.equal_range(bhttp::field::prefer); it != end; ++it) lines.push_back(it->value());
  return preferred_wait(lines);
}

// /readyz and /status say whether the database takes writes now, not whether it did at start-up.
// The writer records the outcome of its transactions (store::StorageHealth). A write committed
// in the last 5 s, or a failure in the last second, is current enough; otherwise — nothing
// written for a while, or a failure that may have cleared — a probe asks again first: a writer
// job that rewrites one row (the commit sequence), so a full disk or a read-only file fails it.
// So readiness recovers when the disk does, with no intake needed, and an idle daemon costs at
// most one small write per 5 s of readiness checks.
constexpr std::chrono::seconds storage_fresh_for{5};
constexpr std::chrono::seconds failing_storage_probed_every{1};
constexpr std::chrono::seconds storage_probe_timeout{2};

// One probe: answers once, with the writer's answer or at the timeout, on the executor.
struct StorageProbe {
  StorageProbe(boost::asio::any_io_executor executor, std::function<void(bool)> on_answer)
      : timer(std::move(executor)), then(std::move(on_answer)) {}
  void answer(bool stalled) {
    if (!answered.exchange(true)) then(stalled);
  }
  std::atomic<bool> answered{false};
  boost::asio::steady_timer timer;
  std::function<void(bool stalled)> then;
};

// The storage error /readyz and /status name, or null while the database takes writes.
boost::json::value storage_error(const store::StorageHealth& h, bool stalled, UnixMillis now) {
  if (stalled)
    return boost::json::object{
        {"kind", "stalled"},
        {"message", "a write did not complete within " + std::to_string(storage_probe_timeout.count()) + " s"},
        {"at", format_rfc3339(now)}};
  if (h.writable) return nullptr;
  return boost::json::object{{"kind", h.error_kind},
                             {"message", h.error},
                             {"at", format_rfc3339(h.failed_at.value_or(now))}};
}

Response with_payment(unsigned status, const Payment& p, unsigned version) {
  Response r = make_json(status, payment_view(p), version);
  r.set(bhttp::field::location, std::string(payments_path) + "/" + p.operation_id);
  r.set("Idempotency-Key", p.operation_id);
  return r;
}


// One `Prefer: wait=N` answer: waits for the payment to become terminal or for the deadline,
// whichever is first. Every check re-reads the committed row, so the answer is what the
// database says. Lives until it has answered (the timer and the subscription hold it).
class PaymentWait : public std::enable_shared_from_this<PaymentWait> {
public:
  using Answer = std::function<void(const Payment&)>;
  PaymentWait(const ApiDeps& deps, Payment payment, std::chrono::seconds wait, Answer answer)
      : deps_(deps),
        strand_(boost::asio::make_strand(deps.executor)),
        last_(std::move(payment)),
        timer_(strand_, wait),
        answer_(std::move(answer)) {}

  void start() {
    auto self = shared_from_this();
    timer_.async_wait([self](boost::system::error_code ec) {
      if (!ec) self->finish(true);
    });
    // Subscribe before the first re-read, so a change between the two is not missed.
    subscribe();
    boost::asio::post(strand_, [self] { self->check(); });
  }

private:
  void subscribe() {
    std::lock_guard lock(mu_);
    if (answered_ || subscribed_) return;
    subscribed_ = true;
    auto self = shared_from_this();
    token_ = deps_.changes.subscribe(last_.id, [self] {
      {
        std::lock_guard l(self->mu_);
        self->subscribed_ = false;
      }
      boost::asio::post(self->strand_, [self] { self->check(); });
    });
  }

  void check() {
    try {
      auto p = deps_.reads.with([&](store::Db& db) { return store::find_payment_by_id(db, last_.id); });
      std::lock_guard lock(mu_);
      if (p) last_ = *p;
    } catch (const std::exception&) {
      // Keep the last view; the deadline still answers.
    }
    finish(false);
  }

  void finish(bool deadline) {
    std::optional<Payment> answer;
    {
      std::lock_guard lock(mu_);
      if (answered_) return;
      if (deadline || is_terminal(last_.state)) {
        answered_ = true;
        if (subscribed_) deps_.changes.cancel(last_.id, token_);
        subscribed_ = false;
        answer = last_;
      }
    }
    if (!answer) return subscribe();  // not terminal yet: listen for the next change
    timer_.cancel();
    answer_(*answer);
  }

  // The timer, checks and the answer all run on this strand.
  const ApiDeps& deps_;
  boost::asio::strand<boost::asio::any_io_executor> strand_;
  std::mutex mu_;
  Payment last_;
  bool answered_ = false;
  bool subscribed_ = false;
  std::uint64_t token_ = 0;
  boost::asio::steady_timer timer_;
  Answer answer_;
};
}  // namespace

Api::Api(ApiDeps deps) : deps_(deps), auth_(deps.config) {
  for (const auto& t : deps_.config.tenants)
    if (t.webhook) push_tenants_.push_back(t.id);
}

std::optional<Response> Api::screen(const Request& header) {
  boost::urls::result<boost::urls::url_view> url = boost::urls::parse_origin_form(header.target());
  if (!url) return std::nullopt;  // handle() answers 400
  const std::string path = url->path();
  if (deps_.admin && AdminApi::owns(path)) return deps_.admin->screen(header);
  const bool tenant_route = path == events_path || path == payments_path || is_payment_path(path);
  if (tenant_route && !auth_.tenant(header[bhttp::field::authorization]))
    return tenant_unauthorized(header.version());
  return std::nullopt;
}

bool Api::is_operator_request(const Request& header) const {
  boost::urls::result<boost::urls::url_view> url = boost::urls::parse_origin_form(header.target());
  if (!url) return false;
  const std::string path = url->path();
  return path == "/healthz" || path == "/readyz" || path == "/status" || path == "/metrics" ||
         (deps_.admin && AdminApi::owns(path));
}

void Api::handle(Request&& req, Responder done) {
  const unsigned v = req.version();
  boost::urls::result<boost::urls::url_view> url = boost::urls::parse_origin_form(req.target());
  if (!url) return done(make_problem(Problem::bad_request, "malformed request target", {}, v));
  const std::string path = url->path();
  const boost::urls::params_view query = url->params();
  const auto method = req.method();

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
        done(make_problem(Problem::storage_unavailable, e.what(), {}, v));
      }
    });
  }

  if (path == "/metrics") {
    if (method != bhttp::verb::get) return done(method_not_allowed("GET", v));
    if (!deps_.metrics) return done(make_problem(Problem::not_found, "no such resource", {}, v));
    try {
      return done(metrics(v));
    } catch (const std::exception& e) {
      return done(make_problem(Problem::storage_unavailable, e.what(), {}, v));
    }
  }

  if (deps_.admin && AdminApi::owns(path))
    return deps_.admin->handle(std::move(req), std::move(done));
  if (deps_.callbacks && CallbacksApi::owns(path))
    return deps_.callbacks->handle(std::move(req), std::move(done));

  if (path == events_path) {
    auto tenant = auth_.tenant(req[bhttp::field::authorization]);
    if (!tenant) return done(tenant_unauthorized(v));
    if (method != bhttp::verb::get) return done(method_not_allowed("GET", v));
    try {
      return done(list_events(req, *tenant, query));
    } catch (const std::exception& e) {
      log::error("http.request_failed", e.what(), {{"route", route_of(path)}, {"method", "GET"}});
      return done(make_problem(Problem::storage_unavailable, "storage error; retry", {}, v));
    }
  }

  const bool collection = path == payments_path;
  const bool item = is_payment_path(path);
  if (!collection && !item) return done(make_problem(Problem::not_found, "no such resource", {}, v));

  auto tenant = auth_.tenant(req[bhttp::field::authorization]);
  if (!tenant) return done(tenant_unauthorized(v));

  try {
    if (collection) {
      if (method == bhttp::verb::post) return post_payment(req, *tenant, std::move(done));
      if (method == bhttp::verb::get) return done(list_payments(req, *tenant, query));
      return done(method_not_allowed("GET, POST", v));
    }
    if (method != bhttp::verb::get) return done(method_not_allowed("GET", v));
    std::string_view operation_id = std::string_view(path).substr(payments_path.size() + 1);
    return get_payment(req, *tenant, operation_id, std::move(done));
  } catch (const std::exception& e) {
    log::error("http.request_failed", e.what(),
               {{"route", route_of(path)}, {"method", method_label(req.method_string())}});
    return done(make_problem(Problem::storage_unavailable, "storage error; retry with the same key", {}, v));
  }
}

void Api::post_payment(Request& req, const std::string& tenant_id, Responder done) {
  const unsigned v = req.version();
  if (draining()) return done(make_problem(Problem::shutting_down, "payorchd is draining; retry with the same key", {}, v));
  if (!json_content_type(req[bhttp::field::content_type]))
    return done(make_problem(Problem::unsupported_media_type, "Content-Type must be application/json", {}, v));

  std::optional<std::string_view> key_header;
  if (auto it = req.find("Idempotency-Key"); it != req.end()) key_header = it->value();
  auto parsed = parse_intent(req.body(), key_header);
  if (auto* rej = std::get_if<IntentRejection>(&parsed)) {
    boost::json::object extra;
    if (!rej->errors.empty()) add_field_errors(extra, rej->errors);
    // Core names its refusals by catalogue code; intent_test checks each is in the catalogue
    // with the status core gives it.
    const Problem problem = problem_of_code(rej->problem).value_or(Problem::internal_error);
    return done(make_problem(problem, rej->detail, std::move(extra), v));
  }
  Intent intent = std::get<Intent>(std::move(parsed));
  intent.operation_type = "payment";

  std::string provider = intent.provider.value_or(deps_.config.default_provider);

  auto request = std::make_shared<store::IntakeRequest>();
  request->tenant_id = tenant_id;
  request->request_digest = request_digest(intent);
  request->intent = std::move(intent);
  request->provider = std::move(provider);
  auto outcome = std::make_shared<store::IntakeOutcome>();
  auto refused = std::make_shared<std::optional<IntakeRefused::Why>>();
  const int wait_s = wait_preference(req);

  deps_.writer.submit(
      [request, outcome, refused, this](store::Db& db) {
        refused->reset();
        *outcome = store::record_intake(db, *request, deps_.clock.now_ms(), deps_.rng);
        if (outcome->kind == store::IntakeOutcome::Kind::created) {
          if (!deps_.config.find_provider(request->provider)) *refused = IntakeRefused::Why::unknown_provider;
          else if (deps_.intake_paused && deps_.intake_paused(request->provider)) *refused = IntakeRefused::Why::paused;
          if (*refused) throw IntakeRefused();
        }
        // Crash/error point: rows written, transaction not yet committed.
        if (failpoint::hit("intake.before_commit")) throw InjectedRollback();
      },
      [this, request, outcome, refused, wait_s, v, done = std::move(done)](store::WriteStatus status,
                                                                           const std::string& error) {
        if (status == store::WriteStatus::rejected && *refused == IntakeRefused::Why::unknown_provider) {
          std::vector<FieldError> errs{{"provider", "unknown_provider", "no provider named '" + request->provider + "'"}};
          return done(invalid_request("the request names an unknown provider", errs, v));
        }
        if (status == store::WriteStatus::rejected && *refused == IntakeRefused::Why::paused)
          return done(make_problem(Problem::intake_paused,
                                   "provider " + request->provider +
                                       " is at its risk cap for unknown outcomes; nothing was recorded, retry later with the same key",
                                   {}, v));
        if (status != store::WriteStatus::committed) {
          if (not_committed_problem(status) == Problem::storage_unavailable)
            log::error("intake.not_recorded", error,
                       {{"tenant_id", request->tenant_id},
                        {"operation_id", request->intent.operation_id},
                        {"status", store::to_string(status)}});
          return done(not_committed(status,
                                    {.busy = "database busy; retry with the same key",
                                     .stopped = "payorchd is draining; retry with the same key",
                                     .unavailable = "the payment was not recorded; retry with the same key"},
                                    v));
        }
        // Crash point: committed, not yet answered. The retry is a replay.
        failpoint::hit("intake.after_commit");
        using Kind = store::IntakeOutcome::Kind;
        switch (outcome->kind) {
          case Kind::created:
            answer_payment(201, outcome->payment, false, wait_s, v, std::move(done));
            // After the answer is on its way: waking the engine is not the client's wait.
            if (deps_.on_created) deps_.on_created();
            return;
          case Kind::replayed:
            return answer_payment(200, outcome->payment, true, wait_s, v, std::move(done));
          case Kind::conflict: {
            boost::json::object extra{{"operation_id", outcome->payment.operation_id},
                                      {"payment_id", outcome->payment.id},
                                      {"stored_digest", outcome->payment.request_digest},
                                      {"request_digest", outcome->attempted_digest}};
            return done(make_problem(Problem::idempotency_key_reused,
                                     "operation_id was already used for a different request; the stored "
                                     "payment is unchanged",
                                     std::move(extra), v));
          }
        }
      });
}

void Api::answer_payment(unsigned status, const Payment& payment, bool replayed, int wait_s,
                         unsigned version, Responder done) {
  answer_when_settled(payment, wait_s,
                      [status, replayed, version](const Payment& p) {
                        Response r = with_payment(status, p, version);
                        if (replayed) r.set("Idempotent-Replayed", "true");
                        return r;
                      },
                      std::move(done));
}

void Api::answer_when_settled(const Payment& payment, int wait_s,
                              std::function<Response(const Payment&)> build, Responder done) {
  auto answer = [wait_s, build = std::move(build), done = std::move(done)](const Payment& p) {
    Response r = build(p);
    if (wait_s > 0) r.set("Preference-Applied", "wait=" + std::to_string(wait_s));
    done(std::move(r));
  };
  if (wait_s <= 0 || is_terminal(payment.state)) return answer(payment);
  std::make_shared<PaymentWait>(deps_, payment, std::chrono::seconds(wait_s), std::move(answer))->start();
}

void Api::with_current_storage_health(std::function<void(bool stalled)> then) {
  const store::StorageHealth h = deps_.writer.health();
  const UnixMillis now = deps_.clock.now_ms();
  auto within = [now](std::optional<UnixMillis> t, std::chrono::seconds d) {
    return t && now - *t < std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  };
  if (h.writable ? within(h.last_commit_at, storage_fresh_for)
                 : within(h.failed_at, failing_storage_probed_every))
    return then(false);
  auto probe = std::make_shared<StorageProbe>(deps_.executor, std::move(then));
  probe->timer.expires_after(storage_probe_timeout);
  probe->timer.async_wait([probe](boost::system::error_code ec) {
    if (!ec) probe->answer(true);
  });
  // Answered on the executor, not on the writer thread: the answer may read the database.
  deps_.writer.submit([](store::Db& db) { store::touch_commit_sequence(db); },
                      [probe, executor = deps_.executor](store::WriteStatus, const std::string&) {
                        boost::asio::post(executor, [probe] { probe->answer(false); });
                      });
}

Response Api::readiness(unsigned v, bool stalled) {
  if (draining()) return make_problem(Problem::shutting_down, "payorchd is draining", {}, v);
  const store::StorageHealth h = deps_.writer.health();
  boost::json::value error = storage_error(h, stalled, deps_.clock.now_ms());
  if (!error.is_null()) {
    const auto& e = error.as_object();
    return make_problem(
        Problem::storage_unavailable,
        "the database cannot be written (" + std::string(e.at("kind").as_string()) + "): " +
            std::string(e.at("message").as_string()) + "; intake is refused until a write commits again",
        boost::json::object{{"last_error", error}}, v);
  }
  // The read side as well, at request time: the connections GET requests use.
  try {
    deps_.reads.with([](store::Db& db) { return store::read_commit_sequence(db); });
  } catch (const std::exception& e) {
    return make_problem(Problem::storage_unavailable, std::string("the database cannot be read: ") + e.what(), {}, v);
  }
  return make_json(200, boost::json::object{{"ready", true}}, v);
}

Response Api::status(unsigned v, bool stalled) {
  auto [counts, exposure, backlog] = read_operations_snapshot();
  const UnixMillis now = deps_.clock.now_ms();
  const store::StorageHealth health = deps_.writer.health();
  boost::json::value storage_failure = storage_error(health, stalled, now);
  auto age_s = [now](std::optional<UnixMillis> t) -> boost::json::value {
    if (!t) return nullptr;
    return std::max<std::int64_t>(0, (now - *t) / 1000);
  };
  boost::json::object payments;
  for (const auto& [state, n] : counts.payments_by_state) payments[state] = n;
  boost::json::array exp;
  for (const auto& e : exposure)
    exp.push_back(boost::json::object{{"provider", e.provider}, {"currency", e.currency},
                                      {"count", e.count}, {"amount_minor", e.amount_minor}});
  boost::json::array providers;
  if (deps_.provider_health) {
    for (const auto& p : deps_.provider_health()) {
      boost::json::object o{{"name", p.name}, {"intake_paused", p.intake_paused}, {"breaker", p.breaker}};
      if (p.last_error.empty()) o["last_error"] = nullptr;
      else o["last_error"] = p.last_error;
      providers.push_back(std::move(o));
    }
  }
  boost::json::object body{
      {"version", PAYORCH_VERSION},
      {"uptime_s", std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started_).count()},
      {"ready", ready_.load() && !draining() && storage_failure.is_null()},
      {"payments", std::move(payments)},
      {"unknown_exposure", std::move(exp)},
      {"reconciliation", boost::json::object{{"open", counts.open_cases}, {"oldest_open_age_s", age_s(counts.oldest_open_case_at)}}},
      {"outbox", boost::json::object{{"pending", backlog.pending}, {"oldest_pending_age_s", age_s(backlog.oldest_pending_at)}}},
      {"providers", std::move(providers)},
      {"storage", boost::json::object{
                      {"writable", storage_failure.is_null()},
                      {"commit_seq", health.commit_seq},
                      {"last_commit_at", health.last_commit_at ? boost::json::value(format_rfc3339(*health.last_commit_at))
                                                               : boost::json::value(nullptr)},
                      {"last_error", storage_failure},
                  }},
  };
  return make_json(200, body, v);
}

void Api::get_payment(const Request& req, const std::string& tenant_id, std::string_view operation_id,
                      Responder&& done) {
  const unsigned v = req.version();
  std::string op(operation_id);
  if (!valid_operation_id(op)) return done(make_problem(Problem::not_found, "no such payment", {}, v));
  auto p = deps_.reads.with([&](store::Db& db) {
    return store::find_payment_by_operation(db, tenant_id, "payment", op);
  });
  // Another tenant's payment and a missing one look the same.
  if (!p) return done(make_problem(Problem::not_found, "no such payment", {}, v));
  answer_when_settled(*p, wait_preference(req),
                      [v](const Payment& settled) { return make_json(200, payment_view(settled), v); },
                      std::move(done));
}

Response Api::list_payments(const Request& req, const std::string& tenant_id, boost::urls::params_view query) {
  const unsigned v = req.version();
  PaymentsQuery q = parse_payments_query(query);
  if (!q.errors.empty())
    return invalid_request("invalid query parameters", q.errors, v);
  auto page = deps_.reads.with([&](store::Db& db) {
    return store::list_payments(db, tenant_id, q.state, q.page.limit, q.page.cursor);
  });
  boost::json::array data;
  for (const auto& p : page.payments) data.push_back(payment_view(p));
  boost::json::object body{{"data", std::move(data)}};
  if (page.next_cursor) body["next_cursor"] = *page.next_cursor;
  else body["next_cursor"] = nullptr;
  return make_json(200, body, v);
}

std::tuple<store::StatusCounts, std::vector<store::ExposureRow>, store::OutboxBacklog>
Api::read_operations_snapshot() {
  return deps_.reads.with([&](store::Db& db) {
    return std::make_tuple(store::status_counts(db), store::exposure(db),
                           store::outbox_backlog(db, push_tenants_));
  });
}

Response Api::list_events(const Request& req, const std::string& tenant_id, boost::urls::params_view query) {
  const unsigned v = req.version();
  EventsQuery q = parse_events_query(query);
  if (!q.errors.empty())
    return invalid_request("invalid query parameters", q.errors, v);
  auto page = deps_.reads.with([&](store::Db& db) { return store::list_events(db, tenant_id, q.after, q.limit); });
  const bool pushed = std::find(push_tenants_.begin(), push_tenants_.end(), tenant_id) != push_tenants_.end();
  auto time_or_null = [](const std::optional<UnixMillis>& t) -> boost::json::value {
    if (!t) return nullptr;
    return boost::json::string(format_rfc3339(*t));
  };
  boost::json::array data;
  for (const auto& e : page.events) {
    // The event body exactly as pushed, plus where its push delivery stands.
    boost::json::object item = boost::json::parse(e.payload).as_object();
    std::string status = e.delivered_at ? "delivered" : pushed ? "pending" : "not_pushed";
    item["delivery"] = boost::json::object{
        {"status", status},
        {"attempts", e.attempts},
        {"delivered_at", time_or_null(e.delivered_at)},
        {"next_attempt_at", e.delivered_at || !pushed ? boost::json::value(nullptr) : time_or_null(e.next_attempt_at)},
        {"last_error", json_or_null(e.last_error)},
    };
    data.push_back(std::move(item));
  }
  boost::json::object body{{"data", std::move(data)}};
  if (page.next_cursor) body["next_cursor"] = std::to_string(*page.next_cursor);
  else body["next_cursor"] = nullptr;
  return make_json(200, body, v);
}

Response Api::metrics(unsigned v) {
  auto [counts, exposure, backlog] = read_operations_snapshot();
  const UnixMillis now = deps_.clock.now_ms();
  std::string text = deps_.metrics->render();
  std::vector<std::pair<Labels, double>> states;
  for (const auto& [state, n] : counts.payments_by_state) states.push_back({{{"state", state}}, static_cast<double>(n)});
  text += render_gauge("payorch_payments", "Payments by state", states);
  std::vector<std::pair<Labels, double>> unknown_count, unknown_amount;
  for (const auto& e : exposure) {
    unknown_count.push_back({{{"provider", e.provider}, {"currency", e.currency}}, static_cast<double>(e.count)});
    unknown_amount.push_back({{{"provider", e.provider}, {"currency", e.currency}}, static_cast<double>(e.amount_minor)});
  }
  text += render_gauge("payorch_unknown_exposure_payments",
                       "UNKNOWN payments plus submits in flight, by provider and currency", unknown_count);
  text += render_gauge("payorch_unknown_exposure_amount_minor",
                       "Amount of UNKNOWN payments plus submits in flight, in minor units", unknown_amount);
  std::vector<std::pair<Labels, double>> paused;
  if (deps_.provider_health)
    for (const auto& p : deps_.provider_health()) paused.push_back({{{"provider", p.name}}, p.intake_paused ? 1.0 : 0.0});
  text += render_gauge("payorch_intake_paused", "1 while a provider is at a risk cap (new intents get 503)", paused);
  std::vector<std::pair<Labels, double>> breakers;
  if (deps_.provider_health)
    for (const auto& p : deps_.provider_health()) breakers.push_back({{{"provider", p.name}}, p.breaker == "open" ? 1.0 : 0.0});
  text += render_gauge("payorch_vendor_breaker_open",
                       "1 while a provider's circuit breaker is open (its payments wait; one probe call at a time)",
                       breakers);
  auto age = [now](std::optional<UnixMillis> t) { return t ? static_cast<double>(std::max<UnixMillis>(0, now - *t)) / 1000.0 : 0.0; };
  std::vector<std::pair<Labels, double>> open_cases;
  for (const auto& [reason, n] : counts.open_cases_by_reason)
    open_cases.push_back({{{"reason", reason}}, static_cast<double>(n)});
  text += render_gauge("payorch_reconciliation_open_cases",
                       "Open reconciliation cases (payments in front of a human), by reason", open_cases);
  text += render_gauge("payorch_reconciliation_oldest_open_age_seconds", "Age of the oldest open case",
                       {{{}, age(counts.oldest_open_case_at)}});
  text += render_gauge("payorch_outbox_pending_events", "Events not yet delivered to a tenant webhook",
                       {{{}, static_cast<double>(backlog.pending)}});
  text += render_gauge("payorch_outbox_oldest_pending_age_seconds",
                       "Webhook delivery lag: age of the oldest event not yet delivered to a tenant webhook",
                       {{{}, age(backlog.oldest_pending_at)}});
  std::vector<std::pair<Labels, double>> storage_errors;
  for (const auto& [kind, n] : deps_.writer.storage_errors())
    storage_errors.push_back({{{"kind", kind}}, static_cast<double>(n)});
  text += render_counter("payorch_storage_errors_total",
                         "Writer transactions that failed, nothing of them committed, by kind of storage "
                         "error (full, io, readonly, busy, corrupt, cantopen, nomem, other)",
                         storage_errors);
  Response r{bhttp::status::ok, v};
  r.set(bhttp::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
  r.set(bhttp::field::cache_control, "no-store");
  r.body() = std::move(text);
  r.prepare_payload();
  return r;
}

}  // namespace payorch::http
