#pragma once
// The Jepsen-style checker of a chaos run. It reads three histories that were written
// independently — the clients' record of what payorchd acknowledged, payorchd's SQLite file
// (read-only) and the sim vendor's ledger file (read-only) — and counts where they disagree:
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
//
// Passing: lost = duplicated = unexpected = phantom = stuck = mismatched = outbox_violations =
// 0 and no client saw an answer the API contract rules out.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

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

// The clients' side of the history.
struct ClientHistory {
  std::map<std::string, Intent> sent;                    // "tenant/operation_id" -> the intent
  std::map<std::string, Acknowledgement> acknowledged;  // same key -> the first 2xx
  std::int64_t requests = 0;                           // HTTP requests put on the wire
  std::vector<std::string> contract_violations;        // answers the API must never give

  static std::string key(const std::string& tenant, const std::string& operation_id) {
    return tenant + "/" + operation_id;
  }
};

struct Report {
  std::int64_t acknowledged = 0, payments = 0, charges = 0;
  std::int64_t succeeded = 0, failed_final = 0;
  std::int64_t lost = 0, duplicated = 0, unexpected = 0, phantom = 0;
  std::int64_t recovered_unknown = 0, escalated = 0, orphan_cases = 0;
  std::int64_t stuck = 0, mismatched = 0, mismatched_in_case = 0, outbox_violations = 0;
  std::int64_t contract_violations = 0;
  std::map<std::string, std::int64_t> open_cases_by_reason;  // every open case, by reason
  std::vector<std::string> problems;  // one line per finding (the first few of each kind)

  bool passed() const;
  // "lost=0 duplicated=0 ..." (no leading space).
  std::string counts() const;
  // {"acknowledged":…,…} (one line).
  std::string json() const;
};

// Reads payorchd's database at `payorch_db` and the sim's ledger at `ledger_db`, both
// read-only (the processes may still run).
Report check(const ClientHistory& history, const std::string& payorch_db,
             const std::string& ledger_db);

}  // namespace payorch::chaos
