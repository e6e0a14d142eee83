#include "support/engine_checks.h"

#include <signal.h>
#include <sqlite3.h>

#include <boost/json/serialize.hpp>

#include <stdexcept>
#include <thread>

#include "support/payorch_api.h"

namespace payorch::test {
namespace {

// The state letter of /proc/<pid>/stat ('R', 'S', 'T' = stopped, ...), '?' if unreadable.
char process_state(pid_t pid) {
  const std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  const std::size_t close = stat.rfind(')');
  return close == std::string::npos || close + 2 >= stat.size() ? '?' : stat[close + 2];
}

}  // namespace

boost::json::value fetch_payment(std::uint16_t port, std::string_view token,
                                 std::string_view operation_id) {
  const HttpResponse r = get_payment(port, token, operation_id);
  if (r.status != 200) return nullptr;
  return r.json();
}

bool is_terminal_state(std::string_view state) {
  return state == "SUCCEEDED" || state == "FAILED_FINAL";
}

boost::json::value reconciliation_of(const boost::json::value& view) {
  const auto* o = view.if_object();
  if (!o) return nullptr;
  const auto* r = o->if_contains("reconciliation");
  return r && r->is_object() ? *r : boost::json::value(nullptr);
}

std::string failure_code_of(const boost::json::value& view) {
  const auto* o = view.if_object();
  const auto* f = o ? o->if_contains("failure") : nullptr;
  return f ? json_string(*f, "code") : "";
}

bool is_settled(const boost::json::value& view) {
  if (is_terminal_state(json_string(view, "state"))) return true;
  return json_string(reconciliation_of(view), "status") == "open";
}

namespace {

// Polls `fetch` every 50 ms until `done(view)` or `timeout` (wait_for_payment, wait_for_refund).
boost::json::value wait_for_view(const std::function<boost::json::value()>& fetch,
                                 const std::function<bool(const boost::json::value&)>& done,
                                 std::chrono::milliseconds timeout,
                                 std::vector<std::string>* states_seen) {
  boost::json::value last = nullptr;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    boost::json::value view = fetch();
    if (!view.is_null()) {
      last = view;
      const std::string state = json_string(view, "state");
      if (states_seen && (states_seen->empty() || states_seen->back() != state))
        states_seen->push_back(state);
      if (done(view)) return last;
    }
    if (std::chrono::steady_clock::now() >= deadline) return last;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace

boost::json::value wait_for_payment(std::uint16_t port, std::string_view token,
                                    std::string_view operation_id,
                                    const std::function<bool(const boost::json::value&)>& done,
                                    std::chrono::milliseconds timeout,
                                    std::vector<std::string>* states_seen) {
  return wait_for_view([&] { return fetch_payment(port, token, operation_id); }, done, timeout, states_seen);
}

boost::json::value fetch_refund(std::uint16_t port, std::string_view token, std::string_view operation_id) {
  const HttpResponse r = get_refund(port, token, operation_id);
  if (r.status != 200) return nullptr;
  return r.json();
}

boost::json::value wait_for_refund(std::uint16_t port, std::string_view token,
                                   std::string_view operation_id,
                                   const std::function<bool(const boost::json::value&)>& done,
                                   std::chrono::milliseconds timeout,
                                   std::vector<std::string>* states_seen) {
  return wait_for_view([&] { return fetch_refund(port, token, operation_id); }, done, timeout, states_seen);
}

boost::json::value wait_for_refund_state(std::uint16_t port, std::string_view token,
                                         std::string_view operation_id, std::string_view state,
                                         std::chrono::milliseconds timeout,
                                         std::vector<std::string>* states_seen) {
  return wait_for_refund(
      port, token, operation_id,
      [&](const boost::json::value& v) { return json_string(v, "state") == state; }, timeout, states_seen);
}

boost::json::value wait_for_state(std::uint16_t port, std::string_view token,
                                  std::string_view operation_id, std::string_view state,
                                  std::chrono::milliseconds timeout) {
  return wait_for_payment(
      port, token, operation_id,
      [&](const boost::json::value& v) { return json_string(v, "state") == state; }, timeout);
}

boost::json::value wait_for_case(std::uint16_t port, std::string_view token,
                                 std::string_view operation_id, std::chrono::milliseconds timeout) {
  return wait_for_payment(
      port, token, operation_id,
      [](const boost::json::value& v) { return !reconciliation_of(v).is_null(); }, timeout);
}

std::string refund_ledger_status(const VendorSim& sim, const boost::json::value& refund_view) {
  const auto rows = sim.refunds(json_string(refund_view, "client_key"));
  if (rows.size() != 1) return "refunds at the vendor: " + std::to_string(rows.size());
  return rows[0].at("status").value_or("?");
}

std::int64_t refunded_at_vendor(const VendorSim& sim, const std::string& charge_id) {
  std::int64_t sum = 0;
  for (const SqlRow& row : sim.refunds_of_charge(charge_id))
    if (row.at("status") == "succeeded") sum += std::stoll(row.at("amount_minor").value_or("0"));
  return sum;
}

std::string PayorchRecords::event_types(const std::string& payment_id) {
  std::string out;
  for (const SqlRow& row :
       db_.query("SELECT type FROM outbox WHERE payment_id = ? ORDER BY seq", {payment_id}))
    out += (out.empty() ? "" : ", ") + row.at("type").value_or("");
  return out;
}

std::int64_t PayorchRecords::count_events(const std::string& payment_id, std::string_view type) {
  return db_.count("SELECT count(*) FROM outbox WHERE payment_id = ? AND type = ?",
                   {payment_id, std::string(type)});
}

std::vector<SqlRow> PayorchRecords::cases(const std::string& payment_id) {
  return db_.query(
      "SELECT id, reason, status, evidence, resolved_by FROM reconciliation_cases "
      "WHERE payment_id = ? ORDER BY opened_at, id",
      {payment_id});
}

SqlRow PayorchRecords::payment_row(const std::string& payment_id) {
  const auto rows = db_.query(
      "SELECT id, state, next_action, fence, lease_owner, lease_expires_at, attempt_count, "
      "vendor_reference, client_key, last_submit_started_at, last_submit_ended_at "
      "FROM payments WHERE id = ?",
      {payment_id});
  return rows.empty() ? SqlRow{} : rows.front();
}

std::vector<std::string> PayorchRecords::repeated_events() {
  std::vector<std::string> out;
  for (const SqlRow& row : db_.query(
           "SELECT payment_id, type, count(*) AS n FROM outbox "
           "WHERE type NOT IN ('payment.processing', 'payment.unknown', 'refund.processing', 'refund.unknown') "
           "GROUP BY payment_id, type HAVING count(*) > 1"))
    out.push_back(row.at("payment_id").value_or("?") + " " + row.at("type").value_or("?") + " x" +
                  row.at("n").value_or("?"));
  return out;
}

std::string ledger_mismatch(const boost::json::value& view, const VendorSim& sim) {
  const std::string client_key = json_string(view, "client_key");
  if (client_key.empty()) return "the view has no client_key";
  const std::vector<SqlRow> charges = sim.charges(client_key);
  std::string diff;
  if (charges.size() > 1)
    diff += std::to_string(charges.size()) + " charges in the ledger for " + client_key + "; ";
  const std::string state = json_string(view, "state");
  const std::string status = charges.empty() ? "" : charges.front().at("status").value_or("");
  const std::string charge_id = charges.empty() ? "" : charges.front().at("id").value_or("");
  if (state == "SUCCEEDED") {
    if (status != "succeeded")
      diff += "SUCCEEDED but the ledger says '" + status + "' for " + client_key + "; ";
    if (json_string(view, "vendor_reference") != charge_id)
      diff += "vendor_reference '" + json_string(view, "vendor_reference") + "' is not the charge id '" +
              charge_id + "'; ";
  } else if (state == "FAILED_FINAL") {
    if (status != "declined")
      diff += "FAILED_FINAL but the ledger says '" + status + "' for " + client_key + "; ";
  }
  return diff;
}

std::string describe_payment(const boost::json::value& view, PayorchRecords& records) {
  const std::string id = json_string(view, "id");
  return "[" + boost::json::serialize(view) + " events=" + (id.empty() ? "" : records.event_types(id)) +
         "]";
}

DaemonConfig engine_daemon_config(const std::vector<SimProviderConfig>& providers) {
  DaemonConfig config;
  config.providers = providers_yaml(providers);
  config.routing = "routing: {default_provider: " + providers.front().name + "}";
  config.engine = fast_engine_yaml;
  return config;
}

bool database_write_lock_free(const std::string& db_path) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    throw std::runtime_error("sqlite: cannot open " + db_path);
  }
  sqlite3_busy_timeout(db, 0);
  const bool free = sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK;
  if (free) sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  return free;
}

bool freeze_outside_write_transaction(pid_t pid, const std::string& db_path,
                                      std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    ::kill(pid, SIGSTOP);
    // SIGSTOP is asynchronous: wait until the kernel reports the process stopped.
    eventually([&] { return process_state(pid) == 'T'; }, std::chrono::milliseconds(500));
    if (database_write_lock_free(db_path)) return true;
    ::kill(pid, SIGCONT);
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(7));
  }
}

}  // namespace payorch::test
