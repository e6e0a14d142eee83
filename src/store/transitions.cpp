#include "store/transitions.h"

#include <stdexcept>
#include <vector>

#include "core/enum_names.h"
#include "core/ids.h"
#include "store/cases.h"
#include "store/payments.h"
#include "store/refunds.h"
#include "store/transition_flow.h"
#include "store/transition_log.h"

namespace payorch::store {

TransitionObserver transition_counter(Metrics& metrics) {
  constexpr const char* name = "payorch_transitions_total";
  metrics.declare_counter(name,
                          "Payment state changes, by from and to state, counted once committed (each "
                          "wrote one outbox event)");
  return [&metrics](PaymentState from, PaymentState to) {
    metrics.inc(name, {{"from", std::string(to_string(from))}, {"to", std::string(to_string(to))}});
  };
}

namespace {

constexpr EnumNames<CasResult, 5> cas_result_names{{
    {CasResult::applied, "applied"},
    {CasResult::already_in_state, "already_in_state"},
    {CasResult::stale_fence, "stale_fence"},
    {CasResult::illegal, "illegal"},
    {CasResult::not_found, "not_found"},
}};

}  // namespace

std::string_view to_string(CasResult r) { return name_of(cas_result_names, r); }

CasResult apply_transition(Db& db, const std::string& payment_id, std::optional<std::int64_t> fence,
                           const Transition& t, const TransitionUpdate& u, UnixMillis now,
                           Random& rng) {
  if (!t.noop()) {
    auto st = db.prepare(
        "UPDATE payments SET state = ?1, next_action = ?2, next_attempt_at = ?3,"
        " lease_owner = CASE WHEN ?4 THEN NULL ELSE lease_owner END,"
        " lease_expires_at = CASE WHEN ?4 THEN NULL ELSE lease_expires_at END,"
        " vendor_reference = COALESCE(?5, vendor_reference),"
        " failure_code = COALESCE(?6, failure_code), failure_message = COALESCE(?7, failure_message),"
        " updated_at = ?8, last_submit_ended_at = COALESCE(?12, last_submit_ended_at),"
        " vendor_closed_at = COALESCE(?13, vendor_closed_at),"
        // A writer without a lease (callback, operator) fences out any worker whose call is
        // still in flight: that worker's later write is stale, never an overwrite.
        " fence = CASE WHEN ?11 IS NULL THEN fence + 1 ELSE fence END"
        // A DEFERRED refund was never sent: nothing but its payment's transition moves it.
        " WHERE id = ?9 AND state = ?10 AND deferred = 0 AND (?11 IS NULL OR fence = ?11)");
    st.bind(1, to_string(t.to)).bind(2, to_string(t.next)).bind(3, u.next_attempt_at);
    st.bind(4, u.release_lease ? 1 : 0).bind(5, u.vendor_reference).bind(6, u.failure_code);
    st.bind(7, u.failure_message).bind(8, now).bind(9, payment_id).bind(10, to_string(t.from));
    st.bind(11, fence).bind(12, u.last_submit_ended_at).bind(13, u.vendor_closed_at);
    st.run();
    if (db.changes() == 1) {
      const AppliedStep step = record_applied_step(db, payment_id, fence, t, u, now, rng);
      if (t.changes_state() || t.open_case) {
        // Logged and counted once durable: a rolled-back decision never happened.
        // The connection outlives its after-commit actions: they run on it, at its COMMIT.
        db.after_commit(transition_announcement(t, step.escalated_too, payment_id,
                                                step.row ? step.row->client_key : std::string(),
                                                step.row ? step.row->fence : std::int64_t{0},
                                                &db.transition_observer()));
      }
      return CasResult::applied;
    }
  }
  // 0 rows: classify, never swallow.
  auto st = db.prepare("SELECT state, fence FROM payments WHERE id = ?");
  st.bind(1, payment_id);
  if (!st.step()) return CasResult::not_found;
  auto current = parse_payment_state(st.col_text(0));
  if (fence && st.col_int(1) != *fence) return CasResult::stale_fence;
  if (current == t.to) return CasResult::already_in_state;
  return CasResult::illegal;
}

void apply_unleased(Db& db, const Payment& p, const Transition& t, const TransitionUpdate& u,
                    UnixMillis now, Random& rng) {
  const CasResult r = apply_transition(db, p.id, std::nullopt, t, u, now, rng);
  if (r != CasResult::applied)
    throw std::runtime_error("payment " + p.id + ": " + std::string(to_string(t.from)) + " -> " +
                             std::string(to_string(t.to)) + ": " + std::string(to_string(r)));
}

}  // namespace payorch::store
