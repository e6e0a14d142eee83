#include "store/settlement.h"

#include <boost/json/object.hpp>
#include <algorithm>
#include <variant>

#include "core/state_machine.h"
#include "store/cases.h"
#include "store/payments.h"
#include "store/resolution.h"
#include "store/transitions.h"

namespace payorch::store {

namespace {


void apply_row(Db& db, const std::string& provider, const SettlementRow& row, UnixMillis now,
               Random& rng, ImportSummary& s) {
  auto p = find_payment_by_client_key(db, provider, row.reference);
  if (!p) {
    // The vendor settled a charge no payment of ours made (or made under another provider):
    // money moved that only a human can account for, so it is stored and named, never only
    // counted.
    hold_unknown_reference(db, provider, row.reference, row_evidence(provider, row, "unmatched"), now, rng);
    s.unmatched_references.push_back(row.reference);
    ++s.unmatched;
    return;
  }
  if (row.amount_minor != p->amount_minor || row.currency != p->currency) {
    // The vendor settled an amount or currency other than the intent: a human must look.
    hold_with_evidence(db, *p, mismatch_escalation(p->state),
                       row_evidence(provider, row, "amount_mismatch"), now, rng);
    s.changed_payments.push_back(p->id);
    ++s.mismatched;
    return;
  }
  const bool success = row.status == SettlementStatus::succeeded;
  const PaymentState answer = success ? PaymentState::succeeded : PaymentState::failed_final;
  if (auto open = find_open_case(db, p->id)) {
    // A file never overturns a terminal state by itself: that stays an operator's call
    // (invariant 4), so a disagreeing row is evidence for the human, and importing the same
    // file twice cannot correct what the first import only escalated.
    if (is_terminal(p->state) && p->state != answer) {
      append_evidence(db, open->id, row_evidence(provider, row, "contradiction"), now);
      ++s.contradictions;
      return;
    }
    Resolution r;
    r.outcome = success ? ResolutionOutcome::succeeded : ResolutionOutcome::failed_final;
    r.vendor_reference = row.vendor_reference;
    r.note = "settlement file";
    r.by = "settlement-import";
    r.evidence = row_evidence(provider, row, "resolves");
    // The contract is read only by `retry`, which an import never asks for.
    auto result = resolve_case(db, open->id, r, Contract{}, now, rng);
    if (auto* refusal = std::get_if<ResolveRefusal>(&result))
      s.errors.push_back({row.line, refusal->detail});
    else
      ++s.resolved;
    s.changed_payments.push_back(p->id);
    return;
  }
  if (p->state == answer) {
    ++s.confirmed;
    return;
  }
  // The vendor's final word, as a recovery query would report it: on a terminal payment the
  // state machine opens late_contradiction (no state change); otherwise the payment moves.
  auto t = transition(p->state, success ? Trigger::recovery_succeeded : Trigger::recovery_declined);
  TransitionUpdate u;
  u.next_attempt_at = now;
  if (!is_terminal(p->state)) {
    u.vendor_reference = row.vendor_reference;
    if (!success) {
      u.failure_code = row.status_text;
      u.failure_message = "reported by the vendor's settlement file";
    }
  }
  apply_unleased(db, *p, *t, u, now, rng);
  s.changed_payments.push_back(p->id);
  if (t->open_case) {
    append_evidence(db, find_open_case(db, p->id)->id, row_evidence(provider, row, "contradiction"),
                    now);
    ++s.contradictions;
  } else {
    ++s.finalized;
  }
}

}  // namespace

boost::json::object row_evidence(const std::string& provider, const SettlementRow& row,
                                 std::string_view finding) {
  boost::json::object e{{"source", "settlement-import"},
                        {"finding", finding},
                        {"provider", provider},
                        {"line", row.line},
                        {"reference", row.reference},
                        {"status", row.status_text},
                        {"amount_minor", row.amount_minor},
                        {"currency", row.currency}};
  if (row.vendor_reference) e["vendor_reference"] = *row.vendor_reference;
  else e["vendor_reference"] = nullptr;
  return e;
}

ImportSummary import_settlement(Db& db, const std::string& provider, std::string_view csv,
                                UnixMillis now, Random& rng) {
  return import_settlement(db, provider, parse_settlement(csv), now, rng);
}

ImportSummary import_settlement(Db& db, const std::string& provider, const SettlementFile& file,
                                UnixMillis now, Random& rng) {
  ImportSummary s;
  if (file.header_error) {
    s.errors.push_back({1, *file.header_error});
    return s;
  }
  s.rows = file.data_rows;
  s.errors = file.errors;
  for (const auto& row : file.rows) apply_row(db, provider, row, now, rng, s);
  std::stable_sort(s.errors.begin(), s.errors.end(),
                   [](const ImportError& a, const ImportError& b) { return a.line < b.line; });
  std::sort(s.changed_payments.begin(), s.changed_payments.end());
  s.changed_payments.erase(std::unique(s.changed_payments.begin(), s.changed_payments.end()),
                           s.changed_payments.end());
  // Crash timeline: the whole file is one transaction. Dying before the caller commits leaves
  // no row applied. Importing the same file again changes no state: rows that resolved a case
  // are then confirmed, and mismatch rows add their evidence once more.
  return s;
}

}  // namespace payorch::store
