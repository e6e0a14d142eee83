#include "core/refund_state.h"

#include "core/enum_names.h"

namespace payorch {
namespace {

constexpr EnumNames<RefundState, 5> state_names{{
    {RefundState::deferred, "DEFERRED"},
    {RefundState::processing, "PROCESSING"},
    {RefundState::unknown, "UNKNOWN"},
    {RefundState::succeeded, "SUCCEEDED"},
    {RefundState::failed_final, "FAILED_FINAL"},
}};

constexpr EnumNames<EventType, 7> event_names{{
    {EventType::created, "refund.created"},
    {EventType::unknown, "refund.unknown"},
    {EventType::processing, "refund.processing"},
    {EventType::escalated, "refund.escalated"},
    {EventType::succeeded, "refund.succeeded"},
    {EventType::failed, "refund.failed"},
    {EventType::corrected, "refund.corrected"},
}};

RefundTransition as_refund_step(const Transition& t) {
  return RefundTransition{refund_state(t.from), refund_state(t.to), t.next, t.event, t.open_case,
                          t.resolves_system_case, t.trigger};
}

std::optional<RefundTransition> as_refund_step(const std::optional<Transition>& t) {
  if (!t) return std::nullopt;
  return as_refund_step(*t);
}

}  // namespace

std::string_view to_string(RefundState s) { return name_of(state_names, s); }
std::optional<RefundState> parse_refund_state(std::string_view s) { return value_of(state_names, s); }
std::string_view refund_event_type(EventType e) { return name_of(event_names, e); }

std::optional<PaymentState> protocol_state(RefundState s) {
  switch (s) {
    case RefundState::deferred: return std::nullopt;
    case RefundState::processing: return PaymentState::processing;
    case RefundState::unknown: return PaymentState::unknown;
    case RefundState::succeeded: return PaymentState::succeeded;
    case RefundState::failed_final: return PaymentState::failed_final;
  }
  return std::nullopt;
}

RefundState refund_state(PaymentState s) {
  switch (s) {
    case PaymentState::processing: return RefundState::processing;
    case PaymentState::unknown: return RefundState::unknown;
    case PaymentState::succeeded: return RefundState::succeeded;
    case PaymentState::failed_final: return RefundState::failed_final;
  }
  return RefundState::processing;
}

std::optional<RefundTransition> refund_transition(RefundState from, Trigger trigger,
                                                  CaseReason give_up_reason) {
  const auto state = protocol_state(from);
  if (!state) return std::nullopt;
  return as_refund_step(transition(*state, trigger, give_up_reason));
}

std::optional<RefundTransition> refund_resume(RefundState from, bool vendor_has_refund) {
  const auto state = protocol_state(from);
  if (!state) return std::nullopt;
  return as_refund_step(resume(*state, vendor_has_refund));
}

std::optional<DeferredRefundStep> deferred_refund_step(PaymentState payment_now) {
  constexpr auto from = RefundState::deferred;
  switch (payment_now) {
    case PaymentState::succeeded:
      return DeferredRefundStep{
          RefundTransition{from, RefundState::processing, NextAction::submit, EventType::processing,
                           std::nullopt, false, std::nullopt},
          std::nullopt};
    case PaymentState::failed_final:
      return DeferredRefundStep{
          RefundTransition{from, RefundState::failed_final, NextAction::none, EventType::failed,
                           std::nullopt, false, std::nullopt},
          payment_failed_code};
    case PaymentState::processing:
    case PaymentState::unknown:
      return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace payorch
