#include "support/cases.h"

#include <doctest/doctest.h>

#include <chrono>

#include "support/database_probe.h"
#include "support/http_client.h"
#include "support/payorch_api.h"

namespace payorch::test {

Created create_payment(Daemon& daemon, const std::string& prefix) {
  PaymentRequest req{.operation_id = unique_operation_id(prefix), .amount_minor = 4200, .currency = "EUR"};
  const HttpResponse r = post_payment(daemon.port(), acme_token, req);
  REQUIRE_MESSAGE(r.status == 201, r.describe());
  return {json_string(r.json(), "id"), json_string(r.json(), "client_key")};
}

std::string open_case(Daemon& daemon, const std::string& payment_id, int n) {
  const std::string case_id = "rc_IT" + std::string(20 - std::to_string(n).size(), '0') +
                              std::to_string(n) + "X";
  DatabaseProbe db(daemon, SqliteProbe::Mode::for_writing);
  const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  // BEGIN then a write first: SQLite takes its write lock at once, as BEGIN IMMEDIATE would.
  db.exec("BEGIN;"
          "UPDATE payments SET next_action = 'none', fence = fence + 1, lease_owner = NULL,"
          " lease_expires_at = NULL WHERE id = '" + payment_id + "';"
          "INSERT INTO reconciliation_cases (id, payment_id, reason, status, opened_at)"
          " VALUES ('" + case_id + "', '" + payment_id + "', 'retry_budget_exhausted', 'open',"
          " " + std::to_string(now_ms) + ");"
          "COMMIT;");
  return case_id;
}

}  // namespace payorch::test
