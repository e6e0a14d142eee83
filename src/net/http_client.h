#pragma once
// The asynchronous HTTP(S)/1.1 client payorch uses to talk to payment vendors.
//
// Its one job beyond HTTP is to never blur "the request certainly did not leave" with "it may
// have": a vendor that received a charge request may charge, whether or not we hear back, so
// the engine must be able to tell HttpResult::not_sent (safe to send again) apart from
// HttpResult::sent_no_answer (only the vendor knows). Whenever in doubt, it says sent_no_answer.
//
// https always verifies the vendor's certificate (system trust store plus optional extra CAs)
// and its host name; there is no switch to turn that off.
#include <boost/asio/any_io_executor.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "net/http_types.h"
#include "net/pool.h"

namespace payorch::net {

struct ClientOptions {
  std::size_t max_response_body_bytes = 1024 * 1024;  // over it: sent_no_answer
  std::uint32_t max_response_header_bytes = 16 * 1024;
  PoolLimits pool;
  // Trust the system's default verify paths (OpenSSL's CA file and directory). Off only to
  // trust nothing but extra_ca_pem (a vendor's private CA; tests, where loading the system
  // store costs ~100 ms per client). Either way certificates and host names are verified.
  bool system_trust_store = true;
  // PEM certificates trusted in addition.
  std::string extra_ca_pem;
  std::string user_agent = "payorch";
};

struct ClientStats {
  std::uint64_t connections_opened = 0;  // TCP connections established
  std::uint64_t connections_reused = 0;  // requests that went out on a pooled connection
  std::size_t idle_connections = 0;
};

namespace detail {
struct ClientShared;
}

class HttpClient {
public:
  using Handler = std::function<void(HttpResult)>;

  // Runs every operation on `ex` (on strands of it, so the io_context may have many threads).
  // Throws std::system_error when the TLS context cannot be set up (bad extra_ca_pem, no
  // default trust store): a startup error.
  explicit HttpClient(boost::asio::any_io_executor ex, ClientOptions options = {});
  // Requests in flight finish on their own (they share the pool and TLS context). Destroy the
  // client and let its requests finish before the io_context is destroyed.
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Sends `req`. `done` is called exactly once, posted to the client's executor (never from
  // inside request()), within about req.timeout. Any thread.
  //
  // A request goes out on a pooled keep-alive connection when one looks alive, else on a new
  // one. If a pooled connection fails before the kernel accepted any byte of the request, the
  // request is sent again once on a new connection: that is the only retry, and it happens
  // only when nothing was sent.
  void request(Request req, Handler done);

  const boost::asio::any_io_executor& get_executor() const;
  ClientStats stats() const;

private:
  std::shared_ptr<detail::ClientShared> shared_;
};

}  // namespace payorch::net
