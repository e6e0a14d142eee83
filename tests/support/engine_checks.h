#pragma once
// What the engine tests look at: payment views polled over the API until the engine has moved
// them, payorchd's outbox and reconciliation rows read from its SQLite file, and the checks
// that tie payorch's records to the vendor's ledger (docs/contract.md §3 invariants 2, 3, 4, 6).
#include <sys/types.h>

#include <boost/json/value.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "support/database_probe.h"
#include "support/vendor_sim.h"

namespace payorch::test {

// GET /v1/payments/{operation_id} as `token`; a null value unless 200.
boost::json::value fetch_payment(std::uint16_t port, std::string_view token,
                                 std::string_view operation_id);

bool is_terminal_state(std::string_view state);
// Terminal, or an open reconciliation case in the view: automatic work is over.
bool is_settled(const boost::json::value& view);

// Polls the view every 50 ms until `done(view)` or `timeout`; returns the last view seen
// (null if never fetched). Every state seen on the way is appended to `states_seen` if given.
boost::json::value wait_for_payment(std::uint16_t port, std::string_view token,
                                    std::string_view operation_id,
                                    const std::function<bool(const boost::json::value&)>& done,
                                    std::chrono::milliseconds timeout,
                                    std::vector<std::string>* states_seen = nullptr);

// Waits until the payment is in `state` (returns the last view either way).
boost::json::value wait_for_state(std::uint16_t port, std::string_view token,
                                  std::string_view operation_id, std::string_view state,
                                  std::chrono::milliseconds timeout);

// Waits until the payment's view names a reconciliation case (returns the last view either way).
boost::json::value wait_for_case(std::uint16_t port, std::string_view token,
                                 std::string_view operation_id, std::chrono::milliseconds timeout);

// The same for a refund (docs/refunds.md): GET /v1/refunds/{operation_id}, null unless 200.
boost::json::value fetch_refund(std::uint16_t port, std::string_view token, std::string_view operation_id);
boost::json::value wait_for_refund(std::uint16_t port, std::string_view token,
                                   std::string_view operation_id,
                                   const std::function<bool(const boost::json::value&)>& done,
                                   std::chrono::milliseconds timeout,
                                   std::vector<std::string>* states_seen = nullptr);
boost::json::value wait_for_refund_state(std::uint16_t port, std::string_view token,
                                         std::string_view operation_id, std::string_view state,
                                         std::chrono::milliseconds timeout,
                                         std::vector<std::string>* states_seen = nullptr);

// view["reconciliation"] as an object, or null.
boost::json::value reconciliation_of(const boost::json::value& view);
// view["failure"]["code"], "" when absent.
std::string failure_code_of(const boost::json::value& view);

// payorchd's records, read from its database (support/database_probe.h).
class PayorchRecords {
public:
  explicit PayorchRecords(const Daemon& daemon) : db_(daemon) {}
  explicit PayorchRecords(const std::string& sqlite_path) : db_(sqlite_path) {}
  // Outbox event types of the payment in feed order, joined by ", " (so that a failed check
  // prints them): "payment.created, payment.succeeded".
  std::string event_types(const std::string& payment_id);
  std::int64_t count_events(const std::string& payment_id, std::string_view type);
  // reconciliation_cases rows of the payment (id, reason, status, evidence), oldest first.
  std::vector<SqlRow> cases(const std::string& payment_id);
  // The payments row (state, fence, lease_owner, attempt_count, ...).
  SqlRow payment_row(const std::string& payment_id);
  // "payment_id type xN" for every (payment, type) written more than once, except the types
  // a payment or refund may legitimately re-enter ({payment,refund}.processing, .unknown):
  // invariant 6.
  std::vector<std::string> repeated_events();
  DatabaseProbe& probe() { return db_; }

private:
  DatabaseProbe db_;
};

// "" when payorch's view agrees with the vendor's ledger for this payment (invariant 2: at
// most one charge per client_key; SUCCEEDED exactly where the ledger has a succeeded charge,
// whose id is the vendor_reference; FAILED_FINAL where it is declined); otherwise the
// differences. A payment not yet terminal only has to satisfy "at most one charge".
std::string ledger_mismatch(const boost::json::value& view, const VendorSim& sim);

// The status of the vendor's one refund for this refund view's client_key ("succeeded", …), or
// "refunds at the vendor: N" when it holds N ≠ 1 of them (invariant 2 for refunds).
std::string refund_ledger_status(const VendorSim& sim, const boost::json::value& refund_view);
// The sum of the vendor's succeeded refunds of the charge `charge_id`.
std::int64_t refunded_at_vendor(const VendorSim& sim, const std::string& charge_id);

// "[<view JSON> events=<outbox types in order>]" for failure messages.
std::string describe_payment(const boost::json::value& view, PayorchRecords& records);

// The retry policy most engine tests use: 200 ms..1 s backoff, and room for the lookups a
// recovery makes (attempt_count counts queries too, docs/contract.md §3): a "not found" trusted only after
// 2 s takes about five of them.
inline constexpr const char* roomy_retry =
    "{max_attempts: 10, initial_backoff: 200ms, max_backoff: 1s, give_up_after: 1h}";

// A payorchd config with these providers (the first is routing.default_provider) and the fast
// engine section.
DaemonConfig engine_daemon_config(const std::vector<SimProviderConfig>& providers);

// True when nobody holds the write lock of the SQLite file at `db_path` right now (tries
// BEGIN IMMEDIATE without waiting, then rolls back).
bool database_write_lock_free(const std::string& db_path);

// SIGSTOPs `pid` at a moment it holds no write transaction on `db_path`: a process frozen
// inside one would block every other writer, which is not the failure a test of a paused
// worker means to build. Retries (SIGCONT, short pause) for up to `timeout`; false if it
// never found such a moment (the process is then left running).
bool freeze_outside_write_transaction(pid_t pid, const std::string& db_path,
                                      std::chrono::milliseconds timeout = std::chrono::seconds(5));

}  // namespace payorch::test
