#include "chaos/chaos_plan.h"

#include <sys/random.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string_view>

namespace payorch::chaos {
namespace {

std::optional<std::uint64_t> env_number(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return std::nullopt;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text, &end, 10);
  if (end == text || *end != '\0')
    throw std::runtime_error(std::string(name) + " is not a non-negative integer: " + text);
  return value;
}

int env_int(const char* name, int fallback, int lo, int hi) {
  const auto value = env_number(name);
  if (!value) return fallback;
  if (*value < static_cast<std::uint64_t>(lo) || *value > static_cast<std::uint64_t>(hi))
    throw std::runtime_error(std::string(name) + " must be in [" + std::to_string(lo) + ", " +
                             std::to_string(hi) + "]");
  return static_cast<int>(*value);
}

// Seeds a sub-stream so that, e.g., client 3's requests do not depend on how many rounds there are.
std::uint64_t mix(std::uint64_t seed, std::uint64_t stream) {
  Rng r(seed ^ (0x9E3779B97F4A7C15ULL * (stream + 1)));
  return r.next();
}

// The sim's fault modes (src/vendor_sim/README.md). Delays straddle payorchd's 2 s request timeout and
// its 2 s not_found_final_after, so some answers arrive after payorchd gave up on them, some
// commits land after a lookup found nothing, and a resubmit of the same key can find it still
// executing (409 in_progress).
constexpr FaultKind sim_fault_kinds[] = {
    {"fail_before_commit", 0, 0},
    {"commit_then_5xx", 0, 0},
    {"commit_then_hang", 200, 5000},
    {"delayed_commit", 100, 6000},
    {"latency", 50, 6000},
};

}  // namespace

const VendorProfile& sim_profile() {
  // tok_expired is not a source the sim knows: it declines it with invalid_source (final).
  static const VendorProfile profile{.faults = {std::begin(sim_fault_kinds), std::end(sim_fault_kinds)},
                                     .source_ok = "tok_ok",
                                     .source_decline = "tok_decline",
                                     .source_pending = "tok_pending",
                                     .source_invalid = "tok_expired"};
  return profile;
}

const VendorProfile& adyen_emulator_profile() {
  // The emulator's modes (server.js) with the sim's delays; it has no `latency` mode.
  // stored_expired is no stored method: 422 errorCode 803, declined (final).
  static const VendorProfile profile{.faults = {{"fail_before_commit", 0, 0},
                                                {"commit_then_5xx", 0, 0},
                                                {"commit_then_hang", 200, 5000},
                                                {"delayed_commit", 100, 6000}},
                                     .source_ok = "chaos_shopper:stored_authorised",
                                     .source_decline = "chaos_shopper:stored_refused",
                                     .source_pending = "chaos_shopper:stored_received",
                                     .source_invalid = "chaos_shopper:stored_expired"};
  return profile;
}

const VendorProfile& stripe_emulator_profile() {
  // The emulator's modes (server.js): its commit_then_hang holds the connection for good (no
  // delay); delayed_commit keeps the key in use meanwhile (409 idempotency_key_in_use).
  // Test PaymentMethods of https://docs.stripe.com/testing#cards; pm_card_authenticationRequired
  // stops in requires_action and succeeds later, with a payment_intent.succeeded webhook
  // (https://docs.stripe.com/testing#regulatory-cards). pm_card_expired is no PaymentMethod:
  // 400 invalid_request_error resource_missing, declined (final).
  static const VendorProfile profile{.faults = {{"fail_before_commit", 0, 0},
                                                {"commit_then_5xx", 0, 0},
                                                {"commit_then_hang", 0, 0},
                                                {"delayed_commit", 100, 6000}},
                                     .source_ok = "pm_card_visa",
                                     .source_decline = "pm_card_chargeDeclined",
                                     .source_pending = "pm_card_authenticationRequired",
                                     .source_invalid = "pm_card_expired"};
  return profile;
}

Params Params::from_environment() { return from_environment(Params{}); }

Params Params::from_environment(Params defaults) {
  Params p = defaults;
  if (const auto seed = env_number("PAYORCH_CHAOS_SEED")) {
    p.seed = *seed;
  } else {
    std::uint64_t drawn = 0;
    if (::getrandom(&drawn, sizeof drawn, 0) != static_cast<ssize_t>(sizeof drawn))
      throw std::runtime_error("getrandom failed");
    p.seed = drawn % 1'000'000'000'000ULL;  // short enough to retype
  }
  p.kills = env_int("PAYORCH_CHAOS_KILLS", p.kills, 1, 100000);
  p.round_ms = env_int("PAYORCH_CHAOS_ROUND_MS", p.round_ms, 100, 600000);
  p.clients = env_int("PAYORCH_CHAOS_CLIENTS", p.clients, 1, 64);
  p.sim_kills = env_int("PAYORCH_CHAOS_SIM_KILLS", p.sim_kills, 0, 100000);
  p.settle_s = env_int("PAYORCH_CHAOS_SETTLE_S", p.settle_s, 1, 3600);
  p.nodes = env_int("PAYORCH_CHAOS_NODES", p.nodes, 1, 9);
  p.database_restarts = env_int("PAYORCH_CHAOS_DATABASE_RESTARTS", p.database_restarts, 0, 100000);
  return p;
}

std::string Params::describe() const {
  return "seed=" + std::to_string(seed) + " kills=" + std::to_string(kills) +
         " round_ms=" + std::to_string(round_ms) + " clients=" + std::to_string(clients) +
         " sim_kills=" + std::to_string(sim_kills) + " settle_s=" + std::to_string(settle_s) +
         (nodes > 1 || database_restarts > 0
              ? " nodes=" + std::to_string(nodes) + " database_restarts=" + std::to_string(database_restarts)
              : "");
}

std::vector<Round> plan_rounds(const Params& params, const VendorProfile& vendor) {
  if (vendor.faults.empty()) throw std::logic_error("plan_rounds: a vendor profile without fault modes");
  Rng rng(mix(params.seed, 0));
  std::vector<Round> rounds(static_cast<std::size_t>(params.kills));
  for (Round& round : rounds) {
    // Now and then a kill soon after the start, in the middle of payorchd's own recovery.
    round.duration_ms = rng.chance(0.15)
                            ? static_cast<int>(rng.between(50, 400))
                            : static_cast<int>(rng.between(params.round_ms / 2, params.round_ms * 3 / 2));
    round.downtime_ms = static_cast<int>(rng.between(0, 400));
    round.duplicate_callbacks = rng.chance(0.4);
    round.callbacks_enabled = !rng.chance(0.2);
    round.lookup_enabled = !rng.chance(0.1);
    // A calm round now and then, so the run is not all faults.
    round.fault_rate = rng.chance(0.15) ? 0.0 : rng.unit() * 0.7;
    for (int at = static_cast<int>(rng.between(0, 150)); at < round.duration_ms;
         at += static_cast<int>(rng.between(20, 150))) {
      if (!rng.chance(round.fault_rate)) continue;
      const FaultKind& kind =
          vendor.faults[static_cast<std::size_t>(rng.between(0, static_cast<std::int64_t>(vendor.faults.size()) - 1))];
      PlannedFault fault{.at_ms = at, .mode = kind.mode, .count = rng.between(1, 4)};
      if (kind.delay_hi > 0) fault.delay_ms = rng.between(kind.delay_lo, kind.delay_hi);
      round.faults.push_back(fault);
    }
  }
  // The sim is killed after distinct rounds, never after the last (the settling phase needs it
  // up and it is restarted anyway).
  const int sim_kill_rounds = std::min(params.sim_kills, std::max(0, params.kills - 1));
  for (int placed = 0; placed < sim_kill_rounds;) {
    Round& round = rounds[static_cast<std::size_t>(rng.between(0, params.kills - 2))];
    if (round.kill_sim) continue;
    round.kill_sim = true;
    ++placed;
  }
  // Nodes and database restarts draw from streams of their own: a one-node plan is the plan
  // it always was.
  Rng nodes_rng(mix(params.seed, 1));
  for (Round& round : rounds) round.kill_node = static_cast<int>(nodes_rng.between(0, params.nodes - 1));
  Rng reorder_rng(mix(params.seed, 3));
  for (Round& round : rounds) round.reorder_callbacks = reorder_rng.chance(0.4);
  // Evenly spread, so that one restart falls in the middle of the run. The round lasts long
  // enough for the server to be down a while and for the nodes to come back before the kill.
  const int database_restarts = std::min(params.database_restarts, params.kills);
  Rng database_rng(mix(params.seed, 2));
  for (int j = 0; j < database_restarts; ++j) {
    Round& round = rounds[static_cast<std::size_t>((j + 1) * params.kills / (database_restarts + 1))];
    DatabaseRestart restart{.at_ms = static_cast<int>(database_rng.between(100, 600)),
                            .down_ms = static_cast<int>(database_rng.between(300, 2000))};
    round.duration_ms = std::max(round.duration_ms, restart.at_ms + restart.down_ms + 1000);
    round.database_restart = restart;
  }
  return rounds;
}

ClientPlan::ClientPlan(std::uint64_t seed, int client, const VendorProfile& vendor)
    : rng_(mix(seed, 1000 + static_cast<std::uint64_t>(client))),
      node_rng_(mix(seed, 2000 + static_cast<std::uint64_t>(client))),
      vendor_(&vendor),
      client_(client) {}

int ClientPlan::next_node(int nodes) { return static_cast<int>(node_rng_.between(0, nodes - 1)); }

Action ClientPlan::refund_of(std::size_t target) {
  Action a;
  a.kind = Action::Kind::refund;
  a.target = target;
  a.refund_operation_id = "chaos-c" + std::to_string(client_) + "-r" + std::to_string(refunds_++);
  const std::int64_t amount = amounts_.at(target);
  a.refund_amount_minor = rng_.chance(0.3) ? amount : rng_.between(1, std::max<std::int64_t>(1, amount * 2 / 3));
  return a;
}

Action ClientPlan::next() {
  if (refund_next_) {
    Action a = refund_of(*refund_next_);
    refund_next_.reset();
    return a;  // at once: its payment is most likely still PROCESSING
  }
  const double r = rng_.unit();
  Action a;
  a.pause_ms = static_cast<int>(rng_.between(0, 80));
  if (created_ > 0 && r >= 0.62) {
    const auto target = static_cast<std::size_t>(rng_.between(0, static_cast<std::int64_t>(created_) - 1));
    if (r >= 0.82 && r < 0.88) {
      const int pause_ms = a.pause_ms;
      a = refund_of(target);
      a.pause_ms = pause_ms;
      return a;
    }
    a.target = target;
    a.kind = r < 0.82 ? Action::Kind::replay
             : r < 0.92 ? Action::Kind::conflicting_reuse
                        : Action::Kind::read;
    return a;
  }
  static constexpr const char* currencies[] = {"EUR", "USD", "GBP", "JPY", "CHF"};
  const double s = rng_.unit();
  a.kind = Action::Kind::new_payment;
  a.tenant = rng_.chance(0.5) ? "acme" : "globex";
  a.operation_id = "chaos-c" + std::to_string(client_) + "-" + std::to_string(created_);
  a.amount_minor = rng_.chance(0.1) ? rng_.between(1, 99) : rng_.between(100, 2'000'000);
  a.currency = currencies[rng_.between(0, 4)];
  a.payee = "merchant-" + std::to_string(rng_.between(1, 7));
  a.source = s < 0.64   ? vendor_->source_ok
             : s < 0.80 ? vendor_->source_decline
             : s < 0.94 ? vendor_->source_pending
                        : vendor_->source_invalid;
  amounts_.push_back(a.amount_minor);
  if (rng_.chance(0.08)) refund_next_ = created_;
  ++created_;
  return a;
}

}  // namespace payorch::chaos
