#pragma once
// Identifiers payorch mints.
#include <string>
#include <string_view>

#include "core/clock.h"

namespace payorch {

// "pay_" + 26-char ULID (48-bit ms timestamp + 80 random bits, Crockford base32). Sorts by time.
std::string new_payment_id(UnixMillis now, Random& rng);

// "re_" + ULID: one refund (docs/refunds.md). Its own operation, with its own client_key.
inline constexpr std::string_view refund_id_prefix = "re_";
std::string new_refund_id(UnixMillis now, Random& rng);

// "ck_" + 26 chars of Crockford base32 randomness (130 bits). The key the vendor sees; minted and
// committed at intake, before any vendor call, and never regenerated for the same payment.
std::string new_client_key(Random& rng);

// "evt_" + ULID: one outbox event.
std::string new_event_id(UnixMillis now, Random& rng);

// "rc_" + ULID: one reconciliation case.
std::string new_case_id(UnixMillis now, Random& rng);

// Crockford base32 ULID (26 chars) from a time and 10 random bytes.
std::string ulid(UnixMillis now, Random& rng);

}  // namespace payorch
