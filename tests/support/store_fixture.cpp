#include "support/store_fixture.h"

#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include "core/digest.h"
#include "store/database.h"

namespace payorch::test {

TempDatabase::TempDatabase(const std::string& name, UnixMillis now) {
  std::string tmpl = "/tmp/payorch-" + name + "-XXXXXX";
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp " + tmpl + " failed");
  dir_ = tmpl;
  path_ = dir_ + "/" + name + ".db";
  store::prepare_database(path_, now);
  db = std::make_unique<store::Db>(path_, store::Db::Mode::read_write);
  store::configure_connection(*db, 2000);
}

TempDatabase::~TempDatabase() {
  db.reset();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

store::IntakeRequest intake_request(const std::string& operation_id, std::int64_t amount_minor,
                                    const std::string& currency) {
  store::IntakeRequest r;
  r.tenant_id = "acme";
  r.intent.operation_id = operation_id;
  r.intent.amount_minor = amount_minor;
  r.intent.currency = currency;
  r.intent.payee = "merchant-1";
  r.intent.source = "tok_ok";
  r.provider = "sim";
  r.request_digest = request_digest(r.intent);
  return r;
}

}  // namespace payorch::test
