#pragma once
// A TCP socket that counts the bytes the kernel accepted for sending.
//
// Why: "the request certainly never left" must be decided below TLS. asio's SSL stream
// completes a failed write with 0 bytes even when part of a TLS record already went out, so
// its byte count cannot prove that nothing was sent; this count can. A byte the kernel
// accepted may have reached the peer; a byte it did not accept cannot have.
#include <boost/asio/compose.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <cstddef>
#include <cstdint>
#include <utility>

namespace payorch::net {

class CountingSocket {
public:
  using socket_type = boost::asio::ip::tcp::socket;
  using executor_type = socket_type::executor_type;
  using lowest_layer_type = socket_type::lowest_layer_type;

  explicit CountingSocket(const executor_type& ex) : socket_(ex) {}
  // Pending operations hold `this`: the object never moves.
  CountingSocket(const CountingSocket&) = delete;
  CountingSocket& operator=(const CountingSocket&) = delete;

  executor_type get_executor() noexcept { return socket_.get_executor(); }
  socket_type& socket() noexcept { return socket_; }
  lowest_layer_type& lowest_layer() noexcept { return socket_.lowest_layer(); }
  const lowest_layer_type& lowest_layer() const noexcept { return socket_.lowest_layer(); }

  // Bytes accepted by the kernel since the socket was created.
  std::uint64_t bytes_written() const noexcept { return bytes_written_; }

  template <class MutableBuffers, class ReadToken>
  auto async_read_some(const MutableBuffers& buffers, ReadToken&& token) {
    return socket_.async_read_some(buffers, std::forward<ReadToken>(token));
  }

  template <class ConstBuffers, class WriteToken>
  auto async_write_some(const ConstBuffers& buffers, WriteToken&& token) {
    return boost::asio::async_compose<WriteToken, void(boost::system::error_code, std::size_t)>(
        WriteSomeOp<ConstBuffers>{this, buffers}, token, socket_);
  }

private:
  template <class ConstBuffers>
  struct WriteSomeOp {
    CountingSocket* self;
    ConstBuffers buffers;
    bool started = false;

    template <class Self>
    void operator()(Self& op, boost::system::error_code ec = {}, std::size_t written = 0) {
      if (!started) {
        started = true;
        self->socket_.async_write_some(buffers, std::move(op));
        return;
      }
      self->bytes_written_ += written;
      op.complete(ec, written);
    }
  };

  socket_type socket_;
  std::uint64_t bytes_written_ = 0;
};

}  // namespace payorch::net
