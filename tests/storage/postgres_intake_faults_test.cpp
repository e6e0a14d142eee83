// Storage faults under intake on PostgreSQL (docs/contract.md §2, docs/postgres.md): POST
// /v1/payments through the real HTTP stack while the daemon's connection to the server is cut
// at its N-th statement, for every N the request sends, before the statement or after the
// server answered it. The answer is 2xx only if the payment and its payment.created event are
// committed, otherwise 503 with nothing recorded, except where the cut dropped the answer to a
// COMMIT the server carried out (an unknown commit): then the payment is there whole, and the
// retry with the same key is a replay. Either way the retry gives exactly one payment. An intake
// whose key was used before is a replay or a 503 wherever it is cut, never a second payment.
#include <doctest/doctest.h>

#include <future>
#include <vector>

#include "storage/pg_fault_loop.h"
#include "support/payorch_api.h"

using namespace payorch;
using namespace payorch::test;

namespace {

constexpr const char* payment_of_operation =
    "SELECT id FROM payments WHERE tenant_id = 'acme' AND operation_type = 'payment' AND operation_id = $1";
constexpr const char* created_events_of_operation =
    "SELECT count(*) FROM outbox o JOIN payments p ON p.id = o.payment_id "
    "WHERE p.tenant_id = 'acme' AND p.operation_id = $1 AND o.type = 'payment.created'";

// The payment of `req` is in `db` whole (row + one payment.created event) or not at all;
// returns its id ("" when absent).
std::string whole_or_absent(PostgresProbe& db, const PaymentRequest& req) {
  const std::string id = value_of(db, payment_of_operation, {req.operation_id});
  CHECK(db.count(created_events_of_operation, {req.operation_id}) == (id.empty() ? 0 : 1));
  return id;
}

struct IntakeCase {
  std::size_t clients = 1;
  // The keys were used before (by a daemon beside this one, as another node or before a
  // restart would): the intakes under test are replays.
  bool replay = false;
  // The daemon's pool_size; 0: two for one client, four for several.
  std::size_t pool_size = 0;
};

// `clients` intakes (different keys) sent at once while armed. One runs on a pool of two
// connections (one job thread); several on a pool of four, whose two job threads run them in
// transactions of their own side by side, the second on a connection it opens.
Answer intake_iteration(CutIteration& it, LogCapture& logs, IntakeCase c) {
  logs.clear();
  const std::size_t clients = c.clients;
  const config::Config cfg =
      postgres_storage_test_config(it.dir, it.url, c.pool_size ? c.pool_size : clients == 1 ? 2 : 4);
  PostgresProbe db(it.direct_url);
  std::vector<PaymentRequest> reqs(clients);
  for (auto& req : reqs) req.operation_id = unique_operation_id("pg-storage-fault");
  std::vector<std::string> created(clients);  // the ids of the earlier intakes, when replayed
  if (c.replay) {
    const config::Config beside_cfg = postgres_storage_test_config(it.dir, it.direct_url, 2);
    InProcessDaemon beside(beside_cfg);
    for (std::size_t i = 0; i < clients; ++i) {
      const HttpResponse r = post_payment(beside.port(), tenant_token, reqs[i]);
      REQUIRE_MESSAGE(r.status == 201, r.describe());
      created[i] = json_string(r.json(), "id");
    }
  }
  const auto baseline = table_counts(db);

  InProcessDaemon daemon(cfg);
  if (it.pool == Pool::warm) daemon.warm_up();
  std::vector<HttpResponse> first(clients);
  it.arm();
  if (clients == 1) {
    first[0] = post_payment(daemon.port(), tenant_token, reqs[0]);
  } else {
    std::vector<std::future<HttpResponse>> sent;
    for (const auto& req : reqs)
      sent.push_back(std::async(std::launch::async,
                                [&daemon, &req] { return post_payment(daemon.port(), tenant_token, req); }));
    for (std::size_t i = 0; i < clients; ++i) first[i] = sent[i].get();
  }
  it.disarm();
  INFO("cut: " << (it.cut_hit() ? it.cut_statement() : std::string("none")));
  INFO("log tail:\n" << logs.tail());

  // What the database holds: each payment whole or absent; whole if answered 2xx; present
  // after a 503 only where the cut left a COMMIT's outcome unknown.
  std::vector<Answer> answers;
  std::vector<std::string> stored(clients);
  for (std::size_t i = 0; i < clients; ++i) {
    INFO("client " << i << ": " << first[i].describe());
    answers.push_back(intake_answer(first[i]));
    CHECK_MESSAGE(answers[i] != Answer::other, "neither 2xx-after-commit nor 503");
    stored[i] = whole_or_absent(db, reqs[i]);
    if (answers[i] == Answer::committed) CHECK(stored[i] == json_string(first[i].json(), "id"));
    if (c.replay) {
      CHECK_MESSAGE(first[i].status != 201, "a second payment for a key already used");
      CHECK(stored[i] == created[i]);
    } else if (answers[i] == Answer::refused && !stored[i].empty()) {
      CHECK_MESSAGE(it.commit_outcome_unknown(), "a refused intake was recorded");
    }
  }
  CHECK(figure_differences(it.direct_url) == "");  // invariant 8: kept figures = recount
  {
    auto expected = baseline;
    for (std::size_t i = 0; i < clients; ++i) {
      if (c.replay || stored[i].empty()) continue;
      ++expected["payments"];
      ++expected["outbox"];
    }
    CHECK(table_counts(db) == expected);
  }

  // Each client retries with the same key; the same daemon, no restart.
  std::vector<std::string> retry_ids(clients);
  for (std::size_t i = 0; i < clients; ++i) {
    const HttpResponse retry =
        retried_while_refused([&] { return post_payment(daemon.port(), tenant_token, reqs[i]); },
                              [](const HttpResponse& r) { return r.status == 503; });
    INFO("client " << i << " retry answer: " << retry.describe());
    if (!stored[i].empty()) {
      // Committed, whether the first answer said so or the connection died during COMMIT.
      CHECK(retry.status == 200);
      CHECK(retry.header("Idempotent-Replayed") == "true");
      if (!c.replay && answers[i] == Answer::refused && retry.status == 200)
        ++it.report->replays_after_unknown_commit;
    } else {
      CHECK(retry.status == 201);
    }
    if (retry.status == 200 || retry.status == 201) {
      CHECK(view_mismatch(retry.json(), reqs[i]) == "");
      retry_ids[i] = json_string(retry.json(), "id");
    }
    if (!stored[i].empty()) CHECK(retry_ids[i] == stored[i]);
  }
  // Ready again on its own: the retries' commits showed the store takes writes.
  CHECK(http_request(daemon.port(), "GET", "/readyz").status == 200);
  daemon.stop();

  // Exactly one payment per key, whole; nothing else written.
  bool sound = true;
  const std::string figures = figure_differences(it.direct_url);
  CHECK(figures == "");
  sound = sound && figures.empty();
  auto expected = baseline;
  for (std::size_t i = 0; i < clients; ++i) {
    const std::string id = whole_or_absent(db, reqs[i]);
    CHECK(!retry_ids[i].empty());
    CHECK(id == retry_ids[i]);
    sound = sound && !id.empty() && id == retry_ids[i];
    if (c.replay) continue;
    ++expected["payments"];
    ++expected["outbox"];
  }
  const bool counts_ok = table_counts(db) == expected;
  CHECK(counts_ok);
  if (sound && counts_ok) ++it.report->checks;
  // The iteration's answer: refused if any intake was.
  for (Answer a : answers)
    if (a != Answer::committed) return a;
  return Answer::committed;
}

void intake_loop(CutMode mode, Pool pool, IntakeCase c = {}) {
  LogCapture logs;
  const std::string name = c.replay           ? "PostgreSQL intake replayed (a key used before)"
                           : c.clients == 1   ? "PostgreSQL intake POST /v1/payments"
                                              : "PostgreSQL intake, " + std::to_string(c.clients) + " clients at once" +
                                                    (c.pool_size == 2 ? " on one write connection" : "");
  PostgresDatabase* db = loop_database("intake");
  if (!db) return;
  const CutReport report = run_cut_loop(name, mode, pool, *db, [&logs, c](CutIteration& it) {
    return intake_iteration(it, logs, c);
  });
  CHECK(report.iterations > 1);
  CHECK(report.cuts == report.iterations - 1);
  CHECK(report.checks == report.iterations);
  // Several clients on one write connection: how the intakes fall into batches, and so how many
  // statements an iteration sends, changes from run to run, and the loop may end before a cut
  // reaches a COMMIT; the database checks above hold at every cut either way.
  if (c.pool_size != 0) return;
  CHECK(report.refused > 0);
  // A cold pool has no connection to run a job again on: every cut is a 503.
  if (pool == Pool::cold) CHECK(report.refused == report.cuts);
  // Cut after the server committed: the client saw a broken connection and its retry replayed.
  // One client's iterations always reach a COMMIT; several clients' intakes may share one
  // transaction in one iteration and not in the next, so their cuts may all fall before one.
  const auto commit_cuts = report.cuts_by_statement.find("COMMIT");
  const bool commit_cut = commit_cuts != report.cuts_by_statement.end() && commit_cuts->second > 0;
  if (mode == CutMode::after_reply && !c.replay && (c.clients == 1 || commit_cut))
    CHECK(report.replays_after_unknown_commit > 0);
}

}  // namespace

TEST_CASE("PostgreSQL: intake with the connection cut before each statement: 2xx only after commit") {
  for (Pool pool : {Pool::warm, Pool::cold}) {
    CAPTURE(to_string(pool));
    intake_loop(CutMode::before, pool);
  }
}

TEST_CASE("PostgreSQL: intake with the connection cut after each statement's answer: an unknown COMMIT is replayed") {
  for (Pool pool : {Pool::warm, Pool::cold}) {
    CAPTURE(to_string(pool));
    intake_loop(CutMode::after_reply, pool);
  }
}

TEST_CASE("PostgreSQL: three intakes at once, the connection cut at each statement in turn") {
  for (CutMode mode : {CutMode::before, CutMode::after_reply}) {
    CAPTURE(to_string(mode));
    intake_loop(mode, Pool::warm, {.clients = 3});
  }
}

// One write connection: the intakes that arrive while it runs the first share the next
// transaction (group commit), so the cut falls between, inside and after the savepoints of a
// batch, and on its COMMIT. A batch whose COMMIT is lost answers each of its intakes 503, and
// each retry replays whatever did commit: a job lost or half-written in a batch shows here as
// a payment without its event, a 2xx without its row, or a second payment for a key.
TEST_CASE("PostgreSQL: six intakes at once on one write connection, the connection cut at each statement in turn") {
  for (CutMode mode : {CutMode::before, CutMode::after_reply}) {
    CAPTURE(to_string(mode));
    intake_loop(mode, Pool::warm, {.clients = 6, .pool_size = 2});
  }
}

TEST_CASE("PostgreSQL: a replayed intake with the connection cut at each statement: 200 replay or 503, one payment") {
  for (CutMode mode : {CutMode::before, CutMode::after_reply}) {
    for (Pool pool : {Pool::warm, Pool::cold}) {
      CAPTURE(to_string(mode));
      CAPTURE(to_string(pool));
      intake_loop(mode, pool, {.replay = true});
    }
  }
}
