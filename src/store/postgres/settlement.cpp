#include "store/postgres/settlement.h"

#include <boost/json/object.hpp>
#include <algorithm>
#include <variant>

#include "core/state_machine.h"
#include "store/postgres/cases.h"
#include "store/postgres/resolution.h"

namespace payorch::store::pg {
namespace {

// One well-formed row, judged as store/settlement.cpp judges it on SQLite.
void apply_row(const WriteTx& w, const std::string& provider, const SettlementRow& row,
               UnixMillis now, Random& rng, ImportSummary& s) {
  auto p = lock_payment_by_client_key(w.conn, provider, row.reference);
  if (!p) {
    hold_unknown_reference(w.conn, provider, row.reference, row_evidence(provider, row, "unmatched"),
                           now, rng);
    s.unmatched_references.push_back(row.reference);
    ++s.unmatched;
    return;
  }
  if (row.amount_minor != p->amount_minor || row.currency != p->currency) {
    hold_with_evidence(w, *p, mismatch_escalation(p->state),
                       row_evidence(provider, row, "amount_mismatch"), now, rng);
    s.changed_payments.push_back(p->id);
    ++s.mismatched;
    return;
  }
  const bool success = row.status == SettlementStatus::succeeded;
  const PaymentState answer = success ? PaymentState::succeeded : PaymentState::failed_final;
  if (auto open = find_open_case(w.conn, p->id)) {
    // A file never overturns a terminal state by itself (invariant 4).
    if (is_terminal(p->state) && p->state != answer) {
      append_evidence(w.conn, open->id, row_evidence(provider, row, "contradiction"), now);
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
    auto result = resolve_case(w, open->id, r, Contract{}, now, rng);
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
  // The vendor's final word, as a recovery query would report it.
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
  apply_unleased(w, *p, *t, u, now, rng);
  s.changed_payments.push_back(p->id);
  if (t->open_case) {
    append_evidence(w.conn, find_open_case(w.conn, p->id)->id,
                    row_evidence(provider, row, "contradiction"), now);
    ++s.contradictions;
  } else {
    ++s.finalized;
  }
}

}  // namespace

ImportSummary import_settlement(const WriteTx& w, const std::string& provider,
                                const SettlementFile& file, UnixMillis now, Random& rng) {
  ImportSummary s;
  if (file.header_error) {
    s.errors.push_back({1, *file.header_error});
    return s;
  }
  s.rows = file.data_rows;
  s.errors = file.errors;
  for (const auto& row : file.rows) apply_row(w, provider, row, now, rng, s);
  std::stable_sort(s.errors.begin(), s.errors.end(),
                   [](const ImportError& a, const ImportError& b) { return a.line < b.line; });
  std::sort(s.changed_payments.begin(), s.changed_payments.end());
  s.changed_payments.erase(std::unique(s.changed_payments.begin(), s.changed_payments.end()),
                           s.changed_payments.end());
  // Crash timeline: the whole file is one transaction; before the caller's COMMIT no row is
  // applied. Importing the same file again changes no state.
  return s;
}

}  // namespace payorch::store::pg
