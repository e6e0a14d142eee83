#pragma once
// Self-signed certificates made at test time (no files, no fixed expiry to rot).
#include <string>

namespace payorch::test {

struct TestCert {
  std::string cert_pem;
  std::string key_pem;
};

// A P-256 self-signed certificate, valid from an hour ago for a day, whose subjectAltName is
// `san` in OpenSSL syntax ("DNS:localhost", "IP:127.0.0.1", comma-separated). Throws
// std::runtime_error if OpenSSL fails.
TestCert make_self_signed_cert(const std::string& san);

}  // namespace payorch::test
