#include <doctest/doctest.h>

#include <limits>
#include <stdexcept>
#include <vector>

#include "core/intent.h"
#include "core/refund.h"

using namespace payorch;

namespace {

using Kind = RefundAdmission::Kind;

RefundAdmission admit(std::int64_t payment_amount, PaymentState payment_state,
                      const std::vector<RefundAmount>& refunds, std::int64_t amount) {
  return admit_refund(payment_amount, payment_state, refunds, amount);
}

constexpr auto succeeded = PaymentState::succeeded;

}  // namespace

TEST_CASE("money rule: the payment's state decides DEFERRED, PROCESSING or 409") {
  CHECK(admit(1000, PaymentState::processing, {}, 100).kind == Kind::deferred);
  CHECK(admit(1000, PaymentState::unknown, {}, 100).kind == Kind::deferred);
  CHECK(admit(1000, succeeded, {}, 100).kind == Kind::processing);
  CHECK(admit(1000, PaymentState::failed_final, {}, 100).kind == Kind::payment_not_refundable);
  // A FAILED_FINAL payment is not refundable whatever the amount: 409, not 422.
  CHECK(admit(1000, PaymentState::failed_final, {}, 5000).kind == Kind::payment_not_refundable);

  CHECK(admit(1000, PaymentState::processing, {}, 100).initial_state() == RefundState::deferred);
  CHECK(admit(1000, succeeded, {}, 100).initial_state() == RefundState::processing);
  CHECK_FALSE(admit(1000, PaymentState::failed_final, {}, 100).initial_state().has_value());
  CHECK(admit(1000, succeeded, {}, 100).accepted());
  CHECK_FALSE(admit(1000, succeeded, {}, 1001).accepted());
}

TEST_CASE("money rule: exactly the remaining amount is accepted, one more is refused") {
  const std::vector<RefundAmount> refunds = {{300, RefundState::succeeded}, {200, RefundState::processing}};
  const RefundAdmission exact = admit(1000, succeeded, refunds, 500);
  CHECK(exact.kind == Kind::processing);
  CHECK(exact.remaining_minor == 500);
  const RefundAdmission over = admit(1000, succeeded, refunds, 501);
  CHECK(over.kind == Kind::exceeds_payment);
  CHECK(over.remaining_minor == 500);
  CHECK(problem_code(over.kind) == "refund-exceeds-payment");

  CHECK(admit(1000, succeeded, {}, 1000).kind == Kind::processing);
  CHECK(admit(1000, succeeded, {}, 1001).kind == Kind::exceeds_payment);
  CHECK(admit(1000, succeeded, {{1000, RefundState::succeeded}}, 1).kind == Kind::exceeds_payment);
}

TEST_CASE("money rule: every state but FAILED_FINAL holds its amount") {
  for (RefundState s : {RefundState::deferred, RefundState::processing, RefundState::unknown,
                        RefundState::succeeded}) {
    CAPTURE(to_string(s));
    CHECK(admit(1000, succeeded, {{600, s}}, 401).kind == Kind::exceeds_payment);
    CHECK(admit(1000, succeeded, {{600, s}}, 400).kind == Kind::processing);
  }
  // A DEFERRED refund holds its amount while the payment is still PROCESSING too.
  CHECK(admit(1000, PaymentState::processing, {{600, RefundState::deferred}}, 401).kind == Kind::exceeds_payment);
}

TEST_CASE("money rule: a FAILED_FINAL refund frees its amount") {
  const std::vector<RefundAmount> refunds = {{1000, RefundState::failed_final}};
  CHECK(admit(1000, succeeded, refunds, 1000).kind == Kind::processing);
  CHECK(admit(1000, succeeded, {{400, RefundState::failed_final}, {600, RefundState::unknown}}, 400).kind ==
        Kind::processing);
  CHECK(admit(1000, succeeded, {{400, RefundState::failed_final}, {600, RefundState::unknown}}, 401).kind ==
        Kind::exceeds_payment);
}

TEST_CASE("money rule: zero, negative and over-range amounts are invalid") {
  for (std::int64_t amount : {std::int64_t{0}, std::int64_t{-1}, std::numeric_limits<std::int64_t>::min(),
                              max_amount_minor + 1, std::numeric_limits<std::int64_t>::max()}) {
    CAPTURE(amount);
    CHECK(admit(1000, succeeded, {}, amount).kind == Kind::invalid_amount);
    CHECK(admit(1000, PaymentState::failed_final, {}, amount).kind == Kind::invalid_amount);
  }
  CHECK(problem_code(Kind::invalid_amount) == "invalid-request");
  CHECK(problem_code(Kind::payment_not_refundable) == "payment-not-refundable");
  CHECK(problem_code(Kind::processing).empty());
}

TEST_CASE("money rule: sums near the int64 limits never overflow") {
  const std::int64_t big = std::numeric_limits<std::int64_t>::max();
  // Stored refunds whose naive sum overflows int64: nothing remains, never a wrapped negative sum.
  const std::vector<RefundAmount> huge = {{big, RefundState::succeeded}, {big, RefundState::processing}};
  const RefundAdmission r = admit(max_amount_minor, succeeded, huge, 1);
  CHECK(r.kind == Kind::exceeds_payment);
  CHECK(r.remaining_minor == 0);
  // Many maximal refunds, all failed: they free everything.
  std::vector<RefundAmount> failed(4, RefundAmount{big, RefundState::failed_final});
  CHECK(admit(max_amount_minor, succeeded, failed, max_amount_minor).kind == Kind::processing);
  // The largest payment and refund amounts.
  CHECK(admit(max_amount_minor, succeeded, {{max_amount_minor - 1, RefundState::succeeded}}, 1).kind ==
        Kind::processing);
  CHECK(admit(max_amount_minor, succeeded, {{max_amount_minor - 1, RefundState::succeeded}}, max_amount_minor)
            .kind == Kind::exceeds_payment);
}

TEST_CASE("money rule: a negative stored refund amount is an impossible state") {
  CHECK_THROWS_AS(admit(1000, succeeded, {{-1, RefundState::succeeded}}, 1), std::logic_error);
}
