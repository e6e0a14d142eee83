#include "net/connection.h"

#include <boost/asio/ip/address.hpp>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>

namespace payorch::net {

Connection::Connection(const boost::asio::any_io_executor& ex, boost::asio::ssl::context* tls) {
  if (tls)
    tls_.emplace(ex, *tls);
  else
    plain_.emplace(ex);
}

boost::asio::ip::tcp::socket& Connection::socket() {
  return tls_ ? tls_->next_layer().socket() : plain_->socket();
}

std::uint64_t Connection::bytes_written() const {
  return tls_ ? tls_->next_layer().bytes_written() : plain_->bytes_written();
}

bool Connection::expect_peer_name(const std::string& host, std::string& error) {
  SSL* ssl = tls_->native_handle();
  boost::system::error_code not_ip;
  boost::asio::ip::make_address(host, not_ip);
  if (not_ip) {
    if (SSL_set_tlsext_host_name(ssl, host.c_str()) != 1) {
      error = "cannot set TLS SNI";
      return false;
    }
    SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    if (SSL_set1_host(ssl, host.c_str()) != 1) {
      error = "cannot set the expected certificate host name";
      return false;
    }
    return true;
  }
  if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host.c_str()) != 1) {
    error = "cannot set the expected certificate IP address";
    return false;
  }
  return true;
}

bool Connection::looks_alive() {
  boost::asio::ip::tcp::socket& s = socket();
  if (!s.is_open()) return false;
  pollfd p{};
  p.fd = s.native_handle();
  p.events = POLLIN;
  if (::poll(&p, 1, 0) != 0) return false;  // readable, hung up, error, or poll failed
  return true;
}

void Connection::close() {
  boost::system::error_code ignored;
  socket().close(ignored);
}

}  // namespace payorch::net
