#include "support/database_probe.h"

#include <cctype>

#include "support/daemon.h"

namespace payorch::test {

DatabaseProbe::DatabaseProbe(const Daemon& daemon, SqliteProbe::Mode mode) {
  if (daemon.database_url().empty())
    sqlite_.emplace(daemon.db_path(), mode);
  else
    pg_.emplace(daemon.database_url());
}

DatabaseProbe::DatabaseProbe(const std::string& sqlite_path, SqliteProbe::Mode mode) {
  sqlite_.emplace(sqlite_path, mode);
}

std::vector<SqlRow> DatabaseProbe::query(std::string_view sql, const std::vector<std::string>& params) {
  if (sqlite_) return sqlite_->query(sql, params);
  return pg_->query(postgres_placeholders(sql), params);
}

std::int64_t DatabaseProbe::count(std::string_view sql, const std::vector<std::string>& params) {
  if (sqlite_) return sqlite_->count(sql, params);
  return pg_->count(postgres_placeholders(sql), params);
}

void DatabaseProbe::exec(const std::string& sql) {
  if (sqlite_)
    sqlite_->exec(sql);
  else
    pg_->exec(sql);
}

std::string DatabaseProbe::integrity_check() {
  if (sqlite_) return sqlite_->integrity_check();
  pg_->exec("CREATE EXTENSION IF NOT EXISTS amcheck");
  std::string problems;
  for (const SqlRow& index : pg_->query(
           "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
           "JOIN pg_am a ON a.oid = c.relam JOIN pg_namespace n ON n.oid = c.relnamespace "
           "WHERE a.amname = 'btree' AND n.nspname = 'public' ORDER BY c.relname")) {
    const std::string name = index.at("relname").value_or("");
    try {
      pg_->query("SELECT bt_index_check($1::regclass, true)", {name});
    } catch (const std::exception& e) {
      problems += (problems.empty() ? "" : "\n") + name + ": " + e.what();
    }
  }
  return problems.empty() ? "ok" : problems;
}

std::string postgres_placeholders(std::string_view sql) {
  std::string out;
  int next = 0;
  bool quoted = false;
  for (std::size_t i = 0; i < sql.size(); ++i) {
    const char c = sql[i];
    if (c == '\'') quoted = !quoted;
    if (quoted || c != '?') {
      out += c;
      continue;
    }
    std::size_t digits = i + 1;
    while (digits < sql.size() && std::isdigit(static_cast<unsigned char>(sql[digits]))) ++digits;
    if (digits > i + 1) {
      out += '$';
      out.append(sql.substr(i + 1, digits - i - 1));
      i = digits - 1;
    } else {
      out += '$' + std::to_string(++next);
    }
  }
  return out;
}

}  // namespace payorch::test
