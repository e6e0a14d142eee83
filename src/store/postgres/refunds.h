#pragma once
// Refund rows on PostgreSQL: the contracts of store/refunds.h, on a pg::Connection inside the
// caller's transaction, through the shared decisions of store/refund_flow.h. They throw
// pg::Error.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "core/payment.h"
#include "core/refund.h"
#include "store/postgres/connection.h"
#include "store/refunds.h"

namespace payorch::store::pg {

// The refund's intake. The payment's row lock (FOR UPDATE) is taken first, so the refunds of
// one payment take turns and each one's money rule sees the ones committed before it; the
// CHECK on the payment's reservation backs it.
RefundIntakeOutcome record_refund_intake(Connection& conn, const RefundIntakeRequest& req,
                                         UnixMillis now, Random& rng);
std::vector<Payment> list_refunds(Connection& conn, const std::string& payment_id);
std::optional<Payment> find_refund(Connection& conn, const std::string& tenant_id,
                                   const std::string& operation_id);
int release_deferred_refunds(Connection& conn, const std::string& payment_id, PaymentState now_state,
                             UnixMillis now, Random& rng);
int open_payment_corrected_cases(Connection& conn, const std::string& payment_id, UnixMillis now,
                                 Random& rng);
bool hold_refund_work(Connection& conn, const std::string& refund_id, UnixMillis now);
std::vector<std::pair<RefundState, std::int64_t>> count_refunds(Connection& conn);

}  // namespace payorch::store::pg
