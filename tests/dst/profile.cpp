#include "dst/profile.h"

#include <sstream>

namespace payorch::dst {

std::string Profile::describe() const {
  std::ostringstream o;
  o << "recovery=" << recovery << " key_retention=" << contract.key_retention.count() / 1000 << "s"
    << " max_attempts=" << contract.max_attempts << " give_up_after=" << contract.give_up_after.count() / 1000
    << "s engines=" << engines << " workers=" << workers << " payments=" << payments
    << " cap=" << max_unknown_count << " operator=" << operator_on << " p_crash=" << p_crash_in_txn << "/"
    << p_crash_after_commit << " p_lost=" << p_commit_then_lost << " p_5xx=" << p_commit_then_5xx
    << " p_fail_before=" << p_fail_before_commit << " p_delayed=" << p_delayed_commit
    << " p_not_sent=" << p_not_sent << " p_pending=" << p_pending << " p_pause=" << p_pause
    << " p_cb_dup=" << p_callback_dup << " p_cb_late=" << p_callback_late << " p_refund=" << p_refund
    << " search_lag=" << search_lag.count() / 1000 << "s lookup=" << lookup_supported
    << " close=" << contract.confirmed_close << "/" << contract.close_not_before.count() / 1000 << "s"
    << " in_flight=" << (in_flight_invisible ? "invisible" : "409") << " p_reversal=" << p_reversal;
  return o.str();
}

Profile draw_profile(Rng& r) {
  Profile p;
  const int mode = static_cast<int>(r.between(0, 3));
  Contract& c = p.contract;
  c.request_timeout = Millis(5 * second);
  c.lease = Millis(30 * second);
  c.initial_backoff = Millis(1 * second);
  c.max_backoff = Millis(30 * second);
  c.max_attempts = static_cast<int>(r.between(3, 10));
  c.give_up_after = Millis(r.chance(0.5) ? 10 * minute : hour);
  // Short retention in a third of the runs: keys expire at the vendor while recovery goes on.
  c.key_retention = Millis(r.chance(0.33) ? 10 * minute : 24 * hour);
  switch (mode) {
    case 0: c.recovery = RecoveryMode::lookup; c.not_found_final_after = Millis(30 * second); p.recovery = "lookup"; break;
    case 1: c.recovery = RecoveryMode::lookup; c.not_found_final_after.reset(); p.recovery = "lookup-untrusted-not-found"; break;
    case 2: c.recovery = RecoveryMode::replay; c.not_found_final_after.reset(); p.recovery = "replay"; break;
    default: c.recovery = RecoveryMode::none; c.not_found_final_after.reset(); p.recovery = "none"; break;
  }
  p.poll_interval = Millis(r.between(1, 5) * second);
  p.engines = static_cast<int>(r.between(1, 2));
  p.workers = static_cast<int>(r.between(1, 3));
  p.payments = static_cast<int>(r.between(2, 7));
  p.max_unknown_count = static_cast<int>(r.between(1, 5));
  auto rate = [&](double max) { return r.chance(0.25) ? 0.0 : r.unit() * max; };
  p.p_not_sent = rate(0.15);
  p.p_fail_before_commit = rate(0.2);
  p.p_commit_then_5xx = rate(0.2);
  p.p_commit_then_lost = rate(0.2);
  p.p_delayed_commit = rate(0.2);
  p.p_query_fault = rate(0.3);
  p.p_pending = rate(0.3);
  p.p_decline = rate(0.3);
  p.p_callback_dup = rate(0.5);
  p.p_callback_late = rate(0.3);
  p.p_callback_lost = rate(0.5);
  p.p_crash_in_txn = rate(0.04);
  p.p_crash_after_commit = rate(0.04);
  p.p_pause = rate(0.15);
  p.p_replay = rate(0.4);
  p.p_conflict = rate(0.2);
  p.operator_on = r.chance(0.5);
  p.p_refund = rate(0.6);
  // Dialects: a lookup that trusts no not-found may face an eventually consistent search (up to
  // two minutes behind); a replaying contract, a vendor without lookup (Stripe, Adyen).
  // A vendor that closes orders (WeChat Pay, Alipay) in half the lookup runs: a spent budget
  // closes the order, and the close races against the user paying late. Its query by
  // out_trade_no sees every commit at once.
  if (c.recovery == RecoveryMode::lookup && r.chance(0.5)) {
    c.confirmed_close = true;
    c.close_not_before = Millis(r.chance(0.5) ? 0 : r.between(1, 5) * minute);
  }
  if (c.recovery == RecoveryMode::lookup && !c.not_found_final_after && !c.confirmed_close && r.chance(0.5))
    p.search_lag = Millis(r.between(1, 120) * second);
  if (c.recovery == RecoveryMode::replay) p.lookup_supported = r.chance(0.5);
  p.in_flight_invisible = c.recovery != RecoveryMode::replay && r.chance(0.5);
  p.p_reversal = rate(0.2);
  return p;
}

}  // namespace payorch::dst
