// The chaos checker can fail: a small clean run (real payorchd and sim, no faults) checks
// clean, then copies of its histories are damaged one way at a time — a payment row deleted, a
// second charge for one key, a charge nobody asked for, a terminal state rewritten, a state
// event after a terminal one, a client record that disagrees, a refund DEFERRED behind a
// terminal payment, refunded above the charge or declined charge_not_refundable — and each damage
// shows up in its own count. The same damages are read once from SQLite and once from PostgreSQL, through the
// checker's two record sources.
#include <doctest/doctest.h>

#include <filesystem>
#include <functional>

#include "chaos/chaos_checker.h"
#include "support/daemon.h"
#include "support/engine_checks.h"
#include "support/payorch_api.h"
#include "support/postgres_cluster.h"
#include "support/postgres_probe.h"
#include "support/process.h"
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

const std::vector<Intent> intents{{"acme", "chk-ok", 1250, "EUR", "merchant-1", "tok_ok"},
                                  {"globex", "chk-decline", 990, "USD", "merchant-2", "tok_decline"},
                                  {"acme", "chk-ok-2", 5, "JPY", "merchant-3", "tok_ok"}};

// The three intents through `daemon`, each settled; the clients' record of them.
ClientHistory clean_run(Daemon& daemon, std::vector<Acknowledgement>& acks) {
  ClientHistory history;
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
  // A refund of the first, once it has succeeded: sent, and SUCCEEDED at the vendor and here.
  const RefundIntent refund{"acme", "chk-ok", "chk-ok-refund", 500};
  const HttpResponse r = http_request(daemon.port(), "POST", "/v1/payments/chk-ok/refunds", tenant_headers(acme_token),
                                      R"({"operation_id":"chk-ok-refund","amount_minor":500})");
  REQUIRE_MESSAGE(r.status == 201, r.describe());
  const auto view = r.json();
  history.refunds_sent[ClientHistory::key("acme", refund.operation_id)] = refund;
  history.refunds_acknowledged[ClientHistory::key("acme", refund.operation_id)] =
      RefundAcknowledgement{refund, json_string(view, "id"), json_string(view, "client_key")};
  REQUIRE(eventually(
      [&] {
        const HttpResponse got = http_request(daemon.port(), "GET", "/v1/refunds/chk-ok-refund", tenant_headers(acme_token));
        if (got.status != 200) return false;
        const auto refund_view = got.json();
        return json_string(refund_view, "state") == "SUCCEEDED";
      },
      10s));
  return history;
}

// The checker on a clean history, then on each damage. `damaged(sql)`: a copy of payorchd's
// database with `sql` run on it, as a record source. `delete_payment(id)`: the statements that
// delete a payment row behind the schema's guards, which differ by driver.
// `unguarded`: the statement that lets the next ones write past the refund rows' guards.
void check_damages(const ClientHistory& history, const std::vector<Acknowledgement>& acks,
                   const RecordSource& db, const std::string& ledger_path,
                   const std::function<std::unique_ptr<RecordSource>(const std::string&)>& damaged,
                   const std::string& delete_payment, const std::string& unguarded) {
  const std::string dir = std::filesystem::path(ledger_path).parent_path();
  const std::string ledger_copy = copy_database(ledger_path, dir + "/copy-ledger.db");
  const auto ledger = sqlite_records(ledger_copy);
  const auto damaged_ledger = [&](const std::string& name, const std::string& sql) {
    const std::string copy = copy_database(ledger_copy, dir + "/" + name);
    damage(copy, sql);
    return sqlite_records(copy);
  };

  const Report clean = check(history, db, *ledger);
  INFO("clean: " << clean.counts());
  CHECK(clean.passed());
  CHECK(clean.acknowledged == 3);
  CHECK(clean.payments == 3);
  CHECK(clean.charges == 3);
  CHECK(clean.succeeded == 2);
  CHECK(clean.failed_final == 1);
  CHECK(clean.terminal_changed == 0);
  CHECK(clean.figure_drift == 0);
  CHECK(clean.refunds == 1);
  CHECK(clean.refunds_acknowledged == 1);
  CHECK(clean.vendor_refunds == 1);

  {
    INFO("a refund DEFERRED behind its SUCCEEDED payment: deferred_left");
    const Report r = check(history,
                           *damaged(unguarded + "UPDATE payments SET state = 'PROCESSING', next_action = 'none', "
                                    "last_submit_started_at = NULL, deferred = (1 = 1) WHERE refund_of IS NOT NULL"),
                           *ledger);
    INFO(r.counts());
    CHECK(!r.passed());
    CHECK(r.deferred_left == 1);
  }
  {
    INFO("a refund the vendor declined charge_not_refundable: early_refunds");
    const Report r = check(history, db, *damaged_ledger("early.db", "UPDATE refunds SET status = 'declined', "
                                                                    "decline_code = 'charge_not_refundable'"));
    INFO(r.counts());
    CHECK(!r.passed());
    CHECK(r.early_refunds == 1);
  }
  {
    INFO("the vendor refunded more than the charge: over_refunded");
    const Report r = check(history, db, *damaged_ledger("over.db", "UPDATE refunds SET amount_minor = 100000"));
    INFO(r.counts());
    CHECK(!r.passed());
    CHECK(r.over_refunded == 1);
  }
  {
    INFO("the payment's refunded total differs from its SUCCEEDED refunds: over_refunded");
    const Report r = check(history, *damaged("UPDATE payments SET amount_refunded_minor = 0 WHERE refund_of IS NULL"),
                           *ledger);
    INFO(r.counts());
    CHECK(!r.passed());
    CHECK(r.over_refunded == 1);
  }

  {
    // (Not the refunded one: its refund would be lost with it.)
    INFO("a payment row deleted: lost (and its charge becomes unexpected; the kept count drifts)");
    const Report r = check(history, *damaged(delete_payment + "'" + acks[2].payment_id + "'"), *ledger);
    INFO(r.counts());
    CHECK(!r.passed());
    CHECK(r.lost == 1);
    CHECK(r.unexpected == 1);
    CHECK(r.duplicated == 0);
    CHECK(r.figure_drift == 1);  // SUCCEEDED: kept 2, recounted 1
  }
  {
    INFO("a second charge for one client_key: duplicated");
    const Report r = check(history, db, *damaged_ledger("dup.db", duplicate_charge_sql(acks[2].client_key, "reference")));
    INFO(r.counts());
    CHECK(!r.passed());
    CHECK(r.duplicated == 1);
    CHECK(r.lost == 0);
    CHECK(r.unexpected == 0);
  }
  {
    INFO("a charge whose reference no payment has: unexpected");
    const Report r = check(history, db, *damaged_ledger("unexpected.db",
                                                        duplicate_charge_sql(acks[0].client_key, "'ck_NOSUCHPAYMENTNOSUCHPAYMEN'")));
    INFO(r.counts());
    CHECK(!r.passed());
    CHECK(r.unexpected == 1);
    CHECK(r.duplicated == 0);
  }
  {
    INFO("terminal states rewritten: stuck, a silent mismatch, both changed outside a resolution");
    const Report r = check(history,
                           *damaged("UPDATE payments SET state = 'PROCESSING' WHERE id = '" + acks[2].payment_id + "';"
                                    "UPDATE payments SET state = 'SUCCEEDED' WHERE id = '" + acks[1].payment_id + "'"),
                           *ledger);
    INFO(r.counts());
    CHECK(!r.passed());
    CHECK(r.stuck == 1);
    CHECK(r.mismatched == 1);
    CHECK(r.outbox_violations == 1);  // the rewritten PROCESSING one has a terminal event
    CHECK(r.terminal_changed == 2);
    CHECK(r.figure_drift == 0);  // the triggers moved the kept counts with the rows
  }
  {
    INFO("a state event after the terminal one: terminal_changed");
    const Report r = check(history,
                           *damaged("INSERT INTO outbox (event_id, tenant_id, payment_id, type, payload, created_at) "
                                    "VALUES ('evt_CHAOSCHECKER', 'acme', '" + acks[0].payment_id +
                                    "', 'payment.unknown', '{}', 0)"),
                           *ledger);
    INFO(r.counts());
    CHECK(!r.passed());
    CHECK(r.terminal_changed == 1);
    CHECK(r.stuck == 0);
  }
  {
    INFO("a kept figure off by one: figure_drift");
    const Report r = check(history, *damaged("UPDATE payment_counts SET count = count + 1 WHERE state = 'UNKNOWN'"),
                           *ledger);
    INFO(r.counts());
    CHECK(!r.passed());
    CHECK(r.figure_drift == 1);
  }
  {
    INFO("a mismatch held in an open case is not silent");
    const auto cased = damaged("INSERT INTO reconciliation_cases (id, payment_id, reason, status, opened_at) VALUES "
                               "('rc_CHAOSCHECKER', '" + acks[1].payment_id + "', 'late_contradiction', 'open', 0)");
    // The vendor says the declined one succeeded after all (a late contradiction).
    const auto contradicted = damaged_ledger(
        "late.db", "UPDATE charges SET status = 'succeeded' WHERE reference = '" + acks[1].client_key + "'");
    const Report r = check(history, *cased, *contradicted);
    INFO(r.counts());
    CHECK(r.mismatched == 0);
    CHECK(r.mismatched_in_case == 1);
    CHECK(r.escalated == 1);
    CHECK(r.terminal_changed == 0);
    CHECK(r.passed());
  }
  {
    INFO("the client's record disagrees: lost (other params) and phantom");
    ClientHistory other = history;
    other.acknowledged.begin()->second.intent.amount_minor += 1;
    other.sent.erase(ClientHistory::key("acme", "chk-ok-2"));
    other.acknowledged.erase(ClientHistory::key("acme", "chk-ok-2"));
    const Report r = check(other, db, *ledger);
    INFO(r.counts());
    CHECK(!r.passed());
    CHECK(r.lost == 1);
    CHECK(r.phantom == 1);
  }
  {
    INFO("a client was shown another terminal state than the stored one: terminal_changed");
    ClientHistory other = history;
    other.terminal_seen[ClientHistory::key("acme", "chk-ok")] = {"FAILED_FINAL"};
    const Report r = check(other, db, *ledger);
    INFO(r.counts());
    CHECK(!r.passed());
    CHECK(r.terminal_changed == 1);
  }
}

}  // namespace

TEST_CASE("chaos checker: a clean history passes; each kind of damage is counted") {
  VendorSim sim;
  Daemon daemon(engine_daemon_config({{.base_url = sim.base_url()}}));
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail());
  std::vector<Acknowledgement> acks;
  const ClientHistory history = clean_run(daemon, acks);

  const std::string dir = daemon.dir();
  const std::string db = copy_database(daemon.db_path(), dir + "/copy-payorch.db");
  int copies = 0;
  check_damages(
      history, acks, *sqlite_records(db), sim.db_path(),
      [&](const std::string& sql) {
        const std::string copy = copy_database(db, dir + "/damaged-" + std::to_string(++copies) + ".db");
        damage(copy, sql);
        return sqlite_records(copy);
      },
      "DROP TRIGGER payments_no_delete; DELETE FROM payments WHERE id = ",
      "DROP TRIGGER refunds_not_deferred_again; ");
}

TEST_CASE("chaos checker on PostgreSQL: the same damages are counted the same") {
  auto db = postgres_database_or_skip();
  if (!db) return;
  VendorSim sim;
  DaemonConfig config = engine_daemon_config({{.base_url = sim.base_url()}});
  config.database = "database: {driver: postgres, url: \"" + db->url() + "\", pool_size: 2}";
  Daemon daemon(config);
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail());
  std::vector<Acknowledgement> acks;
  const ClientHistory history = clean_run(daemon, acks);
  // Stopped, so that its database can be the template of damaged copies.
  daemon.kill9();

  PostgresCluster& cluster = db->cluster();
  std::vector<std::string> copies;
  const auto damaged = [&](const std::string& sql) {
    const std::string name = db->name() + "_damaged_" + std::to_string(copies.size() + 1);
    // CREATE DATABASE ... TEMPLATE waits for no one: it fails while a killed daemon's sessions
    // are still closing.
    REQUIRE(eventually(
        [&] {
          try {
            cluster.admin("CREATE DATABASE " + name + " TEMPLATE " + db->name());
            return true;
          } catch (const std::exception&) {
            return false;
          }
        },
        10s));
    copies.push_back(name);
    PostgresProbe(cluster.url(name)).exec(sql);
    return postgres_records(cluster.url(name));
  };
  check_damages(history, acks, *postgres_records(db->url()), sim.db_path(), damaged,
                // Replica mode skips triggers: the no-delete guard and the foreign keys of the
                // payment's events.
                "SET session_replication_role = replica; DELETE FROM payments WHERE id = ",
                "SET session_replication_role = replica; ");
  for (const std::string& name : copies) cluster.drop_database(name);
}
