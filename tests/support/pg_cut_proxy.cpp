#include "support/pg_cut_proxy.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "store/postgres/server_clock.h"

namespace payorch::test {
namespace {

// Protocol codes of the requests a startup packet may carry instead of a startup message.
constexpr std::uint32_t ssl_request = 80877103;
constexpr std::uint32_t gssenc_request = 80877104;

std::uint32_t be32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return (std::uint32_t{u[0]} << 24) | (std::uint32_t{u[1]} << 16) | (std::uint32_t{u[2]} << 8) |
         std::uint32_t{u[3]};
}

[[noreturn]] void fail(const std::string& what) {
  throw std::runtime_error("pg_cut_proxy: " + what + ": " + std::strerror(errno));
}

// Writes all of `bytes`; false when the peer is gone.
bool send_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// Reads what is there into `into`; false at end of stream or on an error.
bool receive(int fd, std::string& into) {
  char buf[16384];
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    into.append(buf, static_cast<std::size_t>(n));
    return true;
  }
}

// The next whole message of `stream` (type byte + int32 length counting itself), removed from
// it; "" while incomplete.
std::string next_message(std::string& stream) {
  if (stream.size() < 5) return "";
  const std::size_t size = 1 + be32(stream.data() + 1);
  if (stream.size() < size) return "";
  std::string message = stream.substr(0, size);
  stream.erase(0, size);
  return message;
}

// The zero-terminated string of `message` at `at`, and where the next field starts.
std::pair<std::string, std::size_t> field(std::string_view message, std::size_t at) {
  const std::size_t end = message.find('\0', at);
  if (end == std::string_view::npos) return {"", message.size()};
  return {std::string(message.substr(at, end - at)), end + 1};
}

// The SQL a batch runs: a simple Query's ('Q', length, query), or the one of the statement its
// Bind names ('B', length, portal, statement, ...) when it has an Execute, looked up in
// `prepared` (statement name -> query), which its Parse messages ('P', length, statement,
// query, ...) add to. A batch that only prepares is "PREPARE <query>": nothing runs. "" when
// the batch names no statement.
std::string statement_text(std::string_view batch, std::map<std::string, std::string>& prepared) {
  std::string parsed;
  std::string bound;
  bool executes = false;
  for (std::size_t at = 0; at + 5 <= batch.size();) {
    const std::size_t size = 1 + be32(batch.data() + at + 1);
    const std::string_view message = batch.substr(at, size);
    if (message[0] == 'Q') return field(message, 5).first;
    if (message[0] == 'P') {
      const auto name = field(message, 5);
      parsed = field(message, name.second).first;
      prepared[name.first] = parsed;
    } else if (message[0] == 'B') {
      const auto portal = field(message, 5);
      bound = field(message, portal.second).first;
    } else if (message[0] == 'E') {
      executes = true;
    }
    at += size;
  }
  if (executes) {
    const auto it = prepared.find(bound);
    return it == prepared.end() ? "" : it->second;
  }
  return parsed.empty() ? "" : "PREPARE " + parsed;
}

}  // namespace

std::string_view to_string(CutMode mode) {
  return mode == CutMode::before ? "before" : "after_reply";
}

// One proxied connection.
struct Link {
  int client = -1;
  int server = -1;
  bool started = false;      // the startup packet has passed
  std::string from_client;   // frontend bytes not yet parsed
  std::string batch;         // an extended-protocol batch, held until its Sync
  std::string from_server;   // backend bytes not yet parsed
  std::map<std::string, std::string> prepared;  // statement name -> query, of this session
  bool holding = false;      // after_reply: the answer is dropped up to its 'Z', then the cut
  bool closed = false;

  void close() {
    for (int* fd : {&client, &server}) {
      if (*fd < 0) continue;
      ::shutdown(*fd, SHUT_RDWR);
      ::close(*fd);
      *fd = -1;
    }
    closed = true;
  }
};

PgCutProxy::PgCutProxy(const std::string& upstream_url) {
  // postgresql://user:password@host:port/database?...
  const std::size_t at = upstream_url.find('@');
  const std::size_t slash = upstream_url.find('/', at == std::string::npos ? 0 : at);
  const std::string hostport =
      at == std::string::npos || slash == std::string::npos ? "" : upstream_url.substr(at + 1, slash - at - 1);
  const std::size_t colon = hostport.rfind(':');
  if (colon == std::string::npos)
    throw std::runtime_error("pg_cut_proxy: no host:port in the upstream URI");
  upstream_host_ = hostport.substr(0, colon);
  upstream_port_ = static_cast<std::uint16_t>(std::stoi(hostport.substr(colon + 1)));
  if (upstream_host_ == "localhost") upstream_host_ = "127.0.0.1";

  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) fail("socket");
  const int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) fail("bind");
  if (::listen(listen_fd_, 64) != 0) fail("listen");
  socklen_t len = sizeof addr;
  if (::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) fail("getsockname");
  port_ = ntohs(addr.sin_port);
  if (::pipe2(wake_, O_CLOEXEC) != 0) fail("pipe");
  thread_ = std::thread([this] { run(); });
}

PgCutProxy::~PgCutProxy() {
  const char byte = 0;
  if (::write(wake_[1], &byte, 1) != 1) {
    // The thread polls the pipe; it cannot be full with one byte.
  }
  thread_.join();
  ::close(listen_fd_);
  ::close(wake_[0]);
  ::close(wake_[1]);
}

std::string PgCutProxy::url_for(const std::string& url) const {
  const std::size_t at = url.find('@');
  const std::size_t slash = url.find('/', at == std::string::npos ? 0 : at);
  if (at == std::string::npos || slash == std::string::npos)
    throw std::runtime_error("pg_cut_proxy: no host:port in " + url);
  std::string out = url.substr(0, at + 1) + "127.0.0.1:" + std::to_string(port_) + url.substr(slash);
  out += out.find('?') == std::string::npos ? "?" : "&";
  return out + "sslmode=disable&gssencmode=disable";
}

void PgCutProxy::arm(std::uint64_t n, CutMode mode) {
  std::lock_guard lock(mu_);
  cut_at_ = n;
  mode_ = mode;
  seen_ = 0;
  hit_ = false;
  cut_statement_.clear();
}

void PgCutProxy::disarm() {
  std::lock_guard lock(mu_);
  cut_at_ = 0;
}

bool PgCutProxy::count_statement(std::string_view sql, CutMode* mode) {
  // A node's samples of the server's clock run on a connection of their own, on their own
  // schedule: not the operation's statements, so neither counted nor cut.
  if (sql.find(store::pg::server_clock_statement) != std::string_view::npos) return false;
  std::lock_guard lock(mu_);
  if (cut_at_ == 0) return false;
  const std::uint64_t n = ++seen_;
  if (hit_ || n != cut_at_) return false;
  hit_ = true;
  cut_statement_ = sql;
  *mode = mode_;
  return true;
}

std::string PgCutProxy::cut_statement() const {
  std::lock_guard lock(mu_);
  return cut_statement_;
}

void PgCutProxy::run() {
  std::vector<std::unique_ptr<Link>> links;

  const auto connect_upstream = [this]() -> int {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(upstream_port_);
    if (::inet_pton(AF_INET, upstream_host_.c_str(), &addr.sin_addr) != 1 ||
        ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      ::close(fd);
      return -1;
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
  };

  // Frontend bytes of `link`: forwards them a message (or a held batch) at a time, counting
  // statements and cutting at the armed one.
  const auto from_client = [this](Link& link) {
    if (!link.started) {
      if (link.from_client.size() < 8) return;
      const std::uint32_t size = be32(link.from_client.data());
      if (link.from_client.size() < size) return;
      const std::uint32_t code = be32(link.from_client.data() + 4);
      // An encryption request is answered by one unframed byte: not plain protocol v3.
      if (code == ssl_request || code == gssenc_request) return link.close();
      if (!send_all(link.server, std::string_view(link.from_client).substr(0, size))) return link.close();
      link.from_client.erase(0, size);
      link.started = true;
    }
    for (std::string message = next_message(link.from_client); !message.empty();
         message = next_message(link.from_client)) {
      const char type = message[0];
      // Parse, Bind, Describe, Execute, Close: held until the Sync that ends their batch.
      if (type == 'P' || type == 'B' || type == 'D' || type == 'E' || type == 'C') {
        link.batch += message;
        continue;
      }
      link.batch += message;
      CutMode mode = CutMode::before;
      if ((type == 'S' || type == 'Q') && count_statement(statement_text(link.batch, link.prepared), &mode)) {
        if (mode == CutMode::before) return link.close();
        link.holding = true;
      }
      if (!send_all(link.server, link.batch)) return link.close();
      link.batch.clear();
    }
  };

  // Backend bytes of `link`: forwarded a message at a time, or dropped up to the ReadyForQuery
  // that answers the held statement, which cuts the connection.
  const auto from_server = [](Link& link) {
    for (std::string message = next_message(link.from_server); !message.empty();
         message = next_message(link.from_server)) {
      if (link.holding) {
        if (message[0] == 'Z') return link.close();
        continue;
      }
      if (!send_all(link.client, message)) return link.close();
    }
  };

  for (;;) {
    std::vector<pollfd> fds{{wake_[0], POLLIN, 0}, {listen_fd_, POLLIN, 0}};
    for (const auto& link : links) {
      fds.push_back({link->client, POLLIN, 0});
      fds.push_back({link->server, POLLIN, 0});
    }
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[0].revents != 0) break;
    for (std::size_t i = 0; i < links.size(); ++i) {
      Link& link = *links[i];
      if (!link.closed && fds[2 + 2 * i].revents != 0) {
        if (receive(link.client, link.from_client))
          from_client(link);
        else
          link.close();
      }
      if (!link.closed && fds[3 + 2 * i].revents != 0) {
        if (receive(link.server, link.from_server))
          from_server(link);
        else
          link.close();
      }
    }
    std::erase_if(links, [](const std::unique_ptr<Link>& link) { return link->closed; });
    if (fds[1].revents != 0) {
      const int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) continue;
      const int one = 1;
      ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      auto link = std::make_unique<Link>();
      link->client = client;
      link->server = connect_upstream();
      if (link->server < 0) {
        link->close();
        continue;
      }
      links.push_back(std::move(link));
    }
  }
  for (auto& link : links) link->close();
}

}  // namespace payorch::test
