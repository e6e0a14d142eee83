#pragma once
// Deterministic simulation of the engine (in the manner of TigerBeetle's VOPR and FoundationDB's
// simulator): payorch's real state machine, decisions, claim and outcome transactions
// (engine/steps.h), intake, callbacks and reconciliation store code, on a real database
// (a SQLite file, or a PostgreSQL database), driven by one seed. Everything else is simulated in-process and drawn from that seed: the
// clock, the vendor (ledger, idempotency keys that expire, faults), the network (latency, lost
// answers, timeouts), crashes (all in-memory state dropped and the database reopened, in the
// middle of a transaction or right after a commit), workers paused past their lease, duplicate
// and late callbacks, and an operator resolving cases from the vendor's ledger.
//
// The invariants of docs/contract.md §3 are checked while the run goes (after every transaction, at every
// request the vendor receives) and once it has settled (against the vendor's ledger). The same
// seed replays the same run exactly: a failure is reproduced with `tools/dst --seed N --trace`.
//
// The simulation is single-threaded and holds one connection, so on either driver the
// sequence of transactions and reads is the seed's: PostgreSQL's timing differs from run to
// run, but nothing the run decides depends on it.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace payorch::dst {

// Deliberate defects, switched on only to prove that the checks catch what they claim to.
enum class Defect {
  none,
  vendor_ignores_key,   // the vendor charges every request, key or not (invariant 2 must fire)
  ack_before_commit,    // intake answers before its transaction commits (invariant 3)
  send_before_commit,   // calls leave even when the claim transaction never commits (invariant 1)
  unfenced_outcome,     // a worker records its answer with the current fence, not its own (5)
  drop_callback_inbox,  // a duplicate callback is applied as if new (invariant 7)
  // A close the vendor refused (the order is paid) is taken as confirmed: FAILED_FINAL with the
  // money taken (the close invariant).
  unconfirmed_close,
  // payorch's contract says a not-found may be trusted at once (not_found_final_after 0) while
  // the vendor's requests land up to 20 s late: the not-found rule must fire, and a vendor that
  // does not see a request in flight charges twice (invariant 2).
  early_not_found,
};

class PostgresServer;  // dst/postgres_database.h

struct Options {
  std::uint64_t seed = 1;
  bool trace = false;  // keep every step and log line, returned in Result::trace
  Defect defect = Defect::none;
  // Null: the run is on SQLite. Otherwise on a database of its own on this PostgreSQL server.
  PostgresServer* postgres = nullptr;
};

struct Stats {
  std::int64_t payments = 0;            // intakes committed
  std::int64_t acknowledged = 0;        // intakes answered 2xx
  std::int64_t intake_replays = 0;      // same key, same body: answered with the stored payment
  std::int64_t intake_conflicts = 0;    // same key, other body: refused
  std::int64_t transactions = 0;        // committed
  std::int64_t vendor_requests = 0;     // submits and queries the vendor received
  std::int64_t hidden_by_search_lag = 0;  // lookups that missed a commit younger than search_lag
  std::int64_t charges = 0;             // ledger entries
  std::int64_t vendor_faults = 0;       // lost answers, 5xx, delayed commits, in-progress, not sent
  std::int64_t crashes = 0;             // process crashes (mid-transaction or after a commit)
  std::int64_t paused_workers = 0;      // answers recorded after the lease had lapsed
  std::int64_t stale_outcomes = 0;      // of those, answers refused by the fence
  std::int64_t callbacks = 0;           // deliveries, duplicates included
  std::int64_t duplicate_callbacks = 0; // deliveries of an event id already acknowledged
  std::int64_t expired_keys = 0;        // keys the vendor forgot
  std::int64_t recovered_unknown = 0;   // payments that were UNKNOWN and ended terminal
  std::int64_t escalated = 0;           // payments that were put in front of a human (a case)
  std::int64_t resolved = 0;            // cases the operator resolved
  std::int64_t refunds = 0;             // refund intakes answered 201 (DEFERRED or PROCESSING)
  std::int64_t refunds_deferred = 0;    // of those, DEFERRED (the payment had not succeeded yet)
  std::int64_t refunds_refused = 0;     // answered 409 payment-not-refundable or 422 refund-exceeds-payment
  std::int64_t refund_calls = 0;        // refund submits and queries the vendor received
  std::int64_t vendor_refunds = 0;      // refunds in the vendor's ledger (declined ones included)
  std::int64_t fences = 0;              // give-ups the engine reported for a vendor-side fence
  std::int64_t closes = 0;              // closes the vendor received (a confirmed close)
  std::int64_t closes_refused_paid = 0; // of those, refused because the user had paid meanwhile
  std::int64_t closed_final = 0;        // payments FAILED_FINAL after a close and its confirming query
  std::int64_t invisible_in_flight = 0; // submits the vendor took as new while the key was still committing
  std::int64_t reversals = 0;           // decided charges the vendor reversed later
  std::int64_t late_contradictions = 0; // final answers contradicting a terminal payment, held in a case
  std::int64_t trusted_not_found = 0;   // not-found answers payorch acted on (resubmit or FAILED_FINAL)
  std::int64_t simulated_ms = 0;
};

struct Result {
  std::uint64_t seed = 0;
  std::vector<std::string> violations;  // empty: every invariant held
  Stats stats;
  std::string profile;      // the seed's drawn parameters, one line
  std::string trace;        // with Options::trace
  std::uint64_t fingerprint = 0;  // hash of the whole run (steps and final rows): replay check
  bool ok() const { return violations.empty(); }
};

// Runs one seed. Runs of different seeds may go on in parallel threads, except with
// Options::trace (the trace captures the process's log lines).
Result run(const Options& options);

// The engine's log lines are dropped (call once before running seeds; a traced run captures
// them itself).
void silence_logs();

// Runs seeds [from, from + count) on `jobs` threads, each with `each`'s other options.
// `on_result` is called for each result, in no particular order, under a lock.
Stats run_many(std::uint64_t from, std::uint64_t count, unsigned jobs,
               const std::function<void(const Result&)>& on_result, const Options& each = {});

// Stats summed over many seeds.
void add(Stats& total, const Stats& one);
std::string describe(const Stats& s);

}  // namespace payorch::dst
