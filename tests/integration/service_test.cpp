// payorchd as a systemd service (docs/contract.md §7): the sd_notify protocol (READY=1 after migrations and
// listen, WATCHDOG=1 pings that stop when the database writer is stuck, STOPPING=1), one daemon
// per database file, the SIGTERM drain under load with a real vendor behind it, the unit file
// (systemd-analyze verify and security) and what `cmake --install` lays down.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "support/daemon.h"
#include "support/engine_checks.h"
#include "support/http_client.h"
#include "support/payorch_api.h"
#include "support/database_probe.h"
#include "support/vendor_sim.h"

extern char** environ;

using namespace payorch::test;
using namespace std::chrono_literals;

namespace {

using Clock = std::chrono::steady_clock;

// A unix datagram socket standing in for systemd's notification socket: payorchd finds it in
// NOTIFY_SOCKET. Read continuously on a thread (sd_notify blocks once the socket's queue is full).
class NotifySocket {
public:
  struct Message {
    std::string text;  // one assignment, "READY=1"
    Clock::time_point at;
  };

  explicit NotifySocket(std::string path) : path_(std::move(path)) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    REQUIRE(path_.size() < sizeof addr.sun_path);
    std::memcpy(addr.sun_path, path_.c_str(), path_.size() + 1);
    REQUIRE_MESSAGE(::bind(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0,
                    std::strerror(errno));
    reader_ = std::jthread([this](std::stop_token stop) { read_until(stop); });
  }
  ~NotifySocket() {
    reader_.request_stop();
    reader_.join();
    ::close(fd_);
  }
  NotifySocket(const NotifySocket&) = delete;
  NotifySocket& operator=(const NotifySocket&) = delete;

  const std::string& path() const { return path_; }
  std::vector<Message> messages() const {
    std::lock_guard lock(mu_);
    return messages_;
  }
  int count(std::string_view text) const {
    int n = 0;
    for (const Message& m : messages()) n += m.text == text;
    return n;
  }
  // The messages, one per line, for failure output.
  std::string describe() const {
    std::string out;
    const std::vector<Message> all = messages();
    for (const Message& m : all)
      out += std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                m.at - all.front().at)
                                .count()) +
             " ms: " + m.text + "\n";
    return out;
  }

private:
  void read_until(const std::stop_token& stop) {
    while (!stop.stop_requested()) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      char buf[4096];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) continue;
      const auto now = Clock::now();
      std::string_view text(buf, static_cast<std::size_t>(n));
      std::lock_guard lock(mu_);
      while (!text.empty()) {
        const std::size_t nl = text.find('\n');
        if (!text.substr(0, nl).empty())
          messages_.push_back({std::string(text.substr(0, nl)), now});
        text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
      }
    }
  }

  std::string path_;
  int fd_ = -1;
  mutable std::mutex mu_;
  std::vector<Message> messages_;
  std::jthread reader_;
};

// Holds SQLite's write lock on a database from outside payorchd (BEGIN IMMEDIATE), so that
// payorchd's writer thread waits inside its own BEGIN for as long as this lives.
class WriteLockHolder {
public:
  explicit WriteLockHolder(const std::string& path) {
    REQUIRE(sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK);
    sqlite3_busy_timeout(db_, 5000);
    REQUIRE_MESSAGE(sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK,
                    sqlite3_errmsg(db_));
  }
  ~WriteLockHolder() {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_close(db_);
  }
  WriteLockHolder(const WriteLockHolder&) = delete;
  WriteLockHolder& operator=(const WriteLockHolder&) = delete;

private:
  sqlite3* db_ = nullptr;
};

// Runs `argv` (argv[0] an absolute path) to completion with `env` changed (nullopt removes a
// variable), output captured in `output_path`; SIGKILL after `timeout`.
CommandResult run_program(const std::vector<std::string>& argv, const std::string& output_path,
                          const std::map<std::string, std::optional<std::string>>& env = {},
                          std::chrono::milliseconds timeout = 120s) {
  std::vector<std::string> env_storage;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    if (env.count(entry.substr(0, entry.find('='))) == 0) env_storage.push_back(entry);
  }
  for (const auto& [name, value] : env)
    if (value) env_storage.push_back(name + "=" + *value);
  return run_to_completion(argv, output_path, timeout, &env_storage);
}

// The absolute path of `name` in PATH (or /usr/bin, /bin), "" when it is not installed.
std::string find_program(const std::string& name) {
  std::string dirs = std::getenv("PATH") ? std::getenv("PATH") : "";
  dirs += ":/usr/bin:/bin";
  for (std::size_t at = 0; at <= dirs.size();) {
    const std::size_t colon = std::min(dirs.find(':', at), dirs.size());
    const std::string candidate = dirs.substr(at, colon - at) + "/" + name;
    if (colon > at && ::access(candidate.c_str(), X_OK) == 0) return candidate;
    at = colon + 1;
  }
  return "";
}

// systemd-analyze, or "" when it is missing. CI installs Debian's systemd package for it (see
// tools/deps): there a missing systemd-analyze fails the test instead of skipping the check.
std::string systemd_analyze() {
  const std::string path = find_program("systemd-analyze");
  if (path.empty()) {
    if (std::getenv("CI") != nullptr)
      FAIL("systemd-analyze is missing (install Debian's systemd package)");
    MESSAGE("systemd-analyze is not installed: unit checks skipped (tools/deps installs it)");
  }
  return path;
}

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos;
       at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

const std::string unit_source = std::string(PAYORCH_SOURCE_DIR) + "/systemd/payorchd.service";
const std::string installed_payorchd = "/usr/local/bin/payorchd";

// The credentials conf/payorchd.production.yaml names, as files in `dir` (named as the unit's
// LoadCredential=payorch:DIR names them: payorch_FILE).
void write_production_credentials(const TempDir& dir, const std::string& sub) {
  for (const char* name : {"payorch_admin.token", "payorch_tenant-shop.token",
                           "payorch_tenant-shop.webhook-secret", "payorch_provider-sim.api-key",
                           "payorch_provider-sim.callback-secret"})
    dir.write(sub + "/" + name, std::string("cred-") + name + "-0001\n");
}

// The payments whose submit started and has not been recorded as ended: calls in flight.
std::set<std::string> calls_in_flight(const Daemon& daemon) {
  DatabaseProbe db(daemon);
  std::set<std::string> ids;
  for (const SqlRow& row : db.query(
           "SELECT id FROM payments WHERE last_submit_started_at IS NOT NULL AND "
           "(last_submit_ended_at IS NULL OR last_submit_started_at > last_submit_ended_at)"))
    ids.insert(row.at("id").value_or(""));
  return ids;
}

}  // namespace

TEST_CASE("service: systemd is told READY=1, then WATCHDOG=1 pings, then STOPPING=1"
          * doctest::test_suite("driver-free")) {
  Daemon daemon;
  NotifySocket notify(daemon.dir() + "/notify.sock");
  daemon.set_env("NOTIFY_SOCKET", notify.path());
  daemon.set_env("WATCHDOG_USEC", "300000");  // pings every 150 ms
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail() << "\nnotifications:\n" << notify.describe());

  // The port file is written just before READY=1: both mean "migrated and listening".
  REQUIRE(eventually([&] { return notify.count("WATCHDOG=1") >= 3; }, 5s));
  CHECK(http_request(daemon.port(), "GET", "/readyz").status == 200);

  const ExitStatus stopped = daemon.terminate(15s);
  CHECK_MESSAGE((stopped.exited && stopped.code == 0), stopped.describe());
  REQUIRE(eventually([&] { return notify.count("STOPPING=1") == 1; }, 2s));

  std::vector<std::string> seen;
  for (const NotifySocket::Message& m : notify.messages())
    if (m.text == "READY=1" || m.text == "WATCHDOG=1" || m.text == "STOPPING=1")
      seen.push_back(m.text);
  CAPTURE(notify.describe());
  REQUIRE(seen.size() >= 4);
  CHECK(seen.front() == "READY=1");
  CHECK(seen.back() == "STOPPING=1");
  CHECK(std::count(seen.begin(), seen.end(), "READY=1") == 1);
  CHECK(std::count(seen.begin(), seen.end(), "WATCHDOG=1") == static_cast<long>(seen.size()) - 2);
}

TEST_CASE("service: no WATCHDOG=1 unless the watchdog is enabled (WATCHDOG_USEC)"
          * doctest::test_suite("driver-free")) {
  Daemon daemon;
  NotifySocket notify(daemon.dir() + "/notify.sock");
  daemon.set_env("NOTIFY_SOCKET", notify.path());
  daemon.start();
  REQUIRE(eventually([&] { return notify.count("READY=1") == 1; }, 2s));
  std::this_thread::sleep_for(500ms);  // a watchdog at any rate would have pinged by now
  const ExitStatus stopped = daemon.terminate(15s);
  CHECK_MESSAGE((stopped.exited && stopped.code == 0), stopped.describe());
  CHECK_MESSAGE(notify.count("WATCHDOG=1") == 0, notify.describe());
}

TEST_CASE("service: the watchdog pings stop while the database writer is stuck, and resume"
          * doctest::test_suite("sqlite-only")) {
  DaemonConfig config;
  // The writer waits up to 10 s for SQLite's write lock before it answers busy.
  config.database = R"(database: {driver: sqlite, path: "{dir}/payorch.db", busy_timeout: 10s})";
  Daemon daemon(config);
  NotifySocket notify(daemon.dir() + "/notify.sock");
  daemon.set_env("NOTIFY_SOCKET", notify.path());
  daemon.set_env("WATCHDOG_USEC", "200000");  // pings every 100 ms
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail() << "\nnotifications:\n" << notify.describe());
  REQUIRE(eventually([&] { return notify.count("WATCHDOG=1") >= 2; }, 5s));

  Clock::time_point locked_at, released_at;
  {
    // Another process holds the write lock: payorchd's writer thread waits inside BEGIN.
    WriteLockHolder lock(daemon.db_path());
    locked_at = Clock::now();
    std::this_thread::sleep_for(1500ms);
    released_at = Clock::now();
  }
  // A probe answered just before the lock may still be on its way; after that, silence.
  int while_stuck = 0;
  for (const NotifySocket::Message& m : notify.messages())
    while_stuck += m.text == "WATCHDOG=1" && m.at > locked_at + 250ms && m.at < released_at;
  CHECK_MESSAGE(while_stuck == 0, notify.describe());

  // The writer comes back: so do the pings.
  const int before = notify.count("WATCHDOG=1");
  CHECK_MESSAGE(eventually([&] { return notify.count("WATCHDOG=1") >= before + 2; }, 3s),
                notify.describe());
  const ExitStatus stopped = daemon.terminate(15s);
  CHECK_MESSAGE((stopped.exited && stopped.code == 0), stopped.describe());
}

TEST_CASE("service: a second payorchd on the same database is refused before it touches it"
          * doctest::test_suite("sqlite-only")) {
  SUBCASE("the lock held by someone else: no database file is created") {
    Daemon daemon;
    const std::string lock_path = daemon.db_path() + ".lock";
    const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    REQUIRE(fd >= 0);
    REQUIRE(::flock(fd, LOCK_EX | LOCK_NB) == 0);
    REQUIRE(::write(fd, "4242\n", 5) == 5);

    const ExitStatus refused = daemon.start_expecting_exit(10s);
    CHECK_MESSAGE((refused.exited && refused.code == 1), refused.describe());
    const std::string log = daemon.log_tail();
    CHECK_MESSAGE(log.find("event=database.in_use") != std::string::npos, log);
    CHECK_MESSAGE(log.find("database " + daemon.db_path() +
                           " is in use by another payorchd (pid 4242, lock file " + lock_path +
                           "); refusing to run a second instance on it") != std::string::npos,
                  log);
    for (const char* suffix : {"", "-wal", "-shm", "-journal"})
      CHECK_MESSAGE(!std::filesystem::exists(daemon.db_path() + suffix), suffix);

    // `migrate` is refused the same way.
    const CommandResult migrate = daemon.run_command({"migrate", "--config", daemon.config_path()});
    CHECK_MESSAGE((migrate.status.exited && migrate.status.code == 1), migrate.output);
    CHECK_MESSAGE(
        migrate.output.find("is in use by another payorchd (pid 4242") != std::string::npos,
        migrate.output);
    CHECK_FALSE(std::filesystem::exists(daemon.db_path()));

    ::close(fd);  // released: now it starts
    daemon.start();
    CHECK(http_request(daemon.port(), "GET", "/readyz").status == 200);
  }

  SUBCASE("two daemons: the second is refused while the first runs, and starts after it") {
    Daemon first;
    first.start();
    DaemonConfig second_config;
    second_config.database = "database: {driver: sqlite, path: \"" + first.db_path() + "\"}";
    Daemon second(second_config);
    INFO("first log:\n" << first.log_tail() << "\nsecond log:\n" << second.log_tail());

    const PaymentRequest req{.operation_id = "single-instance-1"};
    REQUIRE(post_payment(first.port(), acme_token, req).status == 201);
    const ExitStatus refused = second.start_expecting_exit(10s);
    CHECK_MESSAGE((refused.exited && refused.code == 1), refused.describe());
    CHECK(second.log_tail().find("is in use by another payorchd (pid " +
                                 std::to_string(first.pid()) + ", lock file " + first.db_path() +
                                 ".lock)") != std::string::npos);
    // The first one did not notice.
    CHECK(get_payment(first.port(), acme_token, req.operation_id).status == 200);

    // The same file under other names: a hard link and a symbolic link to it.
    const std::string linked = first.db_path() + "-linked";
    const std::string symlinked = first.db_path() + "-symlinked";
    REQUIRE(::link(first.db_path().c_str(), linked.c_str()) == 0);
    REQUIRE(::symlink(first.db_path().c_str(), symlinked.c_str()) == 0);
    for (const std::string& other : {linked, symlinked}) {
      CAPTURE(other);
      DaemonConfig other_config;
      other_config.database = "database: {driver: sqlite, path: \"" + other + "\"}";
      Daemon by_other_name(other_config);
      const ExitStatus refused_too = by_other_name.start_expecting_exit(10s);
      CHECK_MESSAGE((refused_too.exited && refused_too.code == 1), refused_too.describe());
      const std::string log = by_other_name.log_tail();
      CHECK_MESSAGE(log.find("database " + other + " is a file another payorchd (pid " +
                             std::to_string(first.pid()) + ") runs on under another name") !=
                        std::string::npos,
                    log);
      CHECK_FALSE(std::filesystem::exists(other + "-wal"));
    }
    CHECK(get_payment(first.port(), acme_token, req.operation_id).status == 200);

    // A crash releases the lock too (the kernel drops it with the process).
    first.kill9();
    second.start();
    CHECK(get_payment(second.port(), acme_token, req.operation_id).status == 200);
    const ExitStatus stopped = second.terminate(15s);
    CHECK_MESSAGE((stopped.exited && stopped.code == 0), stopped.describe());
  }
}

namespace {

struct LoadResult {
  std::mutex mutex;
  std::map<std::string, std::string> acknowledged;  // operation_id -> payment id (the 2xx)
  std::vector<std::string> unexpected;
  std::atomic<int> acknowledged_count{0};
  std::atomic<int> shutting_down{0};  // 503 shutting-down
  std::atomic<int> refused{0};        // no answer: connection refused or closed by the drain
};

// Posts distinct intents on keep-alive connections until `stop`.
void post_load(std::uint16_t port, int client, std::atomic<bool>& stop, LoadResult& out) {
  auto connection = std::make_unique<HttpConnection>(port, 10s);
  for (int i = 0; !stop.load(); ++i) {
    const PaymentRequest req{
        .operation_id = "drain-" + std::to_string(client) + "-" + std::to_string(i),
        .amount_minor = 100 + i,
        .source = "tok_ok"};
    const HttpResponse r = post_payment(*connection, acme_token, req);
    if (r.status == 201 || r.status == 200) {
      std::lock_guard lock(out.mutex);
      out.acknowledged[req.operation_id] = json_string(r.json(), "id");
      ++out.acknowledged_count;
    } else if (is_problem(r, 503, "shutting-down")) {
      ++out.shutting_down;
    } else if (r.status == 0) {
      ++out.refused;
      std::this_thread::sleep_for(20ms);
    } else if (!is_problem(r, 503, "storage-busy")) {
      std::lock_guard lock(out.mutex);
      out.unexpected.push_back(r.describe());
    }
    if (!connection->is_open()) connection = std::make_unique<HttpConnection>(port, 10s);
  }
}

// The kernel's queues of one IPv4 TCP socket, from /proc/net/tcp: tx = bytes sent and not yet
// acknowledged by the peer, rx = bytes received and not yet read by the socket's owner.
struct TcpQueues {
  std::uint64_t tx = 0;
  std::uint64_t rx = 0;
};

// The socket whose local and remote ports are these, both on 127.0.0.1; nullopt if none.
std::optional<TcpQueues> tcp_queues(std::uint16_t local_port, std::uint16_t remote_port) {
  // Addresses are hex, the IPv4 address in host order: 127.0.0.1:8080 is 0100007F:1F90.
  const auto address = [](std::uint16_t port) {
    char text[16];
    std::snprintf(text, sizeof text, "0100007F:%04X", static_cast<unsigned>(port));
    return std::string(text);
  };
  std::istringstream table(read_file("/proc/net/tcp"));
  std::string line;
  std::getline(table, line);  // the column titles
  while (std::getline(table, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state, queues;
    if (!(fields >> slot >> local >> remote >> state >> queues)) continue;
    if (local != address(local_port) || remote != address(remote_port)) continue;
    const std::size_t colon = queues.find(':');
    if (colon == std::string::npos) continue;
    return TcpQueues{.tx = std::stoull(queues.substr(0, colon), nullptr, 16),
                     .rx = std::stoull(queues.substr(colon + 1), nullptr, 16)};
  }
  return std::nullopt;
}

// True once the server end of `client` has read everything the client sent: every byte reached
// it (nothing unacknowledged on the client's side) and none waits unread on the server's side.
// Only the process that accepted the connection can read it, so this also says it was accepted.
bool peer_has_read_all(const boost::asio::ip::tcp::socket& client) {
  const std::uint16_t here = client.local_endpoint().port();
  const std::uint16_t there = client.remote_endpoint().port();
  const std::optional<TcpQueues> sent = tcp_queues(here, there);
  const std::optional<TcpQueues> received = tcp_queues(there, here);
  return sent && received && sent->tx == 0 && received->rx == 0;
}

}  // namespace

TEST_CASE("service: SIGTERM under load drains: 503 shutting-down, calls in flight recorded, "
          "leases released, exit 0") {
  VendorSim sim;
  // Every charge is answered after 600 ms, so that vendor calls are in flight at SIGTERM.
  sim.add_fault("latency", -1, 600);
  Daemon daemon(engine_daemon_config({{.base_url = sim.base_url(), .retry = roomy_retry}}));
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail(8000) << "\nsim log:\n" << sim.log_tail());

  constexpr int clients = 6;
  LoadResult load;
  std::atomic<bool> stop{false};
  std::vector<std::jthread> threads;
  // Declared after `threads`, so destroyed first: a failed REQUIRE unwinding this test stops
  // the clients before the threads are joined, instead of joining them for ever.
  struct StopOnExit {
    std::atomic<bool>& stop;
    ~StopOnExit() { stop = true; }
  } stop_on_exit{stop};
  for (int c = 0; c < clients; ++c)
    threads.emplace_back([&, c] { post_load(daemon.port(), c, stop, load); });

  // Under way: intakes acknowledged and vendor calls on the wire.
  std::set<std::string> in_flight;
  REQUIRE(eventually(
      [&] {
        if (load.acknowledged_count.load() < 30) return false;
        in_flight = calls_in_flight(daemon);
        return !in_flight.empty();
      },
      10s));

  // A request whose body is still arriving when the drain starts is answered 503.
  boost::asio::io_context ioc;
  boost::asio::ip::tcp::socket partial(ioc);
  partial.connect({boost::asio::ip::make_address("127.0.0.1"), daemon.port()});
  const std::string body = PaymentRequest{.operation_id = "drain-late"}.to_json();
  const std::string request = raw_request(
      "POST", "/v1/payments",
      {{"Authorization", std::string("Bearer ") + acme_token},
       {"Content-Type", "application/json"}},
      body);
  const std::size_t split = request.size() - body.size() / 2;
  boost::asio::write(partial, boost::asio::buffer(request.data(), split));
  // Under this load the connection may still wait in the accept queue; a connection the drain
  // never accepted is reset by design (the listener closes), which is not what this checks.
  // Wait until the daemon has accepted it and read the half request it holds so far.
  REQUIRE_MESSAGE(eventually([&] { return peer_has_read_all(partial); }, 10s),
                  "payorchd did not read the half request within 10 s");

  const Clock::time_point sigterm_at = Clock::now();
  REQUIRE(::kill(daemon.pid(), SIGTERM) == 0);
  REQUIRE(eventually([&] {
    return read_file(daemon.log_path()).find("event=shutdown.draining") != std::string::npos;
  }));
  boost::asio::write(partial, boost::asio::buffer(request.data() + split, request.size() - split));
  std::string answer;
  boost::system::error_code ec;
  char buf[4096];
  for (std::size_t n; (n = partial.read_some(boost::asio::buffer(buf), ec)) > 0 || !ec;)
    answer.append(buf, n);
  partial.close();  // the server lingers until the client closes: the drain would wait for it
  CHECK_MESSAGE(raw_status(answer) == 503, answer);
  CHECK_MESSAGE(answer.find("shutting-down") != std::string::npos, answer);
  CHECK_MESSAGE(answer.find("Retry-After") != std::string::npos, answer);

  const std::optional<ExitStatus> exited = daemon.wait_exit(30s);
  const auto drain_time = Clock::now() - sigterm_at;
  stop = true;
  threads.clear();
  REQUIRE_MESSAGE(exited.has_value(), "payorchd did not exit within 30 s of SIGTERM");
  CHECK_MESSAGE((exited->exited && exited->code == 0), exited->describe());
  // Calls in flight take 600 ms: well inside the unit's TimeoutStopSec (45s).
  CHECK(drain_time < 8s);
  const std::string log = read_file(daemon.log_path());
  CHECK(log.find("event=shutdown.done") != std::string::npos);
  CHECK(log.find("event=shutdown.drain_incomplete") == std::string::npos);

  CHECK(load.unexpected.empty());
  for (const std::string& u : load.unexpected) MESSAGE("unexpected answer: " << u);
  INFO(load.acknowledged.size() << " intakes acknowledged, " << load.shutting_down.load()
                                << " answered shutting-down, " << load.refused.load()
                                << " without an answer; " << in_flight.size()
                                << " vendor calls in flight at SIGTERM");

  // Every acknowledged intake is in the database, as acknowledged.
  DatabaseProbe db(daemon);
  CHECK(db.integrity_check() == "ok");
  int missing = 0;
  for (const auto& [operation_id, payment_id] : load.acknowledged)
    if (db.count("SELECT count(*) FROM payments WHERE operation_id = ?1 AND id = ?2",
                 {operation_id, payment_id}) != 1 &&
        ++missing <= 5)
      FAIL_CHECK("acknowledged intake missing after the drain: " << operation_id);
  CHECK(missing == 0);
  CHECK(db.count("SELECT count(*) FROM payments WHERE operation_id = 'drain-late'") == 0);

  // No lease left behind; every call that was in flight finished and was recorded.
  CHECK(db.count("SELECT count(*) FROM payments WHERE lease_owner IS NOT NULL") == 0);
  CHECK(calls_in_flight(daemon).empty());
  for (const std::string& id : in_flight) {
    const auto rows = db.query("SELECT state, vendor_reference FROM payments WHERE id = ?1", {id});
    REQUIRE(rows.size() == 1);
    CHECK_MESSAGE(rows[0].at("state") == "SUCCEEDED", id);
  }

  // payorch's records agree with the vendor's ledger: a charge for every SUCCEEDED payment,
  // with its id as vendor_reference, and no charge payorch does not know about.
  SqliteProbe ledger(sim.db_path());
  std::map<std::string, std::string> charge_by_key;
  for (const SqlRow& c :
       ledger.query("SELECT id, idempotency_key FROM charges WHERE status = 'succeeded'"))
    charge_by_key[c.at("idempotency_key").value_or("")] = c.at("id").value_or("");
  std::map<std::string, std::string> succeeded;
  for (const SqlRow& p :
       db.query("SELECT client_key, vendor_reference FROM payments WHERE state = 'SUCCEEDED'"))
    succeeded[p.at("client_key").value_or("")] = p.at("vendor_reference").value_or("");
  CHECK(succeeded == charge_by_key);
  CHECK(ledger.count("SELECT count(*) FROM charges") ==
        static_cast<std::int64_t>(charge_by_key.size()));
}

TEST_CASE("service: the unit passes systemd-analyze verify, and its exposure is at most 2.0"
          * doctest::test_suite("driver-free")) {
  const std::string analyze = systemd_analyze();
  if (analyze.empty()) return;
  TempDir dir("payorch-service");

  // verify checks that ExecStart's binary exists: a copy of the unit runs the one just built.
  const std::string unit = read_file(unit_source);
  REQUIRE(unit.find("ExecStart=" + installed_payorchd + " serve ") != std::string::npos);
  const std::string copy =
      dir.write("payorchd.service", replace_all(unit, installed_payorchd, PAYORCHD_PATH));
  const CommandResult verify = run_program({analyze, "verify", copy}, dir.path() + "/verify.out");
  CHECK_MESSAGE((verify.status.exited && verify.status.code == 0), verify.output);
  CHECK_MESSAGE(verify.output.empty(), verify.output);

  // The unit as shipped. --threshold is in tenths: 20 = an exposure of 2.0.
  const CommandResult security = run_program(
      {analyze, "security", "--offline=true", "--threshold=20", "--no-pager", unit_source},
      dir.path() + "/security.out");
  CHECK_MESSAGE((security.status.exited && security.status.code == 0),
                security.status.describe() << "\n" << security.output);
  std::smatch m;
  const std::regex overall(R"(Overall exposure level for payorchd\.service: ([0-9]+\.[0-9]+))");
  REQUIRE_MESSAGE(std::regex_search(security.output, m, overall), security.output);
  const double exposure = std::stod(m[1].str());
  MESSAGE("systemd-analyze security --offline=true systemd/payorchd.service: exposure "
          << m[1].str());
  CHECK(exposure <= 2.0);
  // The operations docs quote the measured score.
  const std::string doc = read_file(std::string(PAYORCH_SOURCE_DIR) + "/docs/operations.md");
  CHECK_MESSAGE(
      doc.find("exposure level for payorchd.service: " + m[1].str()) != std::string::npos,
      "docs/operations.md does not quote the exposure " << m[1].str());
}

TEST_CASE("service: cmake --install lays down the binaries, the unit and the example configs"
          * doctest::test_suite("driver-free")) {
  const std::string cmake = find_program("cmake");
  REQUIRE_MESSAGE(!cmake.empty(), "cmake is not in PATH");
  TempDir dir("payorch-service");
  const std::string prefix = dir.path() + "/prefix";
  const std::string build_dir = std::filesystem::path(PAYORCHD_PATH).parent_path().string();
  const CommandResult install =
      run_program({cmake, "--install", build_dir, "--prefix", prefix}, dir.path() + "/install.out");
  INFO(install.output);
  REQUIRE_MESSAGE((install.status.exited && install.status.code == 0), install.status.describe());

  for (const char* program : {"/bin/payorchd", "/bin/payorch-vendor-sim"})
    CHECK_MESSAGE(::access((prefix + program).c_str(), X_OK) == 0, program);
  const std::string unit_path = prefix + "/lib/systemd/system/payorchd.service";
  const std::string installed_unit = read_file(unit_path);
  // The unit as in systemd/, pointed at this prefix.
  CHECK(installed_unit == replace_all(read_file(unit_source), "/usr/local/", prefix + "/"));
  CHECK(installed_unit.find("ExecStart=" + prefix +
                            "/bin/payorchd serve --config /etc/payorch/payorchd.yaml\n") !=
        std::string::npos);
  for (const char* example : {"payorchd.production.yaml", "payorchd.yaml"})
    CHECK_MESSAGE(read_file(prefix + "/share/payorch/" + example) ==
                      read_file(std::string(PAYORCH_SOURCE_DIR) + "/conf/" + example),
                  example);
  CHECK(std::filesystem::exists(prefix + "/share/doc/payorch/README.md"));

  // The installed binary accepts the installed production example, given its credentials.
  const std::string config = prefix + "/share/payorch/payorchd.production.yaml";
  write_production_credentials(dir, "credentials");
  const CommandResult ok =
      run_program({prefix + "/bin/payorchd", "check-config", "--config", config},
                  dir.path() + "/check.out",
                  {{"CREDENTIALS_DIRECTORY", dir.path() + "/credentials"}});
  CHECK_MESSAGE((ok.status.exited && ok.status.code == 0), ok.output);
  CHECK(ok.output.find("cred-") == std::string::npos);  // never prints a secret
  const CommandResult without =
      run_program({prefix + "/bin/payorchd", "check-config", "--config", config},
                  dir.path() + "/check-without.out", {{"CREDENTIALS_DIRECTORY", std::nullopt}});
  CHECK_MESSAGE((without.status.exited && without.status.code == 2), without.output);
  CHECK_MESSAGE(without.output.find(config + ":") != std::string::npos, without.output);
  CHECK_MESSAGE(without.output.find("admin.token_file: ${CREDENTIALS_DIRECTORY} is not set") !=
                    std::string::npos,
                without.output);

  // The installed unit names a binary that exists: systemd-analyze verify takes it as is.
  const std::string analyze = systemd_analyze();
  if (analyze.empty()) return;
  const CommandResult verify =
      run_program({analyze, "verify", unit_path}, dir.path() + "/verify.out");
  CHECK_MESSAGE((verify.status.exited && verify.status.code == 0), verify.output);
  CHECK_MESSAGE(verify.output.empty(), verify.output);
}
