#pragma once
// application/x-www-form-urlencoded bodies as Stripe's API v1 takes them
// (https://docs.stripe.com/api: "The API accepts form-encoded request bodies"): nested
// parameters are written with brackets, e.g. metadata[client_key]=ck_…
// (https://docs.stripe.com/api/metadata).
#include <string>
#include <utility>
#include <vector>

namespace payorch::providers::stripe {

using FormFields = std::vector<std::pair<std::string, std::string>>;

// Percent-encodes every byte outside RFC 3986's unreserved set (a space as %20); the brackets
// of a key are kept as they are, as Stripe's own libraries send them.
std::string form_encode(const FormFields& fields);

}  // namespace payorch::providers::stripe
