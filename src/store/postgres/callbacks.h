#pragma once
// Verified vendor callbacks on PostgreSQL: store::record_callback's contract (store/callbacks.h),
// in the caller's READ COMMITTED transaction. Throws pg::Error.
//
// A delivery may arrive on several nodes at once (vendors retry, load balancers fan out). The
// inbox INSERT ... ON CONFLICT DO NOTHING on (provider, event_id) decides: a second insert of the
// same key waits for the first transaction and, once that has committed, inserts nothing, so
// the second delivery is a duplicate and the payment changes once. Callbacks about one payment
// under different event ids take its row lock (lock_payment) before deciding, so each decides
// on the state the other left.
#include "core/clock.h"
#include "store/callbacks.h"
#include "store/postgres/transitions.h"

namespace payorch::store::pg {

CallbackOutcome record_callback(const WriteTx& w, const VendorCallback& cb, UnixMillis now,
                                Random& rng);

}  // namespace payorch::store::pg
