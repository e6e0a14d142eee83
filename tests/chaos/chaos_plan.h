#pragma once
// The chaos run's schedule, derived from one seed: how long each round lasts before payorchd
// is killed (which node, when several share a PostgreSQL database), which vendor faults are
// queued when, which sim switches are set, whether the sim itself is killed, when the database
// server restarts, and every client's sequence of requests and the node each goes to. The same seed gives the same plan;
// process timing decides how the plan meets the processes, so a rerun is the same schedule,
// not the same interleaving.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/seeded_random.h"

namespace payorch::chaos {

// splitmix64 (core/seeded_random.h): the same plan from the same seed on every platform.
using Rng = SplitMix64;

// What a run is asked to do; read from PAYORCH_CHAOS_* (tools/chaos sets them).
struct Params {
  std::uint64_t seed = 0;
  int kills = 5;            // payorchd kill -9s (one per round)
  int round_ms = 1500;      // mean round length (each is 50%..150% of it)
  int clients = 4;          // client threads
  int sim_kills = 1;        // rounds after which the sim is killed too
  int settle_s = 40;        // bound on the final settling wait
  int nodes = 1;            // payorchd processes on one database (PostgreSQL)
  int database_restarts = 0;  // rounds in which the database server stops and starts again

  // `defaults`, overridden by PAYORCH_CHAOS_SEED / _KILLS / _ROUND_MS / _CLIENTS / _SIM_KILLS /
  // _SETTLE_S / _NODES / _DATABASE_RESTARTS. Without a seed, one is drawn from the OS (and
  // printed).
  static Params from_environment(Params defaults);
  static Params from_environment();
  std::string describe() const;
};

// A vendor's fault mode as the plan draws it; delay_ms in [delay_lo, delay_hi] (0/0: none).
struct FaultKind {
  const char* mode;
  std::int64_t delay_lo, delay_hi;
};

// What the plan needs to know of the vendor behind payorchd: the fault modes its control API
// takes, and the payment sources that make it answer each way.
struct VendorProfile {
  std::vector<FaultKind> faults;
  std::string source_ok;       // succeeds at once
  std::string source_decline;  // declined (final)
  std::string source_pending;  // pending, settled later (and announced by a callback)
  std::string source_invalid;  // a source the vendor does not know: refused (final)
};
// payorch-vendor-sim (src/vendor_sim/README.md).
const VendorProfile& sim_profile();
// The Adyen Checkout emulator (tests/emulators/adyen/server.js, checkout.js): stored payment
// methods of shopper "chaos_shopper" (providers/adyen/request.cpp reads "shopper:method").
const VendorProfile& adyen_emulator_profile();
// The Stripe emulator (tests/emulators/stripe/server.js): Stripe's test PaymentMethods.
const VendorProfile& stripe_emulator_profile();

// One vendor fault queued through the vendor's control API, `at_ms` into its round.
struct PlannedFault {
  int at_ms = 0;
  std::string mode;
  std::int64_t count = 1;
  std::optional<std::int64_t> delay_ms = std::nullopt;
};

// The database server stopped (sessions cut, transactions rolled back) `at_ms` into its round
// and started again `down_ms` later, on the same port.
struct DatabaseRestart {
  int at_ms = 0;
  int down_ms = 0;
};

struct Round {
  int duration_ms = 0;  // then kill -9 payorchd
  int kill_node = 0;    // which one (an index into the nodes; 0 with one node)
  int downtime_ms = 0;  // before it is started again
  std::optional<DatabaseRestart> database_restart;
  bool kill_sim = false;  // kill -9 and restart the vendor (the sim or an emulator) with payorchd
  bool duplicate_callbacks = false;
  bool reorder_callbacks = false;  // newest first (vendors that batch callbacks: the Adyen emulator)
  // Off: callbacks already queued wait (and arrive late, in the next round); statuses reached
  // meanwhile are never announced (the sim's rule), so only a lookup finds them.
  bool callbacks_enabled = true;
  bool lookup_enabled = true;     // off: a recovery finds the contract unrecoverable (a case)
  double fault_rate = 0;
  std::vector<PlannedFault> faults;
};

// The same seed and profile give the same rounds; the sim's plan is what it always was.
std::vector<Round> plan_rounds(const Params& params, const VendorProfile& vendor = sim_profile());

// One client request. `target` indexes the client's earlier `new_payment` actions (replays,
// conflicting reuses and reads refer to them).
struct Action {
  enum class Kind { new_payment, replay, conflicting_reuse, read, refund } kind = Kind::new_payment;
  std::size_t target = 0;
  int pause_ms = 0;  // think time before the request: keeps intake near what the engine drains
  // For new_payment:
  std::string tenant;  // "acme" | "globex"
  std::string operation_id;
  std::int64_t amount_minor = 0;
  std::string currency;
  std::string payee;
  std::string source;
  // For refund (POST /v1/payments/{op}/refunds of the target): a new refund, at times right
  // behind its payment's intake (DEFERRED), its amount at times the whole payment (so refunds
  // of one payment often exceed it: the money rule).
  std::string refund_operation_id;
  std::int64_t refund_amount_minor = 0;
};

// A client's endless, seeded action stream.
class ClientPlan {
public:
  ClientPlan(std::uint64_t seed, int client, const VendorProfile& vendor = sim_profile());
  Action next();
  // The node (0 .. nodes-1) the next request goes to first. A stream of its own, so that the
  // actions of a seed do not depend on how many nodes there are.
  int next_node(int nodes);

private:
  Action refund_of(std::size_t target);

  Rng rng_;
  Rng node_rng_;
  const VendorProfile* vendor_;
  int client_;
  std::size_t created_ = 0;
  std::vector<std::int64_t> amounts_;      // of the payments created, by target
  std::optional<std::size_t> refund_next_;  // a refund of this payment comes next
  std::size_t refunds_ = 0;
};

}  // namespace payorch::chaos
