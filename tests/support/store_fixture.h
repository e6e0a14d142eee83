#pragma once
// A real database file for store-level tests: a fresh temp dir with a migrated payorch database
// and one read-write connection, removed at the end; and the sample intent, intake request and
// payment row the tests make payments with.
#include <cstdint>
#include <memory>
#include <string>

#include "core/clock.h"
#include "core/intent.h"
#include "core/state_machine.h"
#include "core/payment.h"
#include "store/cases.h"
#include "store/intake.h"
#include "store/sqlite.h"
#include "store/writer.h"

namespace payorch::test {

class TempDatabase {
public:
  // Only the migrated file: `db` stays empty, the test opens its own connections.
  struct FileOnly {};
  static constexpr FileOnly file_only{};

  // mkdtemp("/tmp/payorch-<name>-XXXXXX"), then the schema migrated at `now`, then `db` opened.
  TempDatabase(const std::string& name, UnixMillis now);
  TempDatabase(const std::string& name, UnixMillis now, FileOnly);
  ~TempDatabase();
  TempDatabase(const TempDatabase&) = delete;
  TempDatabase& operator=(const TempDatabase&) = delete;

  const std::string& dir() const { return dir_; }
  const std::string& path() const { return path_; }

  std::unique_ptr<store::Db> db;  // read-write, busy timeout 2 s

private:
  std::string dir_;
  std::string path_;
};

// 10.00 EUR to merchant-1 from tok_ok.
Intent sample_intent(const std::string& operation_id, std::int64_t amount_minor = 1000,
                     const std::string& currency = "EUR");

// An acme payment of sample_intent() through sim, with its digest.
store::IntakeRequest intake_request(const std::string& operation_id, std::int64_t amount_minor = 1000,
                                    const std::string& currency = "EUR");

// The row of a PROCESSING payment of sample_intent(`name`) by `tenant`, as store::insert_payment
// takes it: id pay_<name>, client_key ck_<name>, digest "sha256:<name>", due at `now`.
Payment sample_payment(const std::string& tenant, const std::string& name, UnixMillis now);

// The payment `request` creates, recorded at `now` in a transaction of its own on `db`; throws
// (failing the test) unless the intake created it. By operation id: intake_request(`operation_id`).
Payment created_payment(store::Db& db, const store::IntakeRequest& request, UnixMillis now, Random& rng);
Payment created_payment(store::Db& db, const std::string& operation_id, UnixMillis now, Random& rng);

// The payment `id` as stored on `db`; throws (failing the test) when there is none.
Payment stored_payment(store::Db& db, const std::string& id);

// The open reconciliation case of payment `payment_id` on `db`; throws (failing the test) when
// it has none.
store::ReconciliationCase stored_open_case(store::Db& db, const std::string& payment_id);

// The transition `trigger` makes from `from`; throws (failing the test) when the state machine
// has none, so a test never goes on with an empty one.
Transition legal_transition(PaymentState from, Trigger trigger);

// Submits `work` to a started writer and waits for its verdict.
store::WriteStatus run_job(store::Writer& writer, store::Writer::Work work);

}  // namespace payorch::test
