// http/admin_timeline: a row's timeline as GET /v1/admin/timeline answers it, from store data
// built here: transitions and case entries sorted by time (at equal times, in recording order),
// a row older than the history shown by its outbox events, and a refund's match.
#include <doctest/doctest.h>

#include <boost/json/serialize.hpp>
#include <string>
#include <vector>

#include "core/view.h"
#include "http/admin_timeline.h"
#include "support/store_fixture.h"

using namespace payorch;

namespace {

constexpr UnixMillis t0 = 1'700'000'000'000;

store::HistoryEntry entry(UnixMillis at, std::optional<std::string> from, std::string to, std::string cause) {
  store::HistoryEntry e;
  e.payment_id = "pay_a";
  e.at = at;
  e.from_state = std::move(from);
  e.to_state = std::move(to);
  e.next_action = "none";
  e.cause = std::move(cause);
  return e;
}

store::ReconciliationCase resolved_case(UnixMillis opened, UnixMillis resolved) {
  store::ReconciliationCase c;
  c.id = "rc_1";
  c.payment_id = "pay_a";
  c.reason = "retry_budget_exhausted";
  c.status = store::CaseStatus::resolved;
  c.opened_at = opened;
  c.resolved_at = resolved;
  c.outcome = "failed_final";
  c.note = "<script>x</script>";
  c.resolved_by = "ops";
  c.provider = "sim";
  return c;
}

// "kind:what" per entry, in order.
std::vector<std::string> kinds(const boost::json::object& match) {
  std::vector<std::string> out;
  for (const auto& e : match.at("timeline").as_array()) {
    const auto& o = e.as_object();
    const std::string kind(o.at("kind").as_string());
    if (kind == "transition") out.push_back(kind + ":" + std::string(o.at("cause").as_string()));
    else if (kind == "event") out.push_back(kind + ":" + std::string(o.at("event_type").as_string()));
    else out.push_back(kind + ":" + std::string(o.at("case_id").as_string()));
  }
  return out;
}

}  // namespace

TEST_CASE("admin timeline: transitions and case entries by time, at equal times in recording order") {
  http::TimelineRow r;
  r.row = test::sample_payment("acme", "a", t0);
  r.history = {entry(t0, std::nullopt, "PROCESSING", "intake"),
               entry(t0 + 50, "PROCESSING", "PROCESSING", "give_up"),
               entry(t0 + 90, "PROCESSING", "FAILED_FINAL", "resolve_failed_final")};
  r.cases = {resolved_case(t0 + 50, t0 + 90)};
  const boost::json::object m = http::timeline_match(r);
  INFO(boost::json::serialize(m));
  CHECK(kinds(m) == std::vector<std::string>{"transition:intake", "transition:give_up", "case_opened:rc_1",
                                             "transition:resolve_failed_final", "case_resolved:rc_1"});
  CHECK(m.at("kind").as_string() == "payment");
  CHECK(m.at("refund").is_null());
  CHECK(m.at("payment").at("refunds").as_array().empty());
  CHECK(m.at("cases").as_array().size() == 1);
  const auto& first = m.at("timeline").as_array()[0].as_object();
  CHECK(first.at("from").is_null());
  CHECK(first.at("at").as_string() == format_rfc3339(t0));
  const auto& closed = m.at("timeline").as_array()[4].as_object();
  CHECK(closed.at("note").as_string() == "<script>x</script>");  // as stored: the console renders text
  CHECK(closed.at("by").as_string() == "ops");
  CHECK(closed.at("vendor_reference").is_null());
}

TEST_CASE("admin timeline: a row without history shows its outbox events; a refund is a refund match") {
  http::TimelineRow r;
  r.row = test::sample_payment("acme", "old", t0);
  r.row.refund_of = RefundOf{"pay_paid", "op-paid", "ck_paid", std::nullopt};
  r.row.operation_type = "refund";
  r.events = {store::HistoryEvent{t0 + 20, "refund.succeeded", "evt_2", std::nullopt},
              store::HistoryEvent{t0, "refund.created", "evt_1", "req-1"}};
  const boost::json::object m = http::timeline_match(r);
  INFO(boost::json::serialize(m));
  CHECK(kinds(m) == std::vector<std::string>{"event:refund.created", "event:refund.succeeded"});
  CHECK(m.at("kind").as_string() == "refund");
  CHECK(m.at("payment").is_null());
  CHECK(m.at("refund").at("payment_id").as_string() == "pay_paid");
  CHECK(m.at("timeline").as_array()[0].at("request_id").as_string() == "req-1");
  CHECK(m.at("timeline").as_array()[1].at("request_id").is_null());
}
