#include "chaos/chaos_checker.h"

#include <set>

#include "support/sqlite_probe.h"

namespace payorch::chaos {
namespace {

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

struct Payment {
  std::string id, tenant, operation_id, client_key, payee, source, currency, state,
      vendor_reference;
  std::int64_t amount_minor = 0;
  std::int64_t created_events = 0, terminal_events = 0, unknown_events = 0;
  bool open_case = false;
};

struct Charge {
  std::string id, status, currency;
  std::int64_t amount_minor = 0;
};

bool is_terminal(const std::string& state) { return state == "SUCCEEDED" || state == "FAILED_FINAL"; }

// The rows of one read transaction (a consistent snapshot of a file being written).
std::vector<std::vector<SqlRow>> snapshot(const std::string& path, const std::vector<const char*>& sqls) {
  SqliteProbe db(path);
  db.query("BEGIN");
  std::vector<std::vector<SqlRow>> out;
  for (const char* sql : sqls) out.push_back(db.query(sql));
  db.query("COMMIT");
  return out;
}

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

}  // namespace

bool Report::passed() const {
  return lost == 0 && duplicated == 0 && unexpected == 0 && phantom == 0 && stuck == 0 &&
         mismatched == 0 && outbox_violations == 0 && contract_violations == 0;
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

Report check(const ClientHistory& history, const std::string& payorch_db,
             const std::string& ledger_db) {
  Report report;
  Findings findings(report);

  const auto db = snapshot(
      payorch_db,
      {"SELECT id, tenant_id, operation_id, client_key, amount_minor, currency, payee, source, "
       "state, vendor_reference FROM payments",
       "SELECT payment_id, count(*) AS n FROM reconciliation_cases WHERE status = 'open' "
       "GROUP BY payment_id",
       "SELECT payment_id, sum(type = 'payment.created') AS created, "
       "sum(type IN ('payment.succeeded', 'payment.failed')) AS terminal, "
       "sum(type = 'payment.unknown') AS unknown FROM outbox GROUP BY payment_id",
       "SELECT reason, count(*) AS n FROM reconciliation_cases WHERE status = 'open' GROUP BY reason"});
  const auto ledger =
      snapshot(ledger_db, {"SELECT id, reference, status, amount_minor, currency FROM charges "
                           "ORDER BY created_at, id"});

  std::map<std::string, Payment> payments;                 // by id
  std::map<std::string, std::string> by_scope, by_client_key;  // -> payment id
  for (const SqlRow& row : db[0]) {
    Payment p{.id = text(row, "id"), .tenant = text(row, "tenant_id"),
              .operation_id = text(row, "operation_id"), .client_key = text(row, "client_key"),
              .payee = text(row, "payee"), .source = text(row, "source"),
              .currency = text(row, "currency"), .state = text(row, "state"),
              .vendor_reference = text(row, "vendor_reference"),
              .amount_minor = number(row, "amount_minor")};
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
  }
  for (const SqlRow& row : db[2]) {
    auto p = payments.find(text(row, "payment_id"));
    if (p == payments.end()) {
      findings.add(&Report::outbox_violations, "outbox",
                   "events for missing payment " + text(row, "payment_id"));
      continue;
    }
    p->second.created_events = number(row, "created");
    p->second.terminal_events = number(row, "terminal");
    p->second.unknown_events = number(row, "unknown");
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
    if (terminal && p.unknown_events > 0) ++report.recovered_unknown;
    if (!terminal && !p.open_case)
      findings.add(&Report::stuck, "stuck", describe(p) + " is neither terminal nor in an open case");
    if (p.created_events != 1 || p.terminal_events != (terminal ? 1 : 0))
      findings.add(&Report::outbox_violations, "outbox",
                   describe(p) + ": " + std::to_string(p.created_events) + " payment.created, " +
                       std::to_string(p.terminal_events) + " terminal events");
    if (!terminal) continue;
    const auto found = charges.find(p.client_key);
    const std::string why =
        ledger_disagreement(p, found == charges.end() ? std::vector<Charge>{} : found->second);
    if (why.empty()) continue;
    if (p.open_case) findings.add(&Report::mismatched_in_case, "mismatched_in_case", describe(p) + ": " + why);
    else findings.add(&Report::mismatched, "mismatched", describe(p) + ": " + why);
  }

  report.contract_violations = static_cast<std::int64_t>(history.contract_violations.size());
  for (std::size_t i = 0; i < history.contract_violations.size() && i < max_problems_per_kind; ++i)
    report.problems.push_back("contract: " + history.contract_violations[i]);
  return report;
}

}  // namespace payorch::chaos
