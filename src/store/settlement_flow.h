#pragma once
// The settlement import's decision flow, written once for both drivers: store::import_settlement's
// contract (store/settlement.h), every row judged in the caller's one write transaction. It is a
// template over that transaction's handle — store::Db on SQLite, const pg::WriteTx on PostgreSQL
// (store/postgres/flow_handle.h) — and calls free functions found for the handle, each driver's
// own, with its own SQL and locking:
//   lock_payment_by_client_key(h, provider, key)  the row's payment, read so that it cannot
//                                   change before the import ends (SQLite's Writer already
//                                   excludes every other writer; PostgreSQL: FOR UPDATE)
//   hold_unknown_reference, hold_with_evidence, find_open_case, append_evidence (store/cases.h),
//   resolve_case (store/resolution.h), apply_unleased (store/transitions.h)
#include <algorithm>
#include <string>
#include <variant>

#include "core/clock.h"
#include "core/state_machine.h"
#include "store/cases.h"
#include "store/resolution.h"
#include "store/settlement.h"
#include "store/transitions.h"

namespace payorch::store {

// One well-formed row, judged against its payment; counted in `s`.
template <class Handle>
void judge_settlement_row(Handle& h, const std::string& provider, const SettlementRow& row,
                          const std::string& by, UnixMillis now, Random& rng, ImportSummary& s) {
  auto p = lock_payment_by_client_key(h, provider, row.reference);
  if (!p) {
    // The vendor settled a charge no payment of ours made (or made under another provider):
    // money moved that only a human can account for, so it is stored and named, never only
    // counted.
    hold_unknown_reference(h, provider, row.reference, row_evidence(provider, row, "unmatched"),
                           now, rng);
    s.unmatched_references.push_back(row.reference);
    ++s.unmatched;
    return;
  }
  if (p->deferred) {
    // A DEFERRED refund was never sent, so no vendor can have settled it: held as a case about
    // the reference, the refund untouched (it moves only with its payment, docs/refunds.md).
    hold_unknown_reference(h, provider, row.reference, row_evidence(provider, row, "deferred"), now,
                           rng);
    ++s.mismatched;
    return;
  }
  // A charge's row naming a refund's key, or the other way round, is a mismatch like a
  // difference in amount: the vendor's record is about another operation than ours.
  const bool kind_differs = (row.kind == SettlementKind::refund) != p->refund_of.has_value();
  if (kind_differs || row.amount_minor != p->amount_minor || row.currency != p->currency) {
    // The vendor settled an amount, currency or kind other than the intent: a human must look.
    hold_with_evidence(h, *p, mismatch_escalation(p->state),
                       row_evidence(provider, row, kind_differs ? "kind_mismatch" : "amount_mismatch"),
                       now, rng);
    s.changed_payments.push_back(p->id);
    ++s.mismatched;
    return;
  }
  const bool success = row.status == SettlementStatus::succeeded;
  const PaymentState answer = success ? PaymentState::succeeded : PaymentState::failed_final;
  if (auto open = find_open_case(h, p->id)) {
    // A file never overturns a terminal state by itself: that stays an operator's call
    // (invariant 4), so a disagreeing row is evidence for the human, and importing the same
    // file twice cannot correct what the first import only escalated.
    if (is_terminal(p->state) && p->state != answer) {
      append_evidence(h, open->id, row_evidence(provider, row, "contradiction"), now);
      ++s.contradictions;
      return;
    }
    Resolution r;
    r.outcome = success ? ResolutionOutcome::succeeded : ResolutionOutcome::failed_final;
    r.vendor_reference = row.vendor_reference;
    r.note = "settlement file";
    r.by = by;  // the operator who imported the file; the evidence says it came from one
    r.evidence = row_evidence(provider, row, "resolves");
    // The contract is read only by `retry`, which an import never asks for.
    auto result = resolve_case(h, open->id, r, Contract{}, now, rng);
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
  apply_unleased(h, *p, *t, u, now, rng);
  s.changed_payments.push_back(p->id);
  if (t->open_case) {
    append_evidence(h, find_open_case(h, p->id)->id, row_evidence(provider, row, "contradiction"),
                    now);
    ++s.contradictions;
  } else {
    ++s.finalized;
  }
}

template <class Handle>
ImportSummary import_settlement_on(Handle& h, const std::string& provider,
                                   const SettlementFile& file, const std::string& by, UnixMillis now,
                                   Random& rng) {
  ImportSummary s;
  if (file.header_error) {
    s.errors.push_back({1, *file.header_error});
    return s;
  }
  s.rows = file.data_rows;
  s.errors = file.errors;
  for (const auto& row : file.rows) judge_settlement_row(h, provider, row, by, now, rng, s);
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
