// POST /v1/payments/{payment_operation_id}/refunds, GET /v1/payments/{operation_id}/refunds and
// GET /v1/refunds/{operation_id} (docs/refunds.md). The decisions — idempotency, the money rule,
// DEFERRED — are store::record_refund_intake's; this maps them onto answers.
#include <boost/json/array.hpp>
#include <memory>
#include <optional>
#include <variant>

#include "core/intent.h"
#include "core/refund.h"
#include "core/view.h"
#include "http/api.h"
#include "http/instrumented.h"
#include "http/not_committed.h"
#include "http/request_fields.h"
#include "store/refunds.h"
#include "util/failpoint.h"
#include "util/log.h"

namespace payorch::http {
namespace {

namespace bhttp = boost::beast::http;

Response with_refund(unsigned status, const Payment& row, unsigned version) {
  Response r = make_json(status, refund_view(as_refund(row)), version);
  r.set(bhttp::field::location, std::string(refunds_path) + "/" + row.operation_id);
  r.set("Idempotency-Key", row.operation_id);
  return r;
}

// A refund of a provider at its risk cap is refused as a payment would be (docs/refunds.md):
// money may leave, and its outcome could join the unknown ones. Nothing is written.
struct RefundPaused {};
using RefundResult = std::variant<store::RefundIntakeOutcome, RefundPaused>;

}  // namespace

void Api::post_refund(Request& req, const std::string& tenant_id, std::string payment_operation_id,
                      Responder done) {
  const unsigned v = req.version();
  if (auto refused = refuse_intake(req)) return done(std::move(*refused));
  auto parsed = parse_refund_intent(req.body(), idempotency_key_header(req));
  if (auto* rej = std::get_if<IntentRejection>(&parsed)) return done(intent_rejected(*rej, v));
  if (!valid_operation_id(payment_operation_id))
    return done(make_problem(Problem::not_found, "no such payment", {}, v));

  auto request = std::make_shared<store::RefundIntakeRequest>();
  request->tenant_id = tenant_id;
  request->payment_operation_id = std::move(payment_operation_id);
  request->intent = std::get<RefundIntent>(std::move(parsed));
  log::note_operation(request->intent.operation_id);
  request->origin = origin_of(req);
  auto result = std::make_shared<RefundResult>();
  const int wait_s = wait_preference(req);

  using Verdict = store::Store::Verdict;
  deps_.store.submit_judged(
      [request, result, this](store::Tx& tx) {
        store::RefundIntakeOutcome outcome = tx.record_refund_intake(*request, deps_.clock.now_ms(), deps_.rng);
        if (outcome.kind == store::RefundIntakeOutcome::Kind::created && deps_.intake_paused &&
            deps_.intake_paused(outcome.refund.provider)) {
          *result = RefundPaused{};
          return Verdict::take_back;
        }
        *result = std::move(outcome);
        // Crash/error point: the refund written, the transaction not yet committed.
        if (failpoint::hit("refund.before_commit")) throw std::runtime_error("injected rollback before commit");
        return Verdict::keep;
      },
      [this, request, result, wait_s, v, done = std::move(done)](store::WriteStatus status,
                                                                 const std::string& error) {
        if (status == store::WriteStatus::declined && std::holds_alternative<RefundPaused>(*result))
          return done(make_problem(Problem::intake_paused,
                                   "the payment's provider is at its risk cap for unknown outcomes; nothing "
                                   "was recorded, retry later with the same key",
                                   {}, v));
        if (status != store::WriteStatus::committed)
          return done(intake_not_committed(status, error, "refund.not_recorded", request->tenant_id,
                                           request->intent.operation_id, "refund", v));
        const auto& outcome = std::get<store::RefundIntakeOutcome>(*result);
        // Crash point: committed, not yet answered. The retry is a replay.
        failpoint::hit("refund.after_commit");
        using Kind = store::RefundIntakeOutcome::Kind;
        switch (outcome.kind) {
          case Kind::created:
            answer_refund(201, outcome.refund, false, wait_s, v, std::move(done));
            if (deps_.on_created) deps_.on_created();
            return;
          case Kind::replayed:
            return answer_refund(200, outcome.refund, true, wait_s, v, std::move(done));
          case Kind::conflict:
            return done(make_problem(Problem::idempotency_key_reused,
                                     "operation_id was already used for a different refund; the stored "
                                     "refund is unchanged",
                                     {{"operation_id", outcome.refund.operation_id},
                                      {"refund_id", outcome.refund.id},
                                      {"stored_digest", outcome.refund.request_digest},
                                      {"request_digest", outcome.attempted_digest}},
                                     v));
          case Kind::no_payment:
            return done(make_problem(Problem::not_found, "no such payment", {}, v));
          case Kind::not_refundable:
            return done(make_problem(Problem::payment_not_refundable,
                                     "the payment is FAILED_FINAL: nothing was charged, nothing can be refunded",
                                     {{"payment_operation_id", request->payment_operation_id}}, v));
          case Kind::exceeds_payment:
            return done(make_problem(
                Problem::refund_exceeds_payment,
                "the payment's refunds that are not FAILED_FINAL, with this one, would exceed its amount",
                {{"payment_operation_id", request->payment_operation_id},
                 {"amount_minor", request->intent.amount_minor},
                 {"remaining_minor", outcome.remaining_minor}},
                v));
        }
      });
}

void Api::answer_refund(unsigned status, const Payment& row, bool replayed, int wait_s, unsigned version,
                        Responder done) {
  answer_when_settled(row, wait_s,
                      [status, replayed, version](const Payment& r) {
                        Response out = with_refund(status, r, version);
                        if (replayed) out.set("Idempotent-Replayed", "true");
                        return out;
                      },
                      std::move(done));
}

void Api::get_refund(const Request& req, const std::string& tenant_id, std::string_view operation_id,
                     Responder&& done) {
  const unsigned v = req.version();
  const std::string op(operation_id);
  if (!valid_operation_id(op)) return done(make_problem(Problem::not_found, "no such refund", {}, v));
  log::note_operation(op);
  auto row = deps_.store.read_value([&](store::Tx& tx) { return tx.find_refund(tenant_id, op); });
  // Another tenant's refund and a missing one look the same.
  if (!row) return done(make_problem(Problem::not_found, "no such refund", {}, v));
  answer_when_settled(*row, wait_preference(req),
                      [v](const Payment& settled) { return make_json(200, refund_view(as_refund(settled)), v); },
                      std::move(done));
}

Response Api::list_refunds(const Request& req, const std::string& tenant_id,
                           std::string_view payment_operation_id) {
  const unsigned v = req.version();
  const std::string op(payment_operation_id);
  if (!valid_operation_id(op)) return make_problem(Problem::not_found, "no such payment", {}, v);
  std::optional<std::vector<Payment>> rows = deps_.store.read_value([&](store::Tx& tx) {
    std::optional<std::vector<Payment>> out;
    if (auto p = tx.find_payment_by_operation(tenant_id, "payment", op)) out = tx.list_refunds(p->id);
    return out;
  });
  if (!rows) return make_problem(Problem::not_found, "no such payment", {}, v);
  boost::json::array data;
  for (const Payment& row : *rows) data.push_back(refund_view(as_refund(row)));
  return make_json(200, boost::json::object{{"data", std::move(data)}}, v);
}

}  // namespace payorch::http
