#include "support/postgres_probe.h"

#include <libpq-fe.h>

#include <memory>
#include <stdexcept>

namespace payorch::test {
namespace {

using ResultPtr = std::unique_ptr<PGresult, decltype(&PQclear)>;

[[noreturn]] void fail(PGconn* conn, const PGresult* r, std::string_view sql) {
  const char* message = r != nullptr ? PQresultErrorMessage(r) : "";
  if (message == nullptr || *message == '\0') message = PQerrorMessage(conn);
  throw std::runtime_error("postgres: " + std::string(message) + " in: " + std::string(sql));
}

}  // namespace

PostgresProbe::PostgresProbe(const std::string& url) : conn_(url) {}

std::vector<SqlRow> PostgresProbe::query(std::string_view sql, const std::vector<std::string>& params) {
  std::vector<const char*> values;
  for (const std::string& p : params) values.push_back(p.c_str());
  const std::string text(sql);
  // Column names are read from the result (PQfname), which pg::Result does not expose.
  ResultPtr r(PQexecParams(conn_.handle(), text.c_str(), static_cast<int>(values.size()), nullptr,
                           values.data(), nullptr, nullptr, 0),
              &PQclear);
  const ExecStatusType status = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
  if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) fail(conn_.handle(), r.get(), sql);
  std::vector<SqlRow> rows;
  for (int i = 0; i < PQntuples(r.get()); ++i) {
    SqlRow row;
    for (int c = 0; c < PQnfields(r.get()); ++c) {
      std::optional<std::string> value;
      if (PQgetisnull(r.get(), i, c) == 0)
        value.emplace(PQgetvalue(r.get(), i, c), static_cast<std::size_t>(PQgetlength(r.get(), i, c)));
      row[PQfname(r.get(), c)] = std::move(value);
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::int64_t PostgresProbe::count(std::string_view sql, const std::vector<std::string>& params) {
  const std::vector<SqlRow> rows = query(sql, params);
  if (rows.size() != 1 || rows.front().empty() || !rows.front().begin()->second)
    throw std::runtime_error("postgres: not one non-NULL value from: " + std::string(sql));
  return std::stoll(*rows.front().begin()->second);
}

void PostgresProbe::exec(const std::string& sql) { conn_.exec_script(sql); }

}  // namespace payorch::test
