#pragma once
// A loopback TCP proxy between payorchd and PostgreSQL that cuts a connection at a chosen
// statement: the PostgreSQL side of the storage-fault loops (tests/storage), where SQLite's
// have support/faulty_vfs. Real sockets, nothing in payorch's code.
//
// The client must speak plain protocol v3 (sslmode=disable and gssencmode=disable: url_for()
// adds them). The proxy reads the frontend stream (the startup packet, then messages of one
// type byte and an int32 length) and counts statements: each 'Q' (a simple query) and each
// 'S' (Sync, which ends the Parse/Bind/Describe/Execute batch of PQexecParams) is one. A
// batch is held until its Sync, so that a statement the proxy cuts `before` never reaches
// the server, not even its Execute. Statements payorch prepares (pg::Connection) are named
// by their Parse and run by a Bind of that name: the proxy keeps each session's names, so a
// batch is known by the SQL it executes; one that only prepares is "PREPARE <sql>".
//
// Armed with N and a mode, the N-th statement after arm() (over every connection) cuts both
// sockets of its connection, once:
//  - before: the statement is never forwarded;
//  - after_reply: it is forwarded, the server's answer is read up to its ReadyForQuery ('Z')
//    and dropped, then the sockets are cut. For a COMMIT: committed on the server, a broken
//    connection for the client (an unknown commit outcome).
// Every other connection, and the cut one's later replacements, are forwarded unchanged. The
// samples of a node's server clock (store/postgres/server_clock.h) are forwarded uncounted.
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace payorch::test {

enum class CutMode { before, after_reply };
std::string_view to_string(CutMode mode);

class PgCutProxy {
public:
  // Listens on 127.0.0.1 (a free port) and forwards every connection to the host and port of
  // `upstream_url` (a libpq URI: postgresql://user:password@host:port/database?...). Throws
  // std::runtime_error when it cannot listen or parse the URI.
  explicit PgCutProxy(const std::string& upstream_url);
  // Cuts every connection and stops.
  ~PgCutProxy();
  PgCutProxy(const PgCutProxy&) = delete;
  PgCutProxy& operator=(const PgCutProxy&) = delete;

  std::uint16_t port() const { return port_; }
  // `url` (a URI of the upstream server, any database) pointed at the proxy, with
  // sslmode=disable&gssencmode=disable.
  std::string url_for(const std::string& url) const;

  // Counts statements from 0 again; cuts at the n-th (n >= 1) in `mode`.
  void arm(std::uint64_t n, CutMode mode);
  // No cut from now on; the counts stay readable.
  void disarm();
  // Whether the armed cut happened (since arm()).
  bool cut_hit() const { return hit_.load(); }
  // Statements the clients sent since arm(), the cut one included.
  std::uint64_t statements_seen() const { return seen_.load(); }
  // The SQL of the statement the cut hit ("" before it): "COMMIT", "BEGIN ...", "PREPARE
  // COMMIT" (a batch that only prepared it), ...
  std::string cut_statement() const;

private:
  std::uint16_t port_ = 0;
  std::string upstream_host_;
  std::uint16_t upstream_port_ = 0;

  // The armed cut: read and changed by arm()/disarm() and by the proxy's thread.
  mutable std::mutex mu_;
  std::uint64_t cut_at_ = 0;  // 0: disarmed
  CutMode mode_ = CutMode::before;
  std::string cut_statement_;
  std::atomic<std::uint64_t> seen_{0};
  std::atomic<bool> hit_{false};

  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};  // a pipe: a byte wakes the thread to stop
  std::thread thread_;
  void run();
  // Counts one statement (`sql`); whether it is the armed one (then the cut is spent), and its
  // mode.
  bool count_statement(std::string_view sql, CutMode* mode);
};

}  // namespace payorch::test
