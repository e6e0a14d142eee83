// Risk caps across nodes on PostgreSQL (docs/contract.md §3 invariant 8): several nodes' claim
// rounds for one provider run at once, with no lock they all wait on, and the exposure never
// passes a cap. Four PgStores (nodes) run the engine's claim round and outcome recording
// against one database; a test-only deferred trigger recounts the exposure from the payment
// rows as each transaction commits (the checkers alone take turns on an advisory lock, so the
// recount sees every commit before its own), and no recount may pass a cap.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "core/seeded_random.h"
#include "engine/steps.h"
#include "store/postgres/leases.h"
#include "store/postgres/migrations.h"
#include "store/postgres/payments.h"
#include "store/postgres/pg_store.h"
#include "support/postgres_cluster.h"
#include "support/process.h"
#include "support/store_fixture.h"
#include "support/store_under_test.h"
#include "util/log.h"

namespace payorch::store::pg {
namespace {

using namespace std::chrono_literals;
constexpr UnixMillis t0 = 1'700'000'000'000;

// The exposure of provider sim after each committed transaction that changed a payment, in
// commit order. Test databases only: it makes the writers of payments take turns at COMMIT.
constexpr const char* exposure_audit = R"sql(
CREATE TABLE exposure_audit (seq BIGSERIAL PRIMARY KEY, count BIGINT NOT NULL,
                             amount_minor BIGINT NOT NULL);
CREATE FUNCTION audit_exposure() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('payorch_test.audited', true) = 'yes' THEN
    RETURN NULL;
  END IF;
  PERFORM set_config('payorch_test.audited', 'yes', true);
  PERFORM pg_advisory_xact_lock(7171);
  INSERT INTO exposure_audit (count, amount_minor)
    SELECT COUNT(*), COALESCE(SUM(amount_minor), 0) FROM payments
    WHERE exposed AND provider = 'sim';
  RETURN NULL;
END
$$;
CREATE CONSTRAINT TRIGGER audit_exposure AFTER INSERT OR UPDATE ON payments
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION audit_exposure();
)sql";

// The jobs of the nodes that did not commit (doctest's assertions are for the test's thread).
class Failures {
public:
  void add(const std::string& what) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (all_.size() < 5) all_.push_back(what);
    ++count_;
  }
  int count() const { return count_; }
  std::vector<std::string> first() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return all_;
  }

private:
  mutable std::mutex mutex_;
  std::vector<std::string> all_;
  std::atomic<int> count_{0};
};

providers::VendorResult answer(VendorOutcome outcome) {
  providers::VendorResult r;
  r.outcome = outcome;
  r.http_status = outcome == VendorOutcome::ambiguous ? 0 : 200;
  r.detail = "race";
  if (outcome == VendorOutcome::succeeded) r.vendor_reference = "ch_race";
  return r;
}

// One node: claim rounds with every worker slot free, then each call's answer in a job of its
// own, until `stop`. A submit is answered succeeded, or ambiguous (the payment stays exposed,
// UNKNOWN, until a query finds it succeeded), or not sent (it leaves the exposure and is
// submitted again). Time runs 10x: leases lapse mid-run too.
void run_node(PgStore& store, const std::string& owner, const std::map<std::string, Contract>& contracts,
              const std::map<std::string, RiskCap>& caps, std::uint64_t seed,
              std::chrono::steady_clock::time_point start, const std::atomic<bool>& stop,
              Failures& failures) {
  SeededRandom rng(seed);
  SplitMix64 pick(seed);
  const auto now = [&] {
    return t0 + 10 * std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::steady_clock::now() - start).count();
  };
  while (!stop) {
    engine::ClaimRound round;
    round.owner = owner;
    round.now = now();
    round.lease = contracts.at("sim").lease;
    round.max = 8;
    round.poll_interval = Millis{50};
    round.contracts = &contracts;
    round.quotas = {{"sim", 8}};
    round.caps = &caps;
    std::vector<engine::Call> calls;
    const auto claimed = test::run_job(store, [&](Tx& tx) { calls = engine::claim_round(tx, round, rng); });
    if (claimed.status != WriteStatus::committed) {
      failures.add("claim round: " + claimed.error);
      continue;
    }
    for (const auto& call : calls) {
      VendorOutcome outcome = VendorOutcome::succeeded;
      if (call.call == CallKind::submit && pick.chance(0.5))
        outcome = pick.chance(0.5) ? VendorOutcome::ambiguous : VendorOutcome::not_sent;
      const auto recorded = test::run_job(store, [&](Tx& tx) {
        engine::record_outcome(tx, call, answer(outcome), now(), 0.5, rng, nullptr);
      });
      if (recorded.status != WriteStatus::committed) failures.add("outcome: " + recorded.error);
    }
  }
}

// Per key, the exposure its room and debt account for (cap - room + debt) against a recount of
// the payments taken in; true when they agree everywhere (each difference is a MESSAGE).
bool room_accounts_for_exposure(Connection& c) {
  const Result r = c.exec(
      "SELECT k.provider, k.currency, k.cap - SUM(r.room) + k.debt,"
      "  CASE WHEN k.currency = '' THEN (SELECT COUNT(*) FROM payments p"
      "                                  WHERE p.exposed AND p.risk_taken AND p.provider = k.provider)"
      "       ELSE (SELECT COALESCE(SUM(amount_minor), 0) FROM payments p WHERE p.exposed"
      "             AND p.risk_taken AND p.provider = k.provider AND p.currency = k.currency) END"
      " FROM risk_caps k JOIN risk_room r USING (provider, currency)"
      " GROUP BY k.provider, k.currency, k.cap, k.debt ORDER BY k.provider, k.currency");
  bool agree = true;
  for (int row = 0; row < r.rows(); ++row)
    if (r.integer(row, 2) != r.integer(row, 3)) {
      MESSAGE("key " << r.text(row, 0) << "/'" << r.text(row, 1) << "': room and debt account for "
                     << r.integer(row, 2) << ", exposed " << r.integer(row, 3));
      agree = false;
    }
  return agree;
}

}  // namespace

TEST_CASE("risk caps on PostgreSQL: four nodes claiming at once never take the exposure over a cap") {
  auto db = test::postgres_database_or_skip();
  if (!db) return;
  prepare_database(db->url(), t0);
  Connection setup(db->url());
  setup.exec_script(exposure_audit);
  // 120 payments of 2.00 to 9.00 EUR, and one of 50.00: larger than the amount cap, it may go
  // only while nothing else of EUR is exposed.
  SeededRandom rng(11);
  setup.exec("BEGIN");
  for (int i = 0; i < 120; ++i)
    record_intake(setup, test::intake_request("op-" + std::to_string(i), 200 + 100 * (i % 8)), t0, rng);
  record_intake(setup, test::intake_request("op-large", 5'000), t0, rng);
  setup.exec("COMMIT");

  const RiskCap cap{6, 4'000};
  const std::map<std::string, RiskCap> caps{{"sim", cap}};
  Contract contract;
  contract.max_attempts = 1'000;
  contract.initial_backoff = Millis{100};
  contract.max_backoff = Millis{400};
  contract.give_up_after = std::chrono::hours(2);
  contract.lease = Millis{30'000};
  const std::map<std::string, Contract> contracts{{"sim", contract}};

  // Thousands of state changes: their info lines would bury the test's output.
  struct QuietLog {
    log::Level was = log::level();
    QuietLog() { log::set_level(log::Level::warn); }
    ~QuietLog() { log::set_level(was); }
  } quiet;
  std::vector<std::unique_ptr<PgStore>> nodes;
  for (int i = 0; i < 4; ++i) nodes.push_back(std::make_unique<PgStore>(PgStoreOptions{.url = db->url(), .pool_size = 2, .threads = 1}));
  std::atomic<bool> stop{false};
  Failures failures;
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] {
      run_node(*nodes[i], "node-" + std::to_string(i), contracts, caps, 100 + i, start, stop, failures);
    });
  // Until every payment is settled: the caps hold submits back, never for ever.
  const bool settled = test::eventually(
      [&] {
        return setup.exec("SELECT COUNT(*) FROM payments WHERE state IN ('PROCESSING', 'UNKNOWN')")
                   .integer(0, 0) == 0;
      },
      60s);
  stop = true;
  for (auto& t : threads) t.join();
  nodes.clear();

  CHECK(settled);
  for (const auto& f : failures.first()) MESSAGE(f);
  CHECK(failures.count() == 0);
  const Result audit = setup.exec(
      "SELECT COUNT(*), COALESCE(MAX(count), 0), COALESCE(MAX(amount_minor) FILTER (WHERE count > 1), 0),"
      " COUNT(*) FILTER (WHERE count > $1 OR (amount_minor > $2 AND count > 1))"
      " FROM exposure_audit",
      {cap.max_unknown_count, cap.max_unknown_amount_minor});
  const std::int64_t commits = audit.integer(0, 0);
  MESSAGE("commits recounted: " << commits << ", most exposed: " << audit.integer(0, 1)
                                << " payments, " << audit.integer(0, 2) << " minor units");
  CHECK(commits > 200);
  // The race reached a cap (submits had to wait) and never passed one.
  CHECK((audit.integer(0, 1) == cap.max_unknown_count || audit.integer(0, 2) > cap.max_unknown_amount_minor - 900));
  CHECK(audit.integer(0, 3) == 0);
  CHECK(audit.integer(0, 1) <= cap.max_unknown_count);
  CHECK(audit.integer(0, 2) <= cap.max_unknown_amount_minor);

  // What the room accounts for is what is exposed, key by key, and every exposed payment was
  // taken in.
  CHECK(room_accounts_for_exposure(setup));
  CHECK(setup.exec("SELECT COUNT(*) FROM payments WHERE exposed AND NOT risk_taken").integer(0, 0) == 0);
}

}  // namespace payorch::store::pg

namespace payorch::store::pg {

TEST_CASE("risk caps on PostgreSQL: submits in flight before the room existed give it back when they end") {
  auto db = test::postgres_database_or_skip();
  if (!db) return;
  Connection c(db->url());
  std::vector<Migration> before;
  for (const auto& m : embedded_migrations())
    if (m.version < 7) before.push_back(m);
  migrate(c, before, t0);
  SeededRandom rng(3);
  c.exec("BEGIN");
  for (int i = 0; i < 3; ++i) record_intake(c, test::intake_request("op-" + std::to_string(i), 400), t0, rng);
  c.exec("COMMIT");
  // Three submits in flight, their leases held for a while.
  c.exec("UPDATE payments SET attempt_count = 1, last_submit_started_at = $1, next_attempt_at = $2,"
         " lease_owner = 'node-old', lease_expires_at = $2",
         {t0 + 1, t0 + 60'000});
  migrate(c, embedded_migrations(), t0);

  // Per key: {cap, room, debt}.
  const auto keys = [&] {
    const Result r = c.exec(
        "SELECT k.cap, SUM(r.room), k.debt FROM risk_caps k JOIN risk_room r USING (provider, currency)"
        " GROUP BY k.currency, k.cap, k.debt ORDER BY k.currency");
    std::vector<std::vector<std::int64_t>> out;
    for (int row = 0; row < r.rows(); ++row) out.push_back({r.integer(row, 0), r.integer(row, 1), r.integer(row, 2)});
    return out;
  };
  using Keys = std::vector<std::vector<std::int64_t>>;
  CHECK(keys() == Keys{{0, 0, 3}, {0, 0, 1'200}});  // taken in, under no cap until a node writes one
  CHECK(c.exec("SELECT COUNT(*) FROM payments WHERE risk_taken").integer(0, 0) == 3);

  // The first capped submit writes the cap: one more fits under a count cap of 4, a second not.
  c.exec("BEGIN");
  for (int i = 3; i < 5; ++i) record_intake(c, test::intake_request("op-" + std::to_string(i), 400), t0, rng);
  const std::vector<Lease> claimed = claim_due(c, "node-a", t0 + 2, Millis{30'000}, {{"sim", 10}}, 10);
  REQUIRE(claimed.size() == 2);
  std::vector<CallStart> starts;
  for (const auto& l : claimed)
    starts.push_back(CallStart{l.payment_id, l.fence, true, RiskCap{4, 100'000}, "sim", "EUR", 400});
  const auto started = start_calls(c, starts, t0 + 2, t0 + 3);
  c.exec("COMMIT");
  REQUIRE(started.size() == 2);
  CHECK(started[0].result == CallStartResult::started);
  CHECK(started[1].result == CallStartResult::held);
  CHECK(keys() == Keys{{4, 0, 0}, {100'000, 98'400, 0}});

  // A submit from before the migration ends: its units go back.
  c.exec("UPDATE payments SET last_submit_ended_at = $1 WHERE lease_owner = 'node-old'"
         " AND id = (SELECT MIN(id) FROM payments WHERE lease_owner = 'node-old')",
         {t0 + 4});
  CHECK(keys() == Keys{{4, 1, 0}, {100'000, 98'800, 0}});
  CHECK(c.exec("SELECT COUNT(*) FROM payments WHERE risk_taken").integer(0, 0) == 3);
  CHECK(c.exec("SELECT COUNT(*) FROM payments WHERE exposed").integer(0, 0) == 3);
  CHECK(room_accounts_for_exposure(c));
}

TEST_CASE("risk caps on PostgreSQL: a payment still taken in is not taken again by another start") {
  auto db = test::postgres_database_or_skip();
  if (!db) return;
  prepare_database(db->url(), t0);
  SeededRandom rng(5);
  Connection c(db->url());
  c.exec("BEGIN");
  record_intake(c, test::intake_request("op-once", 500), t0, rng);
  c.exec("COMMIT");
  const auto room = [&](const char* currency) {
    return c.exec("SELECT SUM(room) FROM risk_room WHERE currency = $1", {std::string(currency)}).integer(0, 0);
  };
  c.exec("BEGIN");
  const std::vector<Lease> claimed = claim_due(c, "node-a", t0 + 1, Millis{30'000}, {{"sim", 1}}, 1);
  REQUIRE(claimed.size() == 1);
  const CallStart start{claimed[0].payment_id, claimed[0].fence, true, RiskCap{2, 10'000}, "sim", "EUR", 500};
  REQUIRE(start_calls(c, {start}, t0 + 1, t0 + 2).at(0).result == CallStartResult::started);
  CHECK(room("") == 1);
  CHECK(room("EUR") == 9'500);
  // Started again while it is still exposed (a second call of the same lease): counted once.
  REQUIRE(start_calls(c, {start}, t0 + 3, t0 + 4).at(0).result == CallStartResult::started);
  CHECK(room("") == 1);
  CHECK(room("EUR") == 9'500);
  c.exec("COMMIT");
  // It leaves the exposure: everything is room again.
  REQUIRE(undo_call_started(c, claimed[0].payment_id, claimed[0].fence, CallMarks{}, t0 + 5));
  CHECK(room("") == 2);
  CHECK(room("EUR") == 10'000);
  CHECK(room_accounts_for_exposure(c));
}

TEST_CASE("claims on PostgreSQL: two nodes' rounds for one provider run at once, and the caps hold across them") {
  auto db = test::postgres_database_or_skip();
  if (!db) return;
  prepare_database(db->url(), t0);
  SeededRandom rng(7);
  Connection setup(db->url());
  setup.exec("BEGIN");
  for (int i = 0; i < 4; ++i) record_intake(setup, test::intake_request("op-" + std::to_string(i), 500), t0, rng);
  setup.exec("COMMIT");
  const RiskCap cap{2, 100'000};
  // The caps written beforehand: writing one holds every row of its key until it commits.
  setup.exec("SELECT payorch_risk_resize('sim', '', 2), payorch_risk_resize('sim', 'EUR', 100000)");
  const std::vector<ClaimQuota> quotas{{"sim", 10}};
  const auto start_all = [&](Connection& conn, const std::vector<Lease>& leases, UnixMillis now) {
    std::vector<CallStart> starts;
    for (const auto& l : leases) starts.push_back(CallStart{l.payment_id, l.fence, true, cap, "sim", "EUR", 500});
    return start_calls(conn, starts, now, now + 1'000);
  };

  Connection a(db->url());
  Connection b(db->url());
  a.exec("BEGIN");
  const std::vector<Lease> by_a = claim_due(a, "node-a", t0 + 1, Millis{30'000}, quotas, 1);
  REQUIRE(by_a.size() == 1);
  REQUIRE(start_all(a, by_a, t0 + 1).at(0).result == CallStartResult::started);
  // A's round is still open. B's neither waits for it (it would fail on the lock timeout) nor
  // claims A's payment, and of its three submits one fits beside A's under the count cap of 2.
  b.exec("BEGIN");
  b.exec("SET LOCAL lock_timeout = '2s'");
  const std::vector<Lease> by_b = claim_due(b, "node-b", t0 + 2, Millis{30'000}, quotas, 10);
  REQUIRE(by_b.size() == 3);
  for (const auto& l : by_b) CHECK(l.payment_id != by_a[0].payment_id);
  const auto started_b = start_all(b, by_b, t0 + 2);
  const auto count = [&](CallStartResult want) {
    return std::count_if(started_b.begin(), started_b.end(), [&](const StartedCall& s) { return s.result == want; });
  };
  CHECK(count(CallStartResult::started) == 1);
  CHECK(count(CallStartResult::held) == 2);
  b.exec("COMMIT");
  a.exec("COMMIT");
  CHECK(setup.exec("SELECT COUNT(*) FROM payments WHERE exposed").integer(0, 0) == 2);
  CHECK(room_accounts_for_exposure(setup));
}

}  // namespace payorch::store::pg
