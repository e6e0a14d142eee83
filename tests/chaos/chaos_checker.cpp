#include "chaos/chaos_checker.h"

#include <algorithm>
#include <set>

#include "support/postgres_probe.h"
#include "support/sqlite_probe.h"

namespace payorch::chaos {
namespace {

using test::PostgresProbe;
using test::SqliteProbe;
using test::SqlRow;

constexpr std::size_t max_problems_per_kind = 5;

std::string text(const SqlRow& row, const char* column) {
  const auto it = row.find(column);
  return it == row.end() ? "" : it->second.value_or("");
}

std::int64_t number(const SqlRow& row, const char* column) {
  const std::string t = text(row, column);
  return t.empty() ? 0 : std::stoll(t);
}

struct Payment {  // a payment's row, or a refund's
  std::string id, tenant, operation_id, client_key, payee, source, currency, state,
      vendor_reference, refund_of;
  std::int64_t amount_minor = 0;
  std::int64_t amount_refunded_minor = 0;
  bool deferred = false;
  std::vector<std::string> events = {};  // outbox event types, in the order written
  bool open_case = false;
};

struct Charge {
  std::string id, status, currency;
  std::int64_t amount_minor = 0;
};

struct VendorRefund {
  std::string id, reference, charge_id, status, decline_code;
  std::int64_t amount_minor = 0;
};

bool is_terminal(const std::string& state) { return state == "SUCCEEDED" || state == "FAILED_FINAL"; }

// The state a terminal event announces, "" for any other event.
std::string terminal_state_of(const std::string& event) {
  return event == "payment.succeeded" ? "SUCCEEDED" : event == "payment.failed" ? "FAILED_FINAL" : "";
}

// Events that announce a change of state (payment.created and payment.escalated do not;
// payment.corrected is a resolution's).
bool changes_state(const std::string& event) {
  return event == "payment.unknown" || event == "payment.processing" || !terminal_state_of(event).empty();
}

std::int64_t count_of(const std::vector<std::string>& events, const std::string& type) {
  return static_cast<std::int64_t>(std::count(events.begin(), events.end(), type));
}

class SqliteRecords : public RecordSource {
public:
  explicit SqliteRecords(std::string path) : path_(std::move(path)) {}
  // One read transaction: a consistent snapshot of a file being written.
  Snapshot snapshot(const std::vector<std::string>& sqls) const override {
    SqliteProbe db(path_);
    db.query("BEGIN");
    Snapshot out;
    for (const std::string& sql : sqls) out.push_back(db.query(sql));
    db.query("COMMIT");
    return out;
  }

private:
  std::string path_;
};

class PostgresRecords : public RecordSource {
public:
  explicit PostgresRecords(std::string url) : url_(std::move(url)) {}
  Snapshot snapshot(const std::vector<std::string>& sqls) const override {
    PostgresProbe db(url_);
    db.exec("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    Snapshot out;
    for (const std::string& sql : sqls) out.push_back(db.query(sql));
    db.exec("COMMIT");
    return out;
  }

private:
  std::string url_;
};

class Findings {
public:
  explicit Findings(Report& report) : report_(report) {}
  void add(std::int64_t Report::*counter, const std::string& kind, const std::string& what) {
    ++(report_.*counter);
    if (++per_kind_[kind] <= max_problems_per_kind) report_.problems.push_back(kind + ": " + what);
  }

private:
  Report& report_;
  std::map<std::string, std::size_t> per_kind_;
};

std::string describe(const Payment& p) {
  return p.id + " " + p.tenant + "/" + p.operation_id + " " + p.client_key + " " + p.state + " " +
         std::to_string(p.amount_minor) + " " + p.currency + " " + p.source;
}

// Why payorchd's terminal state disagrees with the ledger, "" when it agrees.
std::string ledger_disagreement(const Payment& p, const std::vector<Charge>& charges) {
  const Charge* succeeded = nullptr;
  bool pending = false;
  for (const Charge& c : charges) {
    if (c.status == "succeeded" && !succeeded) succeeded = &c;
    pending = pending || c.status == "pending";
    if (c.amount_minor != p.amount_minor || c.currency != p.currency)
      return "charge " + c.id + " is " + std::to_string(c.amount_minor) + " " + c.currency;
  }
  if (p.state == "SUCCEEDED") {
    if (!succeeded) return "SUCCEEDED, but no succeeded charge in the ledger";
    if (p.vendor_reference != succeeded->id)
      return "vendor_reference '" + p.vendor_reference + "' is not charge " + succeeded->id;
  } else if (p.state == "FAILED_FINAL") {
    if (succeeded) return "FAILED_FINAL, but the ledger holds succeeded charge " + succeeded->id;
    if (pending) return "FAILED_FINAL, but the ledger holds a pending charge";
  }
  return "";
}

// Why the payment's terminal state changed outside a resolution, "" when it did not.
// `seen`: the terminal states clients were shown.
std::string terminal_change(const Payment& p, const std::vector<std::string>& seen) {
  if (count_of(p.events, "payment.corrected") > 0) return "";  // a resolution's, by construction
  std::string first;  // the state of the first terminal event
  for (const std::string& event : p.events) {
    if (first.empty()) {
      first = terminal_state_of(event);
    } else if (changes_state(event)) {
      return event + " after the first terminal event (" + first + ")";
    }
  }
  if (!first.empty() && p.state != first) return "stored " + p.state + " after a terminal event for " + first;
  for (const std::string& state : seen)
    if (state != p.state) return "a client was shown " + state + ", stored " + p.state;
  return "";
}

// The kept figures against a recount in the same snapshot: db[first] the kept exposure,
// db[first + 1] its recount, then the kept payment counts and theirs. Kept figures are summed
// over their rows (PostgreSQL keeps one row per key and shard); a key missing on one side counts
// as 0 there.
void check_figures(const Snapshot& db, std::size_t first, Findings& findings) {
  const auto figures = [](const std::vector<SqlRow>& rows, std::initializer_list<const char*> key) {
    std::map<std::string, std::pair<std::int64_t, std::int64_t>> out;
    for (const SqlRow& row : rows) {
      std::string k;
      for (const char* column : key) k += (k.empty() ? "" : " ") + text(row, column);
      out[k] = {number(row, "n"), number(row, "amount")};
    }
    return out;
  };
  const auto compare = [&](const char* what, const auto& kept, const auto& recount) {
    std::set<std::string> keys;
    for (const auto& [k, v] : kept) keys.insert(k);
    for (const auto& [k, v] : recount) keys.insert(k);
    for (const std::string& k : keys) {
      const auto a = kept.count(k) ? kept.at(k) : std::pair<std::int64_t, std::int64_t>{0, 0};
      const auto b = recount.count(k) ? recount.at(k) : std::pair<std::int64_t, std::int64_t>{0, 0};
      if (a != b)
        findings.add(&Report::figure_drift, "figure_drift",
                     std::string(what) + " " + k + ": kept " + std::to_string(a.first) + " / " +
                         std::to_string(a.second) + ", recounted " + std::to_string(b.first) +
                         " / " + std::to_string(b.second));
    }
  };
  compare("exposure", figures(db[first], {"provider", "currency"}),
          figures(db[first + 1], {"provider", "currency"}));
  compare("payments", figures(db[first + 2], {"state"}), figures(db[first + 3], {"state"}));
}

// Refunds (docs/refunds.md): the clients' record, payorchd's refund rows and the vendor's
// refunds table, with the three refund invariants of issue 15.
void check_refunds(const ClientHistory& history, const std::map<std::string, Payment>& payments,
                   const std::map<std::string, Payment>& refunds,
                   const std::map<std::string, std::string>& by_scope,
                   const std::map<std::string, std::string>& by_client_key,
                   const std::map<std::string, std::vector<Charge>>& charges,
                   const std::vector<SqlRow>& ledger_refunds, Report& report, Findings& findings) {
  report.refunds = static_cast<std::int64_t>(refunds.size());
  report.refunds_acknowledged = static_cast<std::int64_t>(history.refunds_acknowledged.size());
  for (const auto& [scope, ack] : history.refunds_acknowledged) {
    const auto found = by_scope.find(scope);
    if (found == by_scope.end()) {
      findings.add(&Report::lost, "lost", "refund " + scope + " (" + ack.refund_id + ") is not in the database");
      continue;
    }
    const Payment& r = refunds.at(found->second);
    const auto payment = payments.find(r.refund_of);
    if (r.id != ack.refund_id || r.client_key != ack.client_key || r.amount_minor != ack.intent.amount_minor ||
        payment == payments.end() || payment->second.operation_id != ack.intent.payment_operation_id)
      findings.add(&Report::lost, "lost", "refund " + scope + " acknowledged as " + ack.refund_id + ", stored as " + describe(r));
  }
  std::map<std::string, std::vector<VendorRefund>> at_vendor;  // by reference (the refund's client_key)
  std::map<std::string, std::int64_t> refunded_at_vendor;       // by charge id
  for (const SqlRow& row : ledger_refunds) {
    const VendorRefund v{.id = text(row, "id"), .reference = text(row, "reference"),
                         .charge_id = text(row, "charge_id"), .status = text(row, "status"),
                         .decline_code = text(row, "decline_code"), .amount_minor = number(row, "amount_minor")};
    ++report.vendor_refunds;
    if (v.status == "succeeded") refunded_at_vendor[v.charge_id] += v.amount_minor;
    // Refund invariant 2: the sim declines a refund of a charge that has not succeeded, which
    // payorchd only sends once its payment is SUCCEEDED (after the vendor said so).
    if (v.decline_code == "charge_not_refundable")
      findings.add(&Report::early_refunds, "early_refunds", "refund " + v.id + " (" + v.reference + ") of charge " +
                                                                v.charge_id + " declined charge_not_refundable");
    if (!by_client_key.contains(v.reference))
      findings.add(&Report::unexpected, "unexpected", "refund " + v.id + " names unknown reference " + v.reference);
    at_vendor[v.reference].push_back(v);
  }
  // Refund invariant 1 at the vendor.
  std::map<std::string, std::int64_t> charge_amount;
  for (const auto& [reference, list] : charges)
    for (const Charge& c : list) charge_amount[c.id] = c.amount_minor;
  for (const auto& [charge, sum] : refunded_at_vendor)
    if (sum > charge_amount[charge])
      findings.add(&Report::over_refunded, "over_refunded", "the vendor refunded " + std::to_string(sum) + " of charge " +
                                                                charge + " of " + std::to_string(charge_amount[charge]));
  std::map<std::string, std::int64_t> succeeded;  // payment id -> Σ SUCCEEDED refund rows
  for (const auto& [id, r] : refunds) {
    const auto sent = history.refunds_sent.find(ClientHistory::key(r.tenant, r.operation_id));
    if (sent == history.refunds_sent.end() || sent->second.amount_minor != r.amount_minor)
      findings.add(&Report::phantom, "phantom", "refund " + describe(r) + " matches no refund sent");
    const auto payment = payments.find(r.refund_of);
    if (payment == payments.end()) {
      findings.add(&Report::phantom, "phantom", "refund " + describe(r) + " of a payment that is not there");
      continue;
    }
    const Payment& p = payment->second;
    const bool terminal = is_terminal(r.state);
    if (r.state == "SUCCEEDED") succeeded[p.id] += r.amount_minor;
    // Refund invariant 3: the payment's terminal transition released it, in its transaction.
    if (r.deferred && is_terminal(p.state))
      findings.add(&Report::deferred_left, "deferred_left", "refund " + describe(r) + " is DEFERRED, its payment " + p.state);
    // A DEFERRED refund waits on its payment: in front of a human when the payment is.
    if (!terminal && !r.open_case && !(r.deferred && !is_terminal(p.state) && p.open_case))
      findings.add(&Report::stuck, "stuck", "refund " + describe(r) + (r.deferred ? " (DEFERRED)" : "") +
                                                " is neither terminal nor in an open case");
    const std::int64_t created = count_of(r.events, "refund.created");
    const std::int64_t terminal_events = count_of(r.events, "refund.succeeded") + count_of(r.events, "refund.failed");
    if (created != 1 || terminal_events != (terminal ? 1 : 0))
      findings.add(&Report::outbox_violations, "outbox", "refund " + describe(r) + ": " + std::to_string(created) +
                                                             " refund.created, " + std::to_string(terminal_events) +
                                                             " terminal events");
    const auto found = at_vendor.find(r.client_key);
    const std::vector<VendorRefund> none;
    const std::vector<VendorRefund>& list = found == at_vendor.end() ? none : found->second;
    if (list.size() > 1)
      findings.add(&Report::duplicated, "duplicated", "refund " + describe(r) + " made " + std::to_string(list.size()) + " times");
    if (!terminal) continue;
    bool vendor_succeeded = false;
    for (const VendorRefund& v : list) vendor_succeeded = vendor_succeeded || v.status == "succeeded";
    std::string why;
    if (r.state == "SUCCEEDED" && !vendor_succeeded) why = "SUCCEEDED, but no succeeded refund at the vendor";
    if (r.state == "FAILED_FINAL" && vendor_succeeded) why = "FAILED_FINAL, but the vendor refunded it";
    if (why.empty()) continue;
    if (r.open_case) findings.add(&Report::mismatched_in_case, "mismatched_in_case", "refund " + describe(r) + ": " + why);
    else findings.add(&Report::mismatched, "mismatched", "refund " + describe(r) + ": " + why);
  }
  // Refund invariant 1 in payorchd.
  for (const auto& [id, p] : payments) {
    const std::int64_t sum = succeeded.contains(id) ? succeeded.at(id) : 0;
    if (sum > p.amount_minor || sum != p.amount_refunded_minor)
      findings.add(&Report::over_refunded, "over_refunded", describe(p) + ": SUCCEEDED refunds sum to " + std::to_string(sum) +
                                                                ", amount_refunded_minor " +
                                                                std::to_string(p.amount_refunded_minor));
  }
}

}  // namespace

std::unique_ptr<RecordSource> sqlite_records(const std::string& path) {
  return std::make_unique<SqliteRecords>(path);
}

std::unique_ptr<RecordSource> postgres_records(const std::string& url) {
  return std::make_unique<PostgresRecords>(url);
}

bool Report::passed() const {
  return lost == 0 && duplicated == 0 && unexpected == 0 && phantom == 0 && stuck == 0 &&
         mismatched == 0 && outbox_violations == 0 && terminal_changed == 0 && figure_drift == 0 &&
         over_refunded == 0 && early_refunds == 0 && deferred_left == 0 && contract_violations == 0;
}

std::string Report::counts() const {
  std::string out;
  for (const auto& [name, value] : std::vector<std::pair<const char*, std::int64_t>>{
           {"acknowledged", acknowledged}, {"payments", payments}, {"charges", charges},
           {"succeeded", succeeded}, {"failed_final", failed_final}, {"lost", lost},
           {"duplicated", duplicated}, {"unexpected", unexpected}, {"phantom", phantom},
           {"recovered_unknown", recovered_unknown}, {"escalated", escalated},
           {"orphan_cases", orphan_cases}, {"stuck", stuck}, {"mismatched", mismatched},
           {"mismatched_in_case", mismatched_in_case}, {"outbox_violations", outbox_violations},
           {"terminal_changed", terminal_changed}, {"figure_drift", figure_drift},
           {"refunds", refunds}, {"refunds_acknowledged", refunds_acknowledged},
           {"vendor_refunds", vendor_refunds}, {"over_refunded", over_refunded},
           {"early_refunds", early_refunds}, {"deferred_left", deferred_left},
           {"contract_violations", contract_violations}})
    out += (out.empty() ? "" : " ") + std::string(name) + "=" + std::to_string(value);
  return out;
}

std::string Report::json() const {
  std::string out = "{";
  std::string pairs = counts();
  // "a=1 b=2" -> "\"a\":1,\"b\":2"
  std::size_t start = 0;
  while (start < pairs.size()) {
    std::size_t end = pairs.find(' ', start);
    if (end == std::string::npos) end = pairs.size();
    const std::string pair = pairs.substr(start, end - start);
    const std::size_t eq = pair.find('=');
    out += (out.size() > 1 ? "," : "") + ("\"" + pair.substr(0, eq) + "\":" + pair.substr(eq + 1));
    start = end + 1;
  }
  return out + ",\"passed\":" + (passed() ? "true" : "false") + "}";
}

Report check(const ClientHistory& history, const RecordSource& payorch, const RecordSource& ledger_source) {
  Report report;
  Findings findings(report);

  // Portable SQL only: the same queries run on SQLite and on PostgreSQL.
  const Snapshot db = payorch.snapshot(
      {"SELECT id, tenant_id, operation_id, client_key, amount_minor, currency, payee, source, "
       "state, vendor_reference, refund_of, CASE WHEN deferred THEN 1 ELSE 0 END AS deferred, "
       "amount_refunded_minor FROM payments",
       "SELECT payment_id, count(*) AS n FROM reconciliation_cases WHERE status = 'open' "
       "GROUP BY payment_id",
       // seq orders a payment's events as they were written (a payment's writers hold its row).
       "SELECT payment_id, type FROM outbox ORDER BY seq",
       "SELECT reason, count(*) AS n FROM reconciliation_cases WHERE status = 'open' GROUP BY reason",
       "SELECT provider, currency, sum(count) AS n, sum(amount_minor) AS amount FROM exposure "
       "GROUP BY provider, currency",
       "SELECT provider, currency, count(*) AS n, sum(amount_minor) AS amount FROM payments "
       "WHERE exposed GROUP BY provider, currency",
       "SELECT state, sum(count) AS n, 0 AS amount FROM payment_counts GROUP BY state",
       // payment_counts counts payments, not refunds (schema 007).
       "SELECT state, count(*) AS n, 0 AS amount FROM payments WHERE operation_type = 'payment' "
       "GROUP BY state"});
  const Snapshot ledger = ledger_source.snapshot(
      {"SELECT id, reference, status, amount_minor, currency FROM charges ORDER BY created_at, id",
       "SELECT id, reference, charge_id, status, decline_code, amount_minor FROM refunds "
       "ORDER BY created_at, id"});

  std::map<std::string, Payment> payments, refunds;             // by id
  std::map<std::string, std::string> by_scope, by_client_key;  // -> payment id
  std::map<std::string, std::string> refund_by_scope, refund_by_client_key;  // -> refund id
  for (const SqlRow& row : db[0]) {
    Payment p{.id = text(row, "id"), .tenant = text(row, "tenant_id"),
              .operation_id = text(row, "operation_id"), .client_key = text(row, "client_key"),
              .payee = text(row, "payee"), .source = text(row, "source"),
              .currency = text(row, "currency"), .state = text(row, "state"),
              .vendor_reference = text(row, "vendor_reference"), .refund_of = text(row, "refund_of"),
              .amount_minor = number(row, "amount_minor"),
              .amount_refunded_minor = number(row, "amount_refunded_minor"),
              .deferred = number(row, "deferred") != 0};
    if (!p.refund_of.empty()) {
      refund_by_scope[ClientHistory::key(p.tenant, p.operation_id)] = p.id;
      refund_by_client_key[p.client_key] = p.id;
      refunds.emplace(p.id, std::move(p));
      continue;
    }
    by_scope[ClientHistory::key(p.tenant, p.operation_id)] = p.id;
    by_client_key[p.client_key] = p.id;
    payments.emplace(p.id, std::move(p));
  }
  for (const SqlRow& row : db[1]) {
    const auto it = row.find("payment_id");
    if (it == row.end() || !it->second) {
      report.orphan_cases += number(row, "n");
      continue;
    }
    if (auto p = payments.find(*it->second); p != payments.end()) p->second.open_case = true;
    if (auto r = refunds.find(*it->second); r != refunds.end()) r->second.open_case = true;
  }
  std::set<std::string> missing_with_events;
  for (const SqlRow& row : db[2]) {
    auto p = payments.find(text(row, "payment_id"));
    auto r = refunds.find(text(row, "payment_id"));
    if (p != payments.end()) p->second.events.push_back(text(row, "type"));
    else if (r != refunds.end()) r->second.events.push_back(text(row, "type"));
    else if (missing_with_events.insert(text(row, "payment_id")).second)
      findings.add(&Report::outbox_violations, "outbox",
                   "events for missing payment " + text(row, "payment_id"));
  }
  for (const SqlRow& row : db[3]) report.open_cases_by_reason[text(row, "reason")] = number(row, "n");
  std::map<std::string, std::vector<Charge>> charges;  // by reference
  for (const SqlRow& row : ledger[0]) {
    charges[text(row, "reference")].push_back({.id = text(row, "id"), .status = text(row, "status"),
                                               .currency = text(row, "currency"),
                                               .amount_minor = number(row, "amount_minor")});
    ++report.charges;
  }
  report.payments = static_cast<std::int64_t>(payments.size());

  // The clients' record against payorchd's.
  report.acknowledged = static_cast<std::int64_t>(history.acknowledged.size());
  for (const auto& [scope, ack] : history.acknowledged) {
    const auto found = by_scope.find(scope);
    if (found == by_scope.end()) {
      findings.add(&Report::lost, "lost", scope + " (" + ack.payment_id + ") is not in the database");
      continue;
    }
    const Payment& p = payments.at(found->second);
    const Intent& i = ack.intent;
    if (p.id != ack.payment_id || p.client_key != ack.client_key || p.amount_minor != i.amount_minor ||
        p.currency != i.currency || p.payee != i.payee || p.source != i.source)
      findings.add(&Report::lost, "lost",
                   scope + " acknowledged as " + ack.payment_id + " " + ack.client_key + " " +
                       std::to_string(i.amount_minor) + " " + i.currency + " " + i.source +
                       ", stored as " + describe(p));
  }
  for (const auto& [id, p] : payments) {
    const auto sent = history.sent.find(ClientHistory::key(p.tenant, p.operation_id));
    if (sent == history.sent.end() || sent->second.amount_minor != p.amount_minor ||
        sent->second.currency != p.currency || sent->second.payee != p.payee ||
        sent->second.source != p.source)
      findings.add(&Report::phantom, "phantom", describe(p) + " matches no intent sent");
  }

  // payorchd's record against the vendor's.
  for (const auto& [reference, list] : charges) {
    const auto owner = by_client_key.find(reference);
    if (owner == by_client_key.end()) {
      for (const Charge& c : list)
        findings.add(&Report::unexpected, "unexpected",
                     "charge " + c.id + " (" + c.status + ") names unknown reference " + reference);
      continue;
    }
    if (list.size() > 1) {
      std::string ids;
      for (const Charge& c : list) ids += " " + c.id + "(" + c.status + ")";
      findings.add(&Report::duplicated, "duplicated",
                   describe(payments.at(owner->second)) + " charged " + std::to_string(list.size()) +
                       " times:" + ids);
    }
  }

  for (const auto& [id, p] : payments) {
    const bool terminal = is_terminal(p.state);
    report.succeeded += p.state == "SUCCEEDED";
    report.failed_final += p.state == "FAILED_FINAL";
    report.escalated += p.open_case;
    if (terminal && count_of(p.events, "payment.unknown") > 0) ++report.recovered_unknown;
    if (!terminal && !p.open_case)
      findings.add(&Report::stuck, "stuck", describe(p) + " is neither terminal nor in an open case");
    const std::int64_t created = count_of(p.events, "payment.created");
    const std::int64_t terminal_events =
        count_of(p.events, "payment.succeeded") + count_of(p.events, "payment.failed");
    if (created != 1 || terminal_events != (terminal ? 1 : 0))
      findings.add(&Report::outbox_violations, "outbox",
                   describe(p) + ": " + std::to_string(created) + " payment.created, " +
                       std::to_string(terminal_events) + " terminal events");
    const auto seen = history.terminal_seen.find(ClientHistory::key(p.tenant, p.operation_id));
    const std::string changed =
        terminal_change(p, seen == history.terminal_seen.end() ? std::vector<std::string>{} : seen->second);
    if (!changed.empty())
      findings.add(&Report::terminal_changed, "terminal_changed", describe(p) + ": " + changed);
    if (!terminal) continue;
    const auto found = charges.find(p.client_key);
    const std::string why =
        ledger_disagreement(p, found == charges.end() ? std::vector<Charge>{} : found->second);
    if (why.empty()) continue;
    if (p.open_case) findings.add(&Report::mismatched_in_case, "mismatched_in_case", describe(p) + ": " + why);
    else findings.add(&Report::mismatched, "mismatched", describe(p) + ": " + why);
  }

  check_figures(db, 4, findings);
  check_refunds(history, payments, refunds, refund_by_scope, refund_by_client_key, charges, ledger[1], report,
                findings);

  report.contract_violations = static_cast<std::int64_t>(history.contract_violations.size());
  for (std::size_t i = 0; i < history.contract_violations.size() && i < max_problems_per_kind; ++i)
    report.problems.push_back("contract: " + history.contract_violations[i]);
  return report;
}

Report check(const ClientHistory& history, const std::string& payorch_db,
             const std::string& ledger_db) {
  return check(history, *sqlite_records(payorch_db), *sqlite_records(ledger_db));
}

std::int64_t unsettled(const RecordSource& payorch, const RecordSource& ledger) {
  const auto one = [](const RecordSource& source, const char* sql) {
    return number(source.snapshot({sql}).at(0).at(0), "n");
  };
  // A DEFERRED refund waits on its payment (counted itself until terminal); one left behind a
  // terminal payment is the checker's deferred_left, not something to wait for.
  return one(payorch,
             "SELECT count(*) AS n FROM payments p WHERE state IN ('PROCESSING', 'UNKNOWN') AND "
             "CASE WHEN deferred THEN 1 ELSE 0 END = 0 AND "
             "NOT EXISTS (SELECT 1 FROM reconciliation_cases c WHERE c.payment_id = p.id "
             "AND c.status = 'open')") +
         one(ledger, "SELECT count(*) AS n FROM charges WHERE status = 'pending'") +
         one(ledger, "SELECT count(*) AS n FROM refunds WHERE status = 'pending'");
}

}  // namespace payorch::chaos
