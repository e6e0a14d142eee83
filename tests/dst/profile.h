#pragma once
// One run's parameters, drawn from its seed: the provider contract, how many engines, workers
// and payments, and the rate of every fault.
#include <string>

#include "core/decide.h"
#include "core/seeded_random.h"

namespace payorch::dst {

inline constexpr UnixMillis second = 1000;
inline constexpr UnixMillis minute = 60 * second;
inline constexpr UnixMillis hour = 60 * minute;
inline const std::string provider_name = "sim";

// splitmix64 (core/seeded_random.h): the simulation's only source of decisions.
using Rng = SplitMix64;

// One run's parameters, drawn from the seed.
struct Profile {
  Contract contract;
  std::string recovery;
  int engines = 1;
  int workers = 2;
  int payments = 4;  // operations: payment intakes and refund requests of them
  int max_unknown_count = 3;
  Millis poll_interval{2000};
  UnixMillis load_window = 2 * minute;
  double p_not_sent = 0, p_fail_before_commit = 0, p_commit_then_5xx = 0, p_commit_then_lost = 0,
         p_delayed_commit = 0, p_query_fault = 0, p_pending = 0, p_decline = 0, p_callback_dup = 0,
         p_callback_late = 0, p_callback_lost = 0, p_crash_in_txn = 0, p_crash_after_commit = 0,
         p_pause = 0, p_replay = 0, p_conflict = 0;
  // The share of payments a client asks refunds of (one to three each, some at once after the
  // intake, so DEFERRED, and together often more than the payment: the money rule).
  double p_refund = 0;
  bool operator_on = false;
  // The vendor's dialect (docs/vendors.md). Its lookup is eventually consistent: a charge or
  // refund committed less than search_lag ago is not found yet (Stripe's search). 0: a lookup
  // sees every commit at once (WeChat Pay / Alipay query by out_trade_no, the sim).
  Millis search_lag{0};
  // A replay-only vendor (Stripe, Adyen): it has no lookup by reference at all; recovery must
  // never depend on one.
  bool lookup_supported = true;
  // A request the vendor is still committing (a delayed commit) is invisible to its key check:
  // another request with that key meanwhile is taken as new and charged too. Otherwise the
  // vendor answers it 409 in-progress (Stripe), as a replaying contract requires.
  bool in_flight_invisible = false;
  // The share of decided charges the vendor reverses later (succeeded -> declined, or declined
  // -> succeeded), with a callback it keeps sending until acknowledged: a final answer that may
  // contradict the payment's terminal state.
  double p_reversal = 0;
  // A vendor that closes an order by our reference (WeChat Pay, Alipay): the contract's
  // confirmed close (core/decide.h), with close_not_before drawn as 0 or a few minutes.
  bool closable() const { return contract.confirmed_close; }

  // The drawn parameters on one line (printed with every seed's result).
  std::string describe() const;
};

// Draws a profile; every call of `r` is part of the run's sequence of decisions.
Profile draw_profile(Rng& r);

}  // namespace payorch::dst
