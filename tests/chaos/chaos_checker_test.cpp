// The chaos checker can fail: a small clean run (real payorchd and sim, no faults) checks
// clean, then copies of its histories are damaged one way at a time — a payment row deleted, a
// second charge for one key, a charge nobody asked for, a terminal state rewritten, a client
// record that disagrees — and each damage shows up in its own count.
#include <doctest/doctest.h>

#include <filesystem>

#include "chaos/chaos_checker.h"
#include "support/daemon.h"
#include "support/engine_checks.h"
#include "support/payorch_api.h"
#include "support/sqlite_probe.h"
#include "support/vendor_sim.h"

using namespace payorch::test;
using namespace payorch::chaos;
using namespace std::chrono_literals;

namespace {

// A consistent copy of a live SQLite file (VACUUM INTO reads one snapshot).
std::string copy_database(const std::string& from, const std::string& to) {
  std::filesystem::remove(to);
  SqliteProbe(from, SqliteProbe::Mode::for_writing).exec("VACUUM INTO '" + to + "'");
  return to;
}

void damage(const std::string& path, const std::string& sql) {
  SqliteProbe(path, SqliteProbe::Mode::for_writing).exec(sql);
}

// A second charge row for `reference`, copied from its first (another id and idempotency key,
// as a vendor that forgot the key would have made).
std::string duplicate_charge_sql(const std::string& reference, const std::string& new_reference) {
  return "INSERT INTO charges SELECT 'ch_CHAOSCHECKERFAKE', 'fake-key', " + new_reference +
         ", amount_minor, currency, payee, source, status, decline_code, request_hash, "
         "created_at + 1, updated_at, key_expires_at, 0, settles_at FROM charges WHERE reference = '" +
         reference + "'";
}

}  // namespace

TEST_CASE("chaos checker: a clean history passes; each kind of damage is counted") {
  VendorSim sim;
  Daemon daemon(engine_daemon_config({{.base_url = sim.base_url()}}));
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail());

  ClientHistory history;
  std::vector<Acknowledgement> acks;
  const std::vector<Intent> intents{{"acme", "chk-ok", 1250, "EUR", "merchant-1", "tok_ok"},
                                    {"globex", "chk-decline", 990, "USD", "merchant-2", "tok_decline"},
                                    {"acme", "chk-ok-2", 5, "JPY", "merchant-3", "tok_ok"}};
  for (const Intent& i : intents) {
    const PaymentRequest req{.operation_id = i.operation_id, .amount_minor = i.amount_minor,
                             .currency = i.currency, .payee = i.payee, .source = i.source};
    const HttpResponse r = post_payment(daemon.port(), i.tenant == "acme" ? acme_token : globex_token, req);
    REQUIRE_MESSAGE(r.status == 201, r.describe());
    const auto view = r.json();
    const Acknowledgement ack{i, json_string(view, "id"), json_string(view, "client_key")};
    history.sent[ClientHistory::key(i.tenant, i.operation_id)] = i;
    history.acknowledged[ClientHistory::key(i.tenant, i.operation_id)] = ack;
    history.requests++;
    acks.push_back(ack);
  }
  for (const Intent& i : intents)
    REQUIRE(is_settled(wait_for_payment(daemon.port(), i.tenant == "acme" ? acme_token : globex_token,
                                        i.operation_id, is_settled, 10s)));

  const std::string dir = daemon.dir();
  const std::string db = copy_database(daemon.db_path(), dir + "/copy-payorch.db");
  const std::string ledger = copy_database(sim.db_path(), dir + "/copy-ledger.db");

  const Report clean = check(history, db, ledger);
  INFO("clean: " << clean.counts());
  CHECK(clean.passed());
  CHECK(clean.acknowledged == 3);
  CHECK(clean.payments == 3);
  CHECK(clean.charges == 3);
  CHECK(clean.succeeded == 2);
  CHECK(clean.failed_final == 1);

  {
    INFO("a payment row deleted: lost (and its charge becomes unexpected)");
    const std::string copy = copy_database(db, dir + "/lost.db");
    damage(copy, "DROP TRIGGER payments_no_delete; DELETE FROM payments WHERE id = '" + acks[0].payment_id + "'");
    const Report r = check(history, copy, ledger);
    INFO(r.counts());
    CHECK(!r.passed());
    CHECK(r.lost == 1);
    CHECK(r.unexpected == 1);
    CHECK(r.duplicated == 0);
  }
  {
    INFO("a second charge for one client_key: duplicated");
    const std::string copy = copy_database(ledger, dir + "/dup.db");
    damage(copy, duplicate_charge_sql(acks[2].client_key, "reference"));
    const Report r = check(history, db, copy);
    INFO(r.counts());
    CHECK(!r.passed());
    CHECK(r.duplicated == 1);
    CHECK(r.lost == 0);
    CHECK(r.unexpected == 0);
  }
  {
    INFO("a charge whose reference no payment has: unexpected");
    const std::string copy = copy_database(ledger, dir + "/unexpected.db");
    damage(copy, duplicate_charge_sql(acks[0].client_key, "'ck_NOSUCHPAYMENTNOSUCHPAYMEN'"));
    const Report r = check(history, db, copy);
    INFO(r.counts());
    CHECK(!r.passed());
    CHECK(r.unexpected == 1);
    CHECK(r.duplicated == 0);
  }
  {
    INFO("terminal states rewritten: stuck and a silent mismatch");
    const std::string copy = copy_database(db, dir + "/states.db");
    damage(copy, "UPDATE payments SET state = 'PROCESSING' WHERE id = '" + acks[2].payment_id + "';"
                 "UPDATE payments SET state = 'SUCCEEDED' WHERE id = '" + acks[1].payment_id + "'");
    const Report r = check(history, copy, ledger);
    INFO(r.counts());
    CHECK(!r.passed());
    CHECK(r.stuck == 1);
    CHECK(r.mismatched == 1);
    CHECK(r.outbox_violations == 1);  // the rewritten PROCESSING one has a terminal event
  }
  {
    INFO("a mismatch held in an open case is not silent");
    const std::string copy = copy_database(db, dir + "/case.db");
    damage(copy, "UPDATE payments SET state = 'SUCCEEDED' WHERE id = '" + acks[1].payment_id + "';"
                 "INSERT INTO reconciliation_cases (id, payment_id, reason, status, opened_at) VALUES "
                 "('rc_CHAOSCHECKER', '" + acks[1].payment_id + "', 'late_contradiction', 'open', 0)");
    const Report r = check(history, copy, ledger);
    INFO(r.counts());
    CHECK(r.mismatched == 0);
    CHECK(r.mismatched_in_case == 1);
    CHECK(r.escalated == 1);
    CHECK(r.passed());
  }
  {
    INFO("the client's record disagrees: lost (other params) and phantom");
    ClientHistory other = history;
    other.acknowledged.begin()->second.intent.amount_minor += 1;
    other.sent.erase(ClientHistory::key("acme", "chk-ok-2"));
    other.acknowledged.erase(ClientHistory::key("acme", "chk-ok-2"));
    const Report r = check(other, db, ledger);
    INFO(r.counts());
    CHECK(!r.passed());
    CHECK(r.lost == 1);
    CHECK(r.phantom == 1);
  }
}
