#include "support/delay_link.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <future>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "support/net_lab.h"

namespace payorch::test {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;
using Clock = std::chrono::steady_clock;

constexpr std::size_t chunk_bytes = 16384;
// A direction stops reading while this much waits in its queue (a slow reader on the other
// end), and reads again once its writes have drained it.
constexpr std::size_t max_queued_bytes = std::size_t{1} << 20;

// A TCP socket made in namespace `netns` ("" for this process's own): it stays there.
int tcp_socket_in(const std::string& netns) {
  return in_netns(netns, [] {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw std::runtime_error(std::string("delay_link: socket: ") + std::strerror(errno));
    return fd;
  });
}

// A listening socket at `end` (in its namespace); the fd and the port it got.
std::pair<int, std::uint16_t> listen_at(const LinkEnd& end) {
  const int fd = tcp_socket_in(end.netns);
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(end.port);
  socklen_t len = sizeof addr;
  const bool ok = ::inet_pton(AF_INET, end.host.c_str(), &addr.sin_addr) == 1 &&
                  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                  ::listen(fd, 256) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  const int err = errno;
  if (!ok) {
    ::close(fd);
    throw std::runtime_error("delay_link: listen at " + end.host + ":" + std::to_string(end.port) +
                             (end.netns.empty() ? "" : " in " + end.netns) + ": " + std::strerror(err));
  }
  return {fd, ntohs(addr.sin_port)};
}

struct Counters {
  std::atomic<std::uint64_t> connections{0};
  std::atomic<std::uint64_t> bytes{0};
};

// One relayed connection: two directions, each a queue of chunks stamped with the time they
// may leave.
class Relay : public std::enable_shared_from_this<Relay> {
public:
  Relay(asio::io_context& io, tcp::socket client, std::chrono::microseconds delay, Counters& counters)
      : client_(std::move(client)), server_(io), delay_(delay), counters_(counters),
        up_{&client_, &server_, asio::steady_timer(io)},
        down_{&server_, &client_, asio::steady_timer(io)} {}

  void connect(const LinkEnd& upstream) {
    error_code ec;
    server_.assign(tcp::v4(), tcp_socket_in(upstream.netns), ec);
    if (ec) return close();
    const tcp::endpoint to(asio::ip::make_address_v4(upstream.host), upstream.port);
    server_.async_connect(to, [self = shared_from_this()](error_code connect_ec) {
      if (connect_ec) return self->close();
      error_code ignored;
      self->client_.set_option(tcp::no_delay(true), ignored);
      self->server_.set_option(tcp::no_delay(true), ignored);
      self->read(self->up_);
      self->read(self->down_);
    });
  }

  void close() {
    if (closed_) return;
    closed_ = true;
    error_code ignored;
    client_.close(ignored);
    server_.close(ignored);
    up_.timer.cancel();
    down_.timer.cancel();
  }

private:
  struct Direction {
    tcp::socket* from;
    tcp::socket* to;
    asio::steady_timer timer;
    std::deque<std::pair<Clock::time_point, std::string>> queue = {};
    std::size_t queued_bytes = 0;
    bool reading = false;
    bool writing = false;
    bool ended = false;  // the sender closed its side: pass that on once the queue is empty
    std::array<char, chunk_bytes> buffer = {};
  };

  void read(Direction& d) {
    if (closed_ || d.reading || d.ended || d.queued_bytes >= max_queued_bytes) return;
    d.reading = true;
    d.from->async_read_some(asio::buffer(d.buffer), [self = shared_from_this(), &d](error_code ec, std::size_t n) {
      d.reading = false;
      if (ec == asio::error::eof) {
        d.ended = true;
        return self->write(d);
      }
      if (ec) return self->close();
      d.queue.emplace_back(Clock::now() + self->delay_, std::string(d.buffer.data(), n));
      d.queued_bytes += n;
      self->counters_.bytes += n;
      self->write(d);
      self->read(d);
    });
  }

  void write(Direction& d) {
    if (closed_ || d.writing) return;
    if (d.queue.empty()) {
      if (d.ended) {
        error_code ignored;
        d.to->shutdown(tcp::socket::shutdown_send, ignored);
        if (up_.ended && down_.ended) close();
      }
      return;
    }
    d.writing = true;
    d.timer.expires_at(d.queue.front().first);
    d.timer.async_wait([self = shared_from_this(), &d](error_code ec) {
      if (ec || self->closed_) {
        d.writing = false;
        return;
      }
      asio::async_write(*d.to, asio::buffer(d.queue.front().second),
                        [self, &d](error_code write_ec, std::size_t) {
                          d.writing = false;
                          if (write_ec) return self->close();
                          d.queued_bytes -= d.queue.front().second.size();
                          d.queue.pop_front();
                          self->read(d);  // if it had stopped for a full queue
                          self->write(d);
                        });
    });
  }

  tcp::socket client_;
  tcp::socket server_;
  std::chrono::microseconds delay_;
  Counters& counters_;
  Direction up_;    // client to server
  Direction down_;  // server to client
  bool closed_ = false;
};

}  // namespace

struct DelayLinks::Impl {
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
  Counters counters;
  // Touched on the io thread only.
  std::vector<std::shared_ptr<tcp::acceptor>> acceptors;
  std::vector<std::weak_ptr<Relay>> relays;
  std::thread thread;

  void accept(std::shared_ptr<tcp::acceptor> acceptor, LinkEnd upstream, std::chrono::microseconds delay) {
    acceptor->async_accept([this, acceptor, upstream, delay](error_code ec, tcp::socket client) {
      if (ec == asio::error::operation_aborted || !acceptor->is_open()) return;
      accept(acceptor, upstream, delay);
      if (ec) return;
      ++counters.connections;
      auto relay = std::make_shared<Relay>(io, std::move(client), delay, counters);
      std::erase_if(relays, [](const std::weak_ptr<Relay>& r) { return r.expired(); });
      relays.push_back(relay);
      try {
        relay->connect(upstream);
      } catch (const std::exception&) {
        relay->close();  // no socket in the upstream's namespace: the client sees a close
      }
    });
  }
};

DelayLinks::DelayLinks() : impl_(std::make_unique<Impl>()) {
  impl_->thread = std::thread([impl = impl_.get()] { impl->io.run(); });
}

DelayLinks::~DelayLinks() {
  asio::post(impl_->io, [impl = impl_.get()] {
    error_code ignored;
    for (auto& acceptor : impl->acceptors) acceptor->close(ignored);
    for (auto& weak : impl->relays)
      if (auto relay = weak.lock()) relay->close();
    impl->work.reset();  // run() returns once the closed relays' handlers are done
  });
  impl_->thread.join();
}

std::uint16_t DelayLinks::add(const LinkEnd& listen, const LinkEnd& upstream,
                              std::chrono::microseconds delay) {
  const auto [fd, port] = listen_at(listen);
  std::promise<void> added;
  asio::post(impl_->io, [this, fd = fd, upstream, delay, &added] {
    auto acceptor = std::make_shared<tcp::acceptor>(impl_->io);
    error_code ec;
    acceptor->assign(tcp::v4(), fd, ec);
    if (ec) {
      ::close(fd);
      added.set_exception(std::make_exception_ptr(std::runtime_error("delay_link: " + ec.message())));
      return;
    }
    impl_->acceptors.push_back(acceptor);
    impl_->accept(acceptor, upstream, delay);
    added.set_value();
  });
  added.get_future().get();
  return port;
}

std::uint64_t DelayLinks::connections() const { return impl_->counters.connections.load(); }
std::uint64_t DelayLinks::bytes() const { return impl_->counters.bytes.load(); }

}  // namespace payorch::test
