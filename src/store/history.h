#pragma once
// The payment history (docs/contract.md, "History"; table payment_history): one row per change
// of a payment or refund row, written in the transaction that made the change, never purged.
// The outbox announces the same changes, but its delivered events are purged and carry neither
// the fence nor the cause; the history keeps both, so an operator can read a disputed payment's
// whole life long after its events are gone.
//
// The writers, each in its own transaction with its outbox event:
//   intake (payment or refund)          created_entry       cause "intake"
//   apply_transition (both drivers)     transition_entry    cause: the trigger, or the case a
//                                                           hand-built escalation opens
//   a DEFERRED refund released          released_entry      cause "payment_succeeded" / "payment_failed"
//   a case opened on a row whose state   escalation_entry    cause: the case's reason
//   stays (payment_corrected on a refund, over_refunded on a payment)
// This file is the one home of what such a row says; each driver only inserts and reads it.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/payment.h"
#include "core/refund_state.h"
#include "core/state_machine.h"
#include "store/sqlite.h"

namespace payorch::store {

struct HistoryEntry {
  std::int64_t seq = 0;  // recording order (set when read back)
  std::string payment_id;  // the row that changed: a payment's or a refund's id
  UnixMillis at = 0;
  std::optional<std::string> from_state;  // as the views spell it; nullopt for the creation
  std::string to_state;                   // "PROCESSING", …, a refund's "DEFERRED"
  std::string next_action;                // after the change
  std::int64_t fence = 0;                 // the row's fence after the change
  std::string cause;                      // never empty
  std::optional<std::string> event_type;  // the outbox event the change wrote ("payment.succeeded")
  std::optional<std::string> event_id;
  std::optional<std::string> case_reason;  // the case the change opened
  std::optional<std::string> request_id;   // the request whose change it is; nullopt for the engine's
};

// An outbox event of a row, as the history shows the rows that have no history (created before
// the table existed).
struct HistoryEvent {
  UnixMillis at = 0;
  std::string event_type;
  std::string event_id;
  std::optional<std::string> request_id;
};

inline constexpr std::string_view intake_cause = "intake";

// The state of `row` as its view spells it: a refund waiting for its payment is "DEFERRED".
std::string_view history_state(const Payment& row);

// The cause of an applied step: its trigger's name, else (a step built by hand, such as
// mismatch_escalation) the reason of the case it opens. std::logic_error for a step with
// neither: a change without a cause must never be recorded.
std::string history_cause(const Transition& t);

// The creation of `row` by its intake, with its created event.
HistoryEntry created_entry(const Payment& row, const std::string& event_id, UnixMillis now);

// `t` applied to the row `payment_id`, which now has fence `fence_after`. `type` and
// `event_id`: the first outbox event the step wrote (nullopt for none); `case_opened`: whether
// the case the step asks for was opened by it (at most one is open per row).
HistoryEntry transition_entry(const std::string& payment_id, const Transition& t,
                              std::int64_t fence_after, std::optional<std::string_view> type,
                              std::optional<std::string> event_id, bool case_opened,
                              const std::optional<std::string>& request_id, UnixMillis now);

// A DEFERRED refund moved by its payment's transition to `payment_now` (deferred_refund_step):
// `refund` as it is after the step, `event_id` the event written for it.
HistoryEntry released_entry(const Payment& refund, PaymentState payment_now,
                            const DeferredRefundStep& step, const std::string& event_id,
                            UnixMillis now);

// A row put in front of a human by a change to another row, its own state unchanged: a case
// with `reason` and its payment.escalated / refund.escalated (`event_id`). A refund whose payment
// was corrected from SUCCEEDED to FAILED_FINAL (payment_corrected); a payment that a refund
// recorded as not FAILED_FINAL took over its amount (over_refunded).
HistoryEntry escalation_entry(const Payment& row, CaseReason reason, const std::string& event_id,
                              UnixMillis now);

// ---- SQLite ----
// In the caller's transaction; throw SqliteError.

// One prepared INSERT (the connection's statement cache keeps it).
void insert_history(Db& db, const HistoryEntry& e);
// The row's history, in recording order.
std::vector<HistoryEntry> payment_history(Db& db, const std::string& payment_id);
// The row's outbox events still kept, oldest first.
std::vector<HistoryEvent> outbox_history(Db& db, const std::string& payment_id);

// The columns of payment_history in HistoryEntry's order, for both drivers' readers.
inline constexpr std::string_view history_columns =
    "seq, payment_id, at, from_state, to_state, next_action, fence, cause, event_type, event_id,"
    " case_reason, request_id";

}  // namespace payorch::store
