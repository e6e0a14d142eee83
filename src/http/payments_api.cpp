// POST /v1/payments, GET /v1/payments and GET /v1/payments/{operation_id} (docs/contract.md §2).
#include "http/api.h"

#include <boost/json/array.hpp>
#include <memory>
#include <optional>
#include <variant>

#include "core/digest.h"
#include "core/intent.h"
#include "core/view.h"
#include "http/instrumented.h"
#include "http/not_committed.h"
#include "http/request_fields.h"
#include "store/intake.h"
#include "store/payments.h"
#include "util/failpoint.h"
#include "util/log.h"

namespace payorch::http {
namespace {

namespace bhttp = boost::beast::http;

// Thrown inside the intake transaction by the `intake.before_commit` failpoint: the writer
// rolls the job back, exactly as it would for a real failure at that point.
struct InjectedRollback : std::runtime_error {
  InjectedRollback() : std::runtime_error("injected rollback before commit") {}
};

// Why the intake transaction refused a new payment for a reason of the present configuration:
// its provider is at a risk cap, or is not configured (any more). Both are judged only once the
// store has said the intent is new, so a replay of a stored payment always answers 200 with it,
// whatever the config says today. Nothing of a refused intake is written.
enum class IntakeRefusal { paused, unknown_provider };
using IntakeResult = std::variant<store::IntakeOutcome, IntakeRefusal>;

Response with_payment(unsigned status, const Payment& p, unsigned version) {
  Response r = make_json(status, payment_view(p), version);
  r.set(bhttp::field::location, std::string(payments_path) + "/" + p.operation_id);
  r.set("Idempotency-Key", p.operation_id);
  return r;
}

}  // namespace

int wait_preference(const Request& req) {
  std::vector<std::string_view> lines;
  for (auto [it, end] = req.equal_range(bhttp::field::prefer); it != end; ++it) lines.push_back(it->value());
  return preferred_wait(lines);
}

std::optional<std::string_view> idempotency_key_header(const Request& req) {
  if (auto it = req.find("Idempotency-Key"); it != req.end()) return it->value();
  return std::nullopt;
}

Response intent_rejected(const IntentRejection& rejection, unsigned version) {
  boost::json::object extra;
  if (!rejection.errors.empty()) add_field_errors(extra, rejection.errors);
  // Core names its refusals by catalogue code; problem_test checks each kind is in the
  // catalogue, with the status it is answered with.
  const Problem problem = problem_of_code(problem_code(rejection.kind)).value_or(Problem::internal_error);
  return make_problem(problem, rejection.detail, std::move(extra), version);
}

std::optional<Response> Api::refuse_intake(const Request& req) const {
  const unsigned v = req.version();
  if (draining()) return make_problem(Problem::shutting_down, "payorchd is draining; retry with the same key", {}, v);
  if (!json_content_type(req[bhttp::field::content_type]))
    return make_problem(Problem::unsupported_media_type, "Content-Type must be application/json", {}, v);
  return std::nullopt;
}

void Api::post_payment(Request& req, const std::string& tenant_id, Responder done) {
  const unsigned v = req.version();
  if (auto refused = refuse_intake(req)) return done(std::move(*refused));
  auto parsed = parse_intent(req.body(), idempotency_key_header(req));
  if (auto* rej = std::get_if<IntentRejection>(&parsed)) return done(intent_rejected(*rej, v));
  Intent intent = std::get<Intent>(std::move(parsed));
  intent.operation_type = "payment";
  log::note_operation(intent.operation_id);

  std::string provider = intent.provider.value_or(deps_.config.default_provider);

  auto request = std::make_shared<store::IntakeRequest>();
  request->tenant_id = tenant_id;
  request->request_digest = request_digest(intent);
  request->intent = std::move(intent);
  request->provider = std::move(provider);
  request->origin = origin_of(req);
  auto result = std::make_shared<IntakeResult>();
  const int wait_s = wait_preference(req);

  using Verdict = store::Store::Verdict;
  deps_.store.submit_judged(
      [request, result, this](store::Tx& tx) {
        store::IntakeOutcome outcome = tx.record_intake(*request, deps_.clock.now_ms(), deps_.rng);
        if (outcome.kind == store::IntakeOutcome::Kind::created) {
          // A refusal takes the new payment's rows back: the writer rolls the job back.
          if (!deps_.config.find_provider(request->provider)) {
            *result = IntakeRefusal::unknown_provider;
            return Verdict::take_back;
          }
          if (deps_.intake_paused && deps_.intake_paused(request->provider)) {
            *result = IntakeRefusal::paused;
            return Verdict::take_back;
          }
        }
        *result = std::move(outcome);
        // Crash/error point: rows written, transaction not yet committed.
        if (failpoint::hit("intake.before_commit")) throw InjectedRollback();
        return Verdict::keep;
      },
      [this, request, result, wait_s, v, done = std::move(done)](store::WriteStatus status,
                                                                 const std::string& error) {
        const auto* refusal = std::get_if<IntakeRefusal>(result.get());
        if (status == store::WriteStatus::declined && refusal) {
          if (*refusal == IntakeRefusal::unknown_provider) {
            std::vector<FieldError> errs{{"provider", "unknown_provider", "no provider named '" + request->provider + "'"}};
            return done(invalid_request("the request names an unknown provider", errs, v));
          }
          return done(make_problem(Problem::intake_paused,
                                   "provider " + request->provider +
                                       " is at its risk cap for unknown outcomes; nothing was recorded, retry later with the same key",
                                   {}, v));
        }
        if (status != store::WriteStatus::committed)
          return done(intake_not_committed(status, error, "intake.not_recorded", request->tenant_id,
                                           request->intent.operation_id, "payment", v));
        const auto* outcome = &std::get<store::IntakeOutcome>(*result);
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

void Api::get_payment(const Request& req, const std::string& tenant_id, std::string_view operation_id,
                      Responder&& done) {
  const unsigned v = req.version();
  std::string op(operation_id);
  if (!valid_operation_id(op)) return done(make_problem(Problem::not_found, "no such payment", {}, v));
  log::note_operation(op);
  auto p = deps_.store.read_value([&](store::Tx& tx) {
    return tx.find_payment_by_operation(tenant_id, "payment", op);
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
  auto page = deps_.store.read_value([&](store::Tx& tx) {
    return tx.list_payments(tenant_id, q.state, q.page.limit, q.page.cursor);
  });
  boost::json::array data;
  for (const auto& p : page.payments) data.push_back(payment_view(p));
  boost::json::object body{{"data", std::move(data)}};
  if (page.next_cursor) body["next_cursor"] = *page.next_cursor;
  else body["next_cursor"] = nullptr;
  return make_json(200, body, v);
}
}  // namespace payorch::http
