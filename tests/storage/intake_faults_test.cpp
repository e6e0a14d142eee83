// Storage faults under intake (docs/contract.md §2): POST /v1/payments through the real HTTP stack while the
// VFS fails the N-th I/O operation, for every N the request performs. The answer is 2xx only if
// the payment and its payment.created event are committed, otherwise 503 with nothing recorded;
// the retry with the same key then gives exactly one payment, and the file stays sound.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <future>
#include <thread>
#include <vector>

#include "storage/fault_loop.h"
#include "store/database.h"
#include "support/payorch_api.h"

using namespace payorch;
using namespace payorch::test;

namespace {

constexpr const char* payment_of_operation =
    "SELECT id FROM payments WHERE tenant_id = 'acme' AND operation_type = 'payment' AND operation_id = ?";
constexpr const char* created_events_of_operation =
    "SELECT count(*) FROM outbox o JOIN payments p ON p.id = o.payment_id "
    "WHERE p.tenant_id = 'acme' AND p.operation_id = ? AND o.type = 'payment.created'";

// Holds the Writer inside a job until release(), so that requests sent meanwhile queue up and
// then share one group-commit transaction.
class WriterGate {
public:
  explicit WriterGate(InProcessDaemon& daemon) {
    auto opened = released_;
    daemon.writer().submit(
        [this, opened](store::Db&) {
          entered_ = true;
          opened.wait();
        },
        [](store::WriteStatus, const std::string&) {});
    wait_for([this] { return entered_.load(); });
  }
  ~WriterGate() { release(); }
  void release() {
    if (!done_) gate_.set_value();
    done_ = true;
  }
  static void wait_for(const std::function<bool()>& ready) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!ready() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    REQUIRE(ready());
  }

private:
  std::promise<void> gate_;
  std::shared_future<void> released_ = gate_.get_future().share();
  std::atomic<bool> entered_{false};
  bool done_ = false;
};

// The payment of `req` is in `db` whole (row + one payment.created event) or not at all;
// returns its id ("" when absent).
std::string whole_or_absent(PlainDb& db, const PaymentRequest& req) {
  const std::string id = db.text(payment_of_operation, {req.operation_id});
  CHECK(db.count(created_events_of_operation, {req.operation_id}) == (id.empty() ? 0 : 1));
  return id;
}

// `clients` intakes (different keys) sent while armed; with more than one, their jobs share one
// group-commit transaction.
Answer intake_iteration(Iteration& it, LogCapture& logs, std::size_t clients) {
  logs.clear();
  const config::Config cfg = storage_test_config(it.db_path);
  std::map<std::string, std::int64_t> baseline;
  {
    PlainDb db(it.db_path);
    baseline = db.table_counts();
  }
  std::vector<PaymentRequest> reqs(clients);
  for (auto& req : reqs) req.operation_id = unique_operation_id("storage-fault");

  InProcessDaemon daemon(cfg);
  daemon.warm_up();
  std::vector<HttpResponse> first(clients);
  if (clients == 1) {
    it.arm();
    first[0] = post_payment(daemon.port(), tenant_token, reqs[0]);
  } else {
    WriterGate gate(daemon);
    it.arm();
    std::vector<std::future<HttpResponse>> sent;
    for (const auto& req : reqs)
      sent.push_back(std::async(std::launch::async,
                                [&daemon, &req] { return post_payment(daemon.port(), tenant_token, req); }));
    WriterGate::wait_for([&] { return daemon.writer().queued() == clients; });
    gate.release();
    for (std::size_t i = 0; i < clients; ++i) first[i] = sent[i].get();
  }
  std::vector<Answer> answers;
  for (const auto& r : first) answers.push_back(intake_answer(r));
  INFO("first answer: " << first[0].describe());
  if (it.persistent && it.fault_hit() && answers[0] == Answer::refused) {
    // The client retries while the disk is still dead or full.
    const HttpResponse again = post_payment(daemon.port(), tenant_token, reqs[0]);
    INFO("retry while failing: " << again.describe());
    CHECK(intake_answer(again) == Answer::refused);
  }
  it.disarm();
  INFO("log tail:\n" << logs.tail());
  for (std::size_t i = 0; i < clients; ++i) {
    INFO("client " << i << ": " << first[i].describe());
    CHECK_MESSAGE(answers[i] != Answer::other, "neither 2xx-after-commit nor 503");
    // One transaction: all of the batch committed or none of it.
    CHECK(answers[i] == answers[0]);
  }
  std::vector<std::string> first_ids(clients);
  for (std::size_t i = 0; i < clients; ++i)
    if (answers[i] == Answer::committed) first_ids[i] = json_string(first[i].json(), "id");

  // A power loss now: each intake is in the file whole or not at all, and whole if answered 2xx.
  {
    const std::string image = it.dir + "/crash.db";
    copy_crash_image(it.db_path, image);
    PlainDb db(image);
    CHECK(db.integrity_check() == "ok");
    CHECK(db.exposure_differences() == "");  // invariant 8: kept exposure = recount
    for (std::size_t i = 0; i < clients; ++i) {
      const std::string id = whole_or_absent(db, reqs[i]);
      if (answers[i] == Answer::committed) CHECK(id == first_ids[i]);
      if (answers[i] == Answer::refused && !id.empty()) ++it.report->crash_images_with_refused_work;
    }
    ++it.report->crash_images;
  }

  // What the daemon answered is what the file holds.
  {
    PlainDb db(it.db_path);
    for (std::size_t i = 0; i < clients; ++i) CHECK(whole_or_absent(db, reqs[i]) == first_ids[i]);
    if (answers[0] == Answer::refused) CHECK(db.table_counts() == baseline);
  }

  // Each client retries with the same key; the same Writer, no restart.
  std::vector<std::string> retry_ids(clients);
  for (std::size_t i = 0; i < clients; ++i) {
    const HttpResponse retry = post_payment(daemon.port(), tenant_token, reqs[i]);
    INFO("retry answer: " << retry.describe());
    if (answers[i] == Answer::committed) {
      CHECK(retry.status == 200);
      CHECK(retry.header("Idempotent-Replayed") == "true");
    } else {
      CHECK(retry.status == 201);
    }
    if (retry.status == 200 || retry.status == 201) {
      CHECK(view_mismatch(retry.json(), reqs[i]) == "");
      retry_ids[i] = json_string(retry.json(), "id");
    }
    if (answers[i] == Answer::committed) CHECK(retry_ids[i] == first_ids[i]);
  }
  daemon.stop();

  PlainDb db(it.db_path);
  const std::string integrity = db.integrity_check();
  const std::string foreign_keys = db.foreign_key_check();
  CHECK(integrity == "ok");
  CHECK(foreign_keys == "");
  CHECK(db.exposure_differences() == "");  // invariant 8: kept exposure = recount
  if (integrity == "ok" && foreign_keys.empty()) ++it.report->integrity_checks;
  auto expected = baseline;
  for (std::size_t i = 0; i < clients; ++i) {
    CHECK(whole_or_absent(db, reqs[i]) == retry_ids[i]);
    CHECK(!retry_ids[i].empty());
    ++expected["payments"];
    ++expected["outbox"];
  }
  CHECK(db.table_counts() == expected);
  return answers[0];
}

struct IntakeTemplate {
  IntakeTemplate() {
    FaultyVfs::install();
    dir = storage_temp_dir("payorch-storage-template");
    path = dir + "/template.db";
    store::prepare_database(path, SystemClock().now_ms());
    REQUIRE_FALSE(std::filesystem::exists(path + "-wal"));
  }
  ~IntakeTemplate() { std::filesystem::remove_all(dir); }
  std::string dir, path;
};

void intake_loop(FaultMode mode, std::size_t clients = 1) {
  IntakeTemplate tmpl;
  LogCapture logs;
  const std::string name = clients == 1 ? "intake POST /v1/payments"
                                        : "intake, " + std::to_string(clients) + " clients in one group commit";
  const LoopReport report = run_fault_loop(
      name, mode, tmpl.path, [&logs, clients](Iteration& it) { return intake_iteration(it, logs, clients); });
  CHECK(report.iterations > 1);
  CHECK(report.refused > 0);
  CHECK(report.integrity_checks == report.iterations);
}

}  // namespace

TEST_CASE("intake under a transient I/O error at every operation: 2xx only after commit") {
  intake_loop(FaultMode::transient);
}

TEST_CASE("intake on a disk that dies at every operation: 503, nothing recorded, then recovery") {
  intake_loop(FaultMode::dead_disk);
}

TEST_CASE("intake on a disk that fills at every write: 503, nothing recorded, then recovery") {
  intake_loop(FaultMode::disk_full);
}

TEST_CASE("two intakes sharing one group commit: both committed or both 503, at every fault") {
  for (FaultMode mode : {FaultMode::transient, FaultMode::dead_disk, FaultMode::disk_full}) {
    CAPTURE(to_string(mode));
    intake_loop(mode, 2);
  }
}
