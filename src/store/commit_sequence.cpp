#include "store/commit_sequence.h"

namespace payorch::store {

std::uint64_t read_commit_sequence(Db& db) {
  auto st = db.prepare("SELECT seq FROM commit_sequence WHERE id = 1");
  if (!st.step()) throw SqliteError(SQLITE_CORRUPT, "the commit_sequence row is missing");
  return static_cast<std::uint64_t>(st.col_int(0));
}

std::uint64_t advance_commit_sequence(Db& db) {
  auto st = db.prepare("UPDATE commit_sequence SET seq = seq + 1 WHERE id = 1 RETURNING seq");
  if (!st.step()) throw SqliteError(SQLITE_CORRUPT, "the commit_sequence row is missing");
  const auto seq = static_cast<std::uint64_t>(st.col_int(0));
  st.run();  // finish the statement, so that the row is written before COMMIT
  return seq;
}

void touch_commit_sequence(Db& db) {
  db.prepare("UPDATE commit_sequence SET seq = seq WHERE id = 1").run();
}

}  // namespace payorch::store
