#include "daemon/check_exposure.h"

#include <cstdio>

#include "store/exposure.h"
#include "store/sqlite.h"

namespace payorch::daemon {

int check_exposure(const config::Config& cfg) {
  store::Db db(cfg.database.path, store::Db::Mode::read_only);
  db.exec("BEGIN");  // deferred: the first read fixes the snapshot both figures come from
  const auto kept = store::exposure(db);
  const auto differences = store::exposure_differences(db);
  db.exec("COMMIT");
  for (const auto& line : differences) std::printf("difference: %s\n", line.c_str());
  if (!differences.empty()) {
    std::fprintf(stderr, "%s: the kept exposure differs from the payments in %zu place(s)\n",
                 cfg.database.path.c_str(), differences.size());
    return 1;
  }
  for (const auto& r : kept)
    std::printf("%s %s: %lld payment(s), %lld minor units\n", r.provider.c_str(), r.currency.c_str(),
                static_cast<long long>(r.count), static_cast<long long>(r.amount_minor));
  std::printf("%s: exposure ok (%zu provider/currency row(s) exposed)\n", cfg.database.path.c_str(), kept.size());
  return 0;
}

}  // namespace payorch::daemon
