#include "daemon/check_exposure.h"

#include <cstdio>

#include "daemon/serving_store.h"
#include "store/exposure.h"
#include "store/postgres/connection.h"
#include "store/postgres/figures.h"
#include "store/sqlite.h"

namespace payorch::daemon {
namespace {

struct Figures {
  std::vector<store::ExposureRow> kept;
  std::vector<std::string> differences;
};

// Both figures from one snapshot, so a transition committed between the two reads cannot show
// as a difference.
Figures read_figures(const config::Config& cfg) {
  if (cfg.database.driver == "postgres") {
    store::pg::Connection conn(cfg.database.url);
    conn.exec("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    Figures f{store::pg::exposure(conn), store::pg::exposure_differences(conn)};
    conn.exec("COMMIT");
    return f;
  }
  store::Db db(cfg.database.path, store::Db::Mode::read_only);
  db.exec("BEGIN");  // deferred: the first read fixes the snapshot both figures come from
  Figures f{store::exposure(db), store::exposure_differences(db)};
  db.exec("COMMIT");
  return f;
}

}  // namespace

int check_exposure(const config::Config& cfg) {
  const std::string where = database_where(cfg.database);
  const Figures f = read_figures(cfg);
  for (const auto& line : f.differences) std::printf("difference: %s\n", line.c_str());
  if (!f.differences.empty()) {
    std::fprintf(stderr, "%s: the kept exposure differs from the payments in %zu place(s)\n",
                 where.c_str(), f.differences.size());
    return 1;
  }
  for (const auto& r : f.kept)
    std::printf("%s %s: %lld payment(s), %lld minor units\n", r.provider.c_str(), r.currency.c_str(),
                static_cast<long long>(r.count), static_cast<long long>(r.amount_minor));
  std::printf("%s: exposure ok (%zu provider/currency row(s) exposed)\n", where.c_str(), f.kept.size());
  return 0;
}

}  // namespace payorch::daemon
