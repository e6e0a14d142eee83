#include "store/status.h"

#include "core/state_machine.h"

namespace payorch::store {

StatusCounts status_counts(Db& db) {
  StatusCounts s;
  for (const char* state : {"PROCESSING", "UNKNOWN", "SUCCEEDED", "FAILED_FINAL"}) s.payments_by_state[state] = 0;
  {
    // Kept by the schema's triggers (005): no scan of the payments, however many there are.
    auto st = db.prepare("SELECT state, count FROM payment_counts");
    while (st.step()) s.payments_by_state[st.col_text(0)] = st.col_int(1);
  }
  {
    auto st = db.prepare("SELECT COUNT(*), MIN(opened_at) FROM reconciliation_cases WHERE status = 'open'");
    st.step();
    s.open_cases = st.col_int(0);
    s.oldest_open_case_at = st.col_opt_int(1);
  }
  for (auto r : all_case_reasons)
    s.open_cases_by_reason[std::string(to_string(r))] = 0;
  {
    auto st = db.prepare("SELECT reason, COUNT(*) FROM reconciliation_cases WHERE status = 'open' GROUP BY reason");
    while (st.step()) s.open_cases_by_reason[st.col_text(0)] = st.col_int(1);
  }
  return s;
}

std::map<std::string, std::int64_t> refunds_by_state(
    const std::vector<std::pair<RefundState, std::int64_t>>& counts) {
  std::map<std::string, std::int64_t> out;
  for (auto state : {RefundState::deferred, RefundState::processing, RefundState::unknown,
                     RefundState::succeeded, RefundState::failed_final})
    out[std::string(to_string(state))] = 0;
  for (const auto& [state, n] : counts) out[std::string(to_string(state))] += n;
  return out;
}

}  // namespace payorch::store
