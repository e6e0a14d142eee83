#include "store/status.h"

namespace payorch::store {

StatusCounts status_counts(Db& db) {
  StatusCounts s;
  for (const char* state : {"PROCESSING", "UNKNOWN", "SUCCEEDED", "FAILED_FINAL"}) s.payments_by_state[state] = 0;
  {
    auto st = db.prepare("SELECT state, COUNT(*) FROM payments GROUP BY state");
    while (st.step()) s.payments_by_state[st.col_text(0)] = st.col_int(1);
  }
  {
    auto st = db.prepare("SELECT COUNT(*), MIN(opened_at) FROM reconciliation_cases WHERE status = 'open'");
    st.step();
    s.open_cases = st.col_int(0);
    s.oldest_open_case_at = st.col_opt_int(1);
  }
  return s;
}

}  // namespace payorch::store
