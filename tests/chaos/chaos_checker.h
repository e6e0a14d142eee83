#pragma once
// The Jepsen-style checker of a chaos run. It reads three histories that were written
// independently — the clients' record of what payorchd acknowledged and saw, payorchd's
// database (SQLite file or PostgreSQL, read-only) and the sim vendor's ledger file (read-only) —
// and counts where they disagree:
//
//   acknowledged       intakes that got a 2xx (distinct tenant + operation_id)
//   lost               acknowledged, but missing from payorchd's database or stored with other
//                      params / another payment id or client_key than the 2xx said
//   duplicated         client_keys with more than one charge in the vendor's ledger
//   unexpected         ledger charges whose reference is no payment's client_key
//   phantom            stored payments no client ever sent (or with params never sent)
//   recovered_unknown  terminal payments that went through UNKNOWN (a payment.unknown event)
//   escalated          payments with an open reconciliation case
//   stuck              neither terminal nor in an open case (after settling: must be 0)
//   mismatched         terminal state disagreeing with the ledger (SUCCEEDED <=> a succeeded
//                      charge with the payment's amount and currency, whose id is the
//                      vendor_reference) without an open case: a silent disagreement
//   mismatched_in_case the same disagreement, held in an open case (allowed: a human sees it)
//   outbox_violations  payments without exactly one payment.created, terminal payments without
//                      exactly one terminal event, non-terminal ones with any
//   terminal_changed   payments whose terminal state changed without a resolution (invariant 4):
//                      a state event (unknown, processing, succeeded, failed) after the first
//                      terminal one, a stored state other than that first terminal event's, or
//                      a terminal state a client was shown that is not the stored one — unless a
//                      payment.corrected event (written only by a resolution) says why
//   figure_drift       kept figures (exposure per provider and currency, payments per state:
//                      the sums over their rows) that differ from a recount of the payments in
//                      the same snapshot (invariant 8)
//
// Refunds (docs/refunds.md, rows of payments with refund_of, and the sim's refunds table) count
// in lost / duplicated / unexpected / phantom / stuck / mismatched / outbox_violations as
// payments do (a DEFERRED refund whose payment is in an open case is not stuck), and in three
// counts of their own (issue 15):
//   over_refunded      Σ succeeded refunds above the charge at the vendor; or in payorchd, the
//                      SUCCEEDED refund rows above the payment or not equal to its kept
//                      amount_refunded_minor
//   early_refunds      refunds at the vendor declined charge_not_refundable: sent before the
//                      charge had succeeded, so before payorchd's payment was SUCCEEDED
//   deferred_left      DEFERRED refunds of a terminal payment
//
// Passing: lost = duplicated = unexpected = phantom = stuck = mismatched = outbox_violations =
// terminal_changed = figure_drift = over_refunded = early_refunds = deferred_left = 0 and no
// client saw an answer the API contract rules out.
//
// payorchd's records are read through a RecordSource: one consistent snapshot of a few queries
// in SQL that SQLite and PostgreSQL both run, so the same checks read either driver's database.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "support/sqlite_probe.h"

namespace payorch::chaos {

struct Intent {
  std::string tenant;
  std::string operation_id;
  std::int64_t amount_minor = 0;
  std::string currency;
  std::string payee;
  std::string source;
};

// What a 2xx said.
struct Acknowledgement {
  Intent intent;
  std::string payment_id;
  std::string client_key;
};

// A refund request (POST /v1/payments/{payment_operation_id}/refunds) and what its 2xx said.
struct RefundIntent {
  std::string tenant;
  std::string payment_operation_id;
  std::string operation_id;
  std::int64_t amount_minor = 0;
};
struct RefundAcknowledgement {
  RefundIntent intent;
  std::string refund_id;
  std::string client_key;
};

// The clients' side of the history.
struct ClientHistory {
  std::map<std::string, Intent> sent;                    // "tenant/operation_id" -> the intent
  std::map<std::string, Acknowledgement> acknowledged;  // same key -> the first 2xx
  // Same key -> every terminal state a 2xx view (POST or GET) showed, in the order seen, each
  // once.
  std::map<std::string, std::vector<std::string>> terminal_seen;
  // Refunds, by "tenant/operation_id" of the refund.
  std::map<std::string, RefundIntent> refunds_sent;
  std::map<std::string, RefundAcknowledgement> refunds_acknowledged;  // the first 2xx
  std::int64_t requests = 0;                     // HTTP requests put on the wire
  std::vector<std::string> contract_violations;  // answers the API must never give

  static std::string key(const std::string& tenant, const std::string& operation_id) {
    return tenant + "/" + operation_id;
  }
};

// The results of several queries read in one snapshot, in the order asked.
using Snapshot = std::vector<std::vector<test::SqlRow>>;

// Where the checker reads a database. Read-only: the processes may still run.
class RecordSource {
public:
  virtual ~RecordSource() = default;
  // Runs `sqls` in one read transaction; throws std::runtime_error on any error.
  virtual Snapshot snapshot(const std::vector<std::string>& sqls) const = 0;
};

// An SQLite file (payorchd's database or the sim's ledger).
std::unique_ptr<RecordSource> sqlite_records(const std::string& path);
// A PostgreSQL database, by libpq URI (REPEATABLE READ READ ONLY: one snapshot).
std::unique_ptr<RecordSource> postgres_records(const std::string& url);

struct Report {
  std::int64_t acknowledged = 0, payments = 0, charges = 0;
  std::int64_t succeeded = 0, failed_final = 0;
  std::int64_t lost = 0, duplicated = 0, unexpected = 0, phantom = 0;
  std::int64_t recovered_unknown = 0, escalated = 0, orphan_cases = 0;
  std::int64_t stuck = 0, mismatched = 0, mismatched_in_case = 0, outbox_violations = 0;
  std::int64_t terminal_changed = 0, figure_drift = 0;
  std::int64_t refunds = 0, refunds_acknowledged = 0, vendor_refunds = 0;
  std::int64_t over_refunded = 0, early_refunds = 0, deferred_left = 0;
  std::int64_t contract_violations = 0;
  std::map<std::string, std::int64_t> open_cases_by_reason;  // every open case, by reason
  std::vector<std::string> problems;  // one line per finding (the first few of each kind)

  bool passed() const;
  // "lost=0 duplicated=0 ..." (no leading space).
  std::string counts() const;
  // {"acknowledged":…,…} (one line).
  std::string json() const;
};

// Compares the clients' history with payorchd's records and the vendor's ledger.
Report check(const ClientHistory& history, const RecordSource& payorch, const RecordSource& ledger);
// The same, for payorchd's SQLite file at `payorch_db` and the sim's ledger at `ledger_db`.
Report check(const ClientHistory& history, const std::string& payorch_db,
             const std::string& ledger_db);

// Payments and refunds neither terminal nor in an open case (DEFERRED refunds wait on their
// payment), plus charges and refunds still pending at the vendor: what
// a run waits to see reach 0 before it checks.
std::int64_t unsettled(const RecordSource& payorch, const RecordSource& ledger);

}  // namespace payorch::chaos
