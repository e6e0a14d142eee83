#include "http/admin_timeline.h"

#include <algorithm>
#include <boost/json/array.hpp>

#include "core/refund.h"
#include "core/view.h"
#include "http/admin_api.h"

namespace payorch::http {
namespace {

struct Entry {
  UnixMillis at = 0;
  boost::json::object json;
};

boost::json::object transition_json(const store::HistoryEntry& h) {
  return boost::json::object{{"at", format_rfc3339(h.at)},
                             {"kind", "transition"},
                             {"from", json_or_null(h.from_state)},
                             {"to", h.to_state},
                             {"next_action", h.next_action},
                             {"fence", h.fence},
                             {"cause", h.cause},
                             {"event_type", json_or_null(h.event_type)},
                             {"event_id", json_or_null(h.event_id)},
                             {"case_reason", json_or_null(h.case_reason)},
                             {"request_id", json_or_null(h.request_id)}};
}

boost::json::object event_json(const store::HistoryEvent& e) {
  return boost::json::object{{"at", format_rfc3339(e.at)},
                             {"kind", "event"},
                             {"event_type", e.event_type},
                             {"event_id", e.event_id},
                             {"request_id", json_or_null(e.request_id)}};
}

}  // namespace

TimelineRow read_timeline_row(store::Tx& tx, Payment row) {
  TimelineRow r;
  if (!row.refund_of) r.refunds = tx.list_refunds(row.id);
  r.history = tx.payment_history(row.id);
  if (r.history.empty()) r.events = tx.outbox_history(row.id);
  r.cases = tx.cases_of_row(row.id);
  r.row = std::move(row);
  return r;
}

boost::json::object timeline_match(const TimelineRow& r) {
  std::vector<Entry> entries;
  for (const auto& h : r.history) entries.push_back({h.at, transition_json(h)});
  for (const auto& e : r.events) entries.push_back({e.at, event_json(e)});
  for (const auto& c : r.cases) {
    entries.push_back({c.opened_at, boost::json::object{{"at", format_rfc3339(c.opened_at)},
                                                        {"kind", "case_opened"},
                                                        {"case_id", c.id},
                                                        {"reason", c.reason}}});
    if (c.status == store::CaseStatus::resolved && c.resolved_at)
      entries.push_back({*c.resolved_at, boost::json::object{{"at", format_rfc3339(*c.resolved_at)},
                                                             {"kind", "case_resolved"},
                                                             {"case_id", c.id},
                                                             {"outcome", json_or_null(c.outcome)},
                                                             {"by", json_or_null(c.resolved_by)},
                                                             {"note", json_or_null(c.note)},
                                                             {"vendor_reference",
                                                              json_or_null(c.vendor_reference)}}});
  }
  // By time; at equal times in the order above (stable), the order of recording.
  std::stable_sort(entries.begin(), entries.end(),
                   [](const Entry& a, const Entry& b) { return a.at < b.at; });
  boost::json::array timeline;
  for (auto& e : entries) timeline.push_back(std::move(e.json));
  boost::json::array cases;
  for (const auto& c : r.cases) cases.push_back(case_view(c));

  const bool refund = r.row.refund_of.has_value();
  boost::json::object match{{"kind", refund ? "refund" : "payment"}, {"tenant_id", r.row.tenant_id}};
  if (refund) {
    match["payment"] = nullptr;
    match["refund"] = admin_refund_view(r.row);
  } else {
    boost::json::object payment = admin_payment_view(r.row);
    boost::json::array refunds;
    for (const Payment& row : r.refunds) refunds.push_back(refund_view(as_refund(row)));
    payment["refunds"] = std::move(refunds);
    match["payment"] = std::move(payment);
    match["refund"] = nullptr;
  }
  match["timeline"] = std::move(timeline);
  match["cases"] = std::move(cases);
  return match;
}

}  // namespace payorch::http
