#include "support/store_fixture.h"

#include <future>
#include <memory>
#include <stdexcept>

#include "core/digest.h"
#include "store/database.h"
#include "store/payments.h"
#include "support/process.h"

namespace payorch::test {

TempDatabase::TempDatabase(const std::string& name, UnixMillis now, FileOnly)
    : dir_(make_temp_dir("payorch-" + name)), path_(dir_ + "/" + name + ".db") {
  store::prepare_database(path_, now);
}

TempDatabase::TempDatabase(const std::string& name, UnixMillis now)
    : TempDatabase(name, now, file_only) {
  db = std::make_unique<store::Db>(path_, store::Db::Mode::read_write);
  store::configure_connection(*db, 2000);
}

TempDatabase::~TempDatabase() {
  db.reset();
  remove_temp_dir(dir_);
}

Intent sample_intent(const std::string& operation_id, std::int64_t amount_minor,
                     const std::string& currency) {
  Intent intent;
  intent.operation_id = operation_id;
  intent.amount_minor = amount_minor;
  intent.currency = currency;
  intent.payee = "merchant-1";
  intent.source = "tok_ok";
  return intent;
}

store::IntakeRequest intake_request(const std::string& operation_id, std::int64_t amount_minor,
                                    const std::string& currency) {
  store::IntakeRequest r;
  r.tenant_id = "acme";
  r.intent = sample_intent(operation_id, amount_minor, currency);
  r.provider = "sim";
  r.request_digest = request_digest(r.intent);
  return r;
}

Payment sample_payment(const std::string& tenant, const std::string& name, UnixMillis now) {
  const Intent intent = sample_intent(name);
  Payment p;
  p.id = "pay_" + name;
  p.tenant_id = tenant;
  p.operation_type = intent.operation_type;
  p.operation_id = intent.operation_id;
  p.provider = "sim";
  p.client_key = "ck_" + name;
  p.request_digest = "sha256:" + name;
  p.amount_minor = intent.amount_minor;
  p.currency = intent.currency;
  p.payee = intent.payee;
  p.source = intent.source;
  p.next_attempt_at = now;
  p.created_at = now;
  p.updated_at = now;
  return p;
}

Payment created_payment(store::Db& db, const store::IntakeRequest& request, UnixMillis now, Random& rng) {
  store::Transaction tx(db);
  store::IntakeOutcome out = store::record_intake(db, request, now, rng);
  tx.commit();
  if (out.kind != store::IntakeOutcome::Kind::created)
    throw std::runtime_error("intake of " + request.intent.operation_id + " did not create a payment");
  return out.payment;
}

Payment created_payment(store::Db& db, const std::string& operation_id, UnixMillis now, Random& rng) {
  return created_payment(db, intake_request(operation_id), now, rng);
}

Payment stored_payment(store::Db& db, const std::string& id) {
  auto p = store::find_payment_by_id(db, id);
  if (!p) throw std::runtime_error("no payment " + id);
  return *p;
}

store::ReconciliationCase stored_open_case(store::Db& db, const std::string& payment_id) {
  auto c = store::find_open_case(db, payment_id);
  if (!c) throw std::runtime_error("payment " + payment_id + " has no open case");
  return *c;
}

Transition legal_transition(PaymentState from, Trigger trigger) {
  auto t = transition(from, trigger);
  if (!t)
    throw std::logic_error("no transition from " + std::string(to_string(from)) + " on " +
                           std::string(to_string(trigger)));
  return *t;
}

store::WriteStatus run_job(store::Writer& writer, store::Writer::Work work) {
  auto done = std::make_shared<std::promise<store::WriteStatus>>();
  auto verdict = done->get_future();
  writer.submit(std::move(work), [done](store::WriteStatus s, const std::string&) { done->set_value(s); });
  return verdict.get();
}

}  // namespace payorch::test
