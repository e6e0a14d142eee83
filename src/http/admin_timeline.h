#pragma once
// The timeline of GET /v1/admin/timeline (docs/api.md, "Timeline"): what the store holds about
// one payment or refund row — its view, its history (store/history.h), its cases — as one JSON
// "match". Reading and mapping only; AdminApi parses the query and finds the rows.
#include <boost/json/object.hpp>
#include <vector>

#include "core/payment.h"
#include "store/store.h"

namespace payorch::http {

struct TimelineRow {
  Payment row;                                 // a payment's or a refund's row
  std::vector<Payment> refunds;                // a payment's refunds (empty for a refund)
  std::vector<store::HistoryEntry> history;    // recording order
  std::vector<store::HistoryEvent> events;     // read only when the row has no history
  std::vector<store::ReconciliationCase> cases;  // oldest first
};

// Everything the timeline shows of `row`, read in `tx`.
TimelineRow read_timeline_row(store::Tx& tx, Payment row);

// {"kind","tenant_id","payment","refund","timeline","cases"}: "timeline" holds the history's
// transitions and the cases' openings and resolutions, sorted by time, at equal times in the
// order they were recorded (a transition before the case it opened or that was resolved with
// it); a row with no history (created before the history table) shows its outbox events still
// kept instead of transitions.
boost::json::object timeline_match(const TimelineRow& r);

}  // namespace payorch::http
