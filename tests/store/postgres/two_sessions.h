#pragma once
// Two sessions on one test database and a table t (id INT PRIMARY KEY, v INT NOT NULL) made
// afresh with rows (1, 0) … (rows, 0): the shape of every conflict the PostgreSQL tests provoke.
#include <string>

#include "store/postgres/connection.h"

namespace payorch::store::pg {

struct TwoSessions {
  explicit TwoSessions(const std::string& url, int rows = 1) : a(url), b(url) {
    a.exec("DROP TABLE IF EXISTS t");
    a.exec("CREATE TABLE t (id INT PRIMARY KEY, v INT NOT NULL)");
    a.exec("INSERT INTO t SELECT g, 0 FROM generate_series(1, $1) g", {rows});
  }
  // Row `id`'s v, read by b (outside a's transaction).
  int v(int id = 1) {
    return static_cast<int>(b.exec("SELECT v FROM t WHERE id = $1", {id}).integer(0, 0));
  }
  Connection a;
  Connection b;
};

}  // namespace payorch::store::pg
