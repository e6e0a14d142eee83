#include "core/decide.h"

#include <algorithm>
#include <cmath>

#include "core/backoff.h"
#include "core/enum_names.h"

namespace payorch {

namespace {

constexpr EnumNames<RecoveryMode, 3> recovery_mode_names{{
    {RecoveryMode::lookup, "lookup"},
    {RecoveryMode::replay, "replay"},
    {RecoveryMode::none, "none"},
}};

constexpr EnumNames<VendorOutcome, 9> vendor_outcome_names{{
    {VendorOutcome::succeeded, "succeeded"},
    {VendorOutcome::declined, "declined"},
    {VendorOutcome::pending, "pending"},
    {VendorOutcome::not_found, "not_found"},
    {VendorOutcome::ambiguous, "ambiguous"},
    {VendorOutcome::not_sent, "not_sent"},
    {VendorOutcome::key_mismatch, "key_mismatch"},
    {VendorOutcome::auth_refused, "auth_refused"},
    {VendorOutcome::unsupported, "unsupported"},
}};

constexpr EnumNames<CallKind, 3> call_kind_names{{
    {CallKind::submit, "submit"},
    {CallKind::query, "query"},
    {CallKind::close, "close"},
}};

}  // namespace

std::string_view to_string(RecoveryMode m) { return name_of(recovery_mode_names, m); }

std::optional<RecoveryMode> parse_recovery_mode(std::string_view s) {
  return value_of(recovery_mode_names, s);
}

std::string_view to_string(VendorOutcome o) { return name_of(vendor_outcome_names, o); }

std::string_view to_string(CallKind k) { return name_of(call_kind_names, k); }

Millis backoff(const Contract& c, std::int64_t n, double jitter) {
  const std::int64_t base = doubled_wait(c.initial_backoff, c.max_backoff, n).count();
  jitter = std::clamp(jitter, 0.0, 1.0);
  const auto half = base / 2;
  return Millis(half + static_cast<std::int64_t>(std::floor(static_cast<double>(base - half) * jitter)));
}

namespace {

bool budget_spent(const Progress& p, const Contract& c, UnixMillis now) {
  if (p.attempt_count - p.budget_attempts_base >= c.max_attempts) return true;
  auto started = p.budget_started_at ? p.budget_started_at : p.first_submit_at;
  return started && now - *started >= c.give_up_after.count();
}

}  // namespace

bool outlives_key_retention(Millis since_first_submit, Millis key_retention) {
  // Durations and times are bounded far below int64 / 10, so the products cannot overflow.
  return since_first_submit.count() * 10 > key_retention.count() * 9;
}

Millis key_retention_limit(Millis key_retention) { return Millis(key_retention.count() * 9 / 10); }

UnixMillis resubmit_deadline(UnixMillis first_submit_at, const Contract& c) {
  return first_submit_at + key_retention_limit(c.key_retention).count();
}

UnixMillis resubmit_latest_end(const Contract& c, UnixMillis now) {
  return now + c.request_timeout.count() + c.lease.count();
}

bool resubmit_outlives_key(std::optional<UnixMillis> first_submit_at, const Contract& c, UnixMillis now) {
  return first_submit_at &&
         outlives_key_retention(Millis(resubmit_latest_end(c, now) - *first_submit_at), c.key_retention);
}

Plan plan(const Progress& p, const Contract& c, UnixMillis now) {
  Plan out;
  if (is_terminal(p.state) || p.next_action == NextAction::none) return out;
  auto give_up = [&](CaseReason r) {
    out.reason = r;
    // Under a confirmed close, an order the vendor may hold is closed and looked at before
    // anyone concludes anything (decide_stopping).
    if (c.confirmed_close && !p.refund && p.first_submit_at &&
        (r == CaseReason::retry_budget_exhausted || r == CaseReason::key_retention_expiring)) {
      out.stopping = true;
      // The vendor counts from the order's creation, which payorch knows only to lie between
      // the first submit's start and the last submit's end: the later one is counted from.
      const UnixMillis close_from =
          p.last_submit_ended_at.value_or(*p.first_submit_at) + c.close_not_before.count();
      if (p.vendor_closed_at) {
        out.kind = Plan::Kind::call;
        out.call = CallKind::query;
      } else if (now < close_from) {
        out.kind = Plan::Kind::wait;  // the vendor refuses an earlier close: scheduled, not slept
        out.next_attempt_at = close_from;
      } else {
        out.kind = Plan::Kind::call;
        out.call = CallKind::close;
      }
      return out;
    }
    out.kind = Plan::Kind::give_up;
    return out;
  };
  if (budget_spent(p, c, now) || p.stop_requested) return give_up(CaseReason::retry_budget_exhausted);
  if (p.state == PaymentState::unknown && c.recovery == RecoveryMode::none)
    return give_up(CaseReason::unrecoverable_contract);

  if (p.next_action == NextAction::submit) {
    out.call = CallKind::submit;
    out.resubmit = p.first_submit_at.has_value();
  } else if (c.recovery == RecoveryMode::lookup) {
    out.call = CallKind::query;
  } else if (c.recovery == RecoveryMode::replay) {
    out.call = CallKind::submit;  // the vendor answers a replay with its stored result
    out.resubmit = true;
  } else {
    // Receipt-only vendor, payment pending: only a callback can tell. Look again later; the
    // budget (give_up_after) escalates it if the callback never comes.
    out.kind = Plan::Kind::wait;
    out.next_attempt_at = now + backoff(c, p.attempt_count + 1, 0.5).count();
    return out;
  }
  if (out.resubmit && resubmit_outlives_key(p.first_submit_at, c, now))
    return give_up(CaseReason::key_retention_expiring);
  out.kind = Plan::Kind::call;
  return out;
}

std::optional<UnixMillis> order_absent_final_at(const Progress& p, const Contract& c, UnixMillis now) {
  if (!c.order_expiry) return std::nullopt;
  const UnixMillis from = p.last_submit_ended_at.value_or(now);
  return from + c.order_expiry->count() + order_expiry_allowance.count();
}

Decision decide_stopping(CallKind call, VendorOutcome o, CaseReason reason, bool operator_stop,
                         UnixMillis now, std::optional<UnixMillis> absent_final_at) {
  Decision d;
  d.next_attempt_at = now;
  if (call == CallKind::close && o == VendorOutcome::succeeded) {
    d.trigger = Trigger::vendor_closed;
  } else if (o == VendorOutcome::not_found && operator_stop && absent_final_at &&
             now < *absent_final_at) {
    // The order may still be made (a QR code not scanned yet): ask again once it cannot be.
    d.trigger = Trigger::recovery_inconclusive;
    d.next_attempt_at = *absent_final_at;
  } else if ((call == CallKind::query && o == VendorOutcome::declined) ||
             (o == VendorOutcome::not_found && operator_stop)) {
    d.trigger = Trigger::recovery_declined;
  } else {
    d.trigger = Trigger::recovery_inconclusive;
    d.give_up = reason;
  }
  return d;
}

Decision decide(const Progress& p, CallKind call, VendorOutcome o, const Contract& c,
                UnixMillis now, double jitter) {
  Decision d;
  const bool recovering = call == CallKind::query || p.state == PaymentState::unknown ||
                          p.next_action == NextAction::query;
  if (!recovering) {
    // A fresh submit from PROCESSING.
    switch (o) {
      case VendorOutcome::succeeded: d.trigger = Trigger::submit_succeeded; break;
      case VendorOutcome::declined: d.trigger = Trigger::submit_declined; break;
      case VendorOutcome::pending: d.trigger = Trigger::submit_pending; break;
      case VendorOutcome::not_sent: d.trigger = Trigger::submit_not_sent; break;
      case VendorOutcome::auth_refused: d.trigger = Trigger::submit_auth_refused; break;
      case VendorOutcome::key_mismatch: d.trigger = Trigger::submit_key_mismatch; break;
      case VendorOutcome::ambiguous:
      case VendorOutcome::not_found:    // a submit cannot say this: treat the answer as garbage
      case VendorOutcome::unsupported:
        d.trigger = Trigger::submit_ambiguous;
        if (c.recovery == RecoveryMode::none) d.give_up = CaseReason::unrecoverable_contract;
        break;
    }
  } else {
    switch (o) {
      case VendorOutcome::succeeded: d.trigger = Trigger::recovery_succeeded; break;
      case VendorOutcome::declined: d.trigger = Trigger::recovery_declined; break;
      case VendorOutcome::pending: d.trigger = Trigger::recovery_pending; break;
      case VendorOutcome::not_found: {
        const bool trusted = call == CallKind::query && p.state == PaymentState::unknown &&
                             c.not_found_final_after && p.last_submit_ended_at &&
                             now - *p.last_submit_ended_at >= c.not_found_final_after->count();
        d.trigger = trusted ? Trigger::recovery_not_found : Trigger::recovery_inconclusive;
        if (trusted && resubmit_outlives_key(p.first_submit_at, c, now)) {
          // The vendor has no charge, but the only way on is a resubmit it may no longer
          // recognise as the same payment: a human decides, and the payment stays UNKNOWN.
          d.trigger = Trigger::recovery_inconclusive;
          d.give_up = CaseReason::key_retention_expiring;
        }
        break;
      }
      case VendorOutcome::key_mismatch:
        d.trigger = Trigger::recovery_inconclusive;
        d.give_up = CaseReason::vendor_key_mismatch;
        break;
      case VendorOutcome::unsupported:
        d.trigger = Trigger::recovery_inconclusive;
        d.give_up = CaseReason::unrecoverable_contract;
        break;
      case VendorOutcome::ambiguous:
      case VendorOutcome::not_sent:
      case VendorOutcome::auth_refused:
        d.trigger = Trigger::recovery_inconclusive;
        break;
    }
  }
  // Spent budget: look again at once, so the next claim escalates instead of waiting a backoff.
  d.next_attempt_at = budget_spent(p, c, now) ? now : now + backoff(c, p.attempt_count, jitter).count();
  return d;
}

}  // namespace payorch
