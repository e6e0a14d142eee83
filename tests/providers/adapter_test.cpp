// providers/adapter: what every vendor dialect shares.
#include "providers/adapter.h"

#include <doctest/doctest.h>

#include "support/enum_names.h"

TEST_CASE("every callback error has a name") {
  using payorch::providers::CallbackError;
  payorch::test::check_names(
      {CallbackError::bad_signature, CallbackError::stale_timestamp, CallbackError::malformed});
}
