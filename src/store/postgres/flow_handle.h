#pragma once
// pg::WriteTx as the handle of the decision flows both drivers share (store/resolution_flow.h,
// store/settlement_flow.h, store/callback_flow.h): the reads and writes those flows call, on the
// transaction's connection. Each only forwards to its pg::Connection overload, which keeps
// PostgreSQL's own SQL and locking.
#include <boost/json/object.hpp>
#include <optional>
#include <string>

#include "core/clock.h"
#include "core/payment.h"
#include "store/postgres/cases.h"
#include "store/postgres/payments.h"
#include "store/postgres/transitions.h"

namespace payorch::store::pg {

inline std::optional<Payment> find_payment_by_id(const WriteTx& w, const std::string& id) {
  return find_payment_by_id(w.conn, id);
}
inline std::optional<Payment> lock_payment_by_client_key(const WriteTx& w,
                                                         const std::string& provider,
                                                         const std::string& client_key) {
  return lock_payment_by_client_key(w.conn, provider, client_key);
}
inline std::optional<ReconciliationCase> find_case(const WriteTx& w, const std::string& case_id) {
  return find_case(w.conn, case_id);
}
inline std::optional<ReconciliationCase> find_open_case(const WriteTx& w,
                                                        const std::string& payment_id) {
  return find_open_case(w.conn, payment_id);
}
inline bool append_evidence(const WriteTx& w, const std::string& case_id,
                            boost::json::object entry, UnixMillis now) {
  return append_evidence(w.conn, case_id, std::move(entry), now);
}
inline std::string hold_unknown_reference(const WriteTx& w, const std::string& provider,
                                          const std::string& reference,
                                          boost::json::object evidence, UnixMillis now,
                                          Random& rng) {
  return hold_unknown_reference(w.conn, provider, reference, std::move(evidence), now, rng);
}

}  // namespace payorch::store::pg
