// server.tls: the listener's certificate and private key, read and checked at load so that a
// wrong file is a line-numbered configuration error, not a failure at the first handshake.
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <memory>

#include "config/sections.h"

namespace payorch::config::detail {
namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;

// OpenSSL's reason for the latest failure ("bad base64 decode"); clears its error queue so
// that nothing stale is left for the next caller.
std::string openssl_reason() {
  const unsigned long e = ERR_peek_last_error();
  const char* reason = e == 0 ? nullptr : ERR_reason_error_string(e);
  ERR_clear_error();
  return reason ? reason : "unknown error";
}

bool no_more_pem() {
  const unsigned long e = ERR_peek_last_error();
  return ERR_GET_LIB(e) == ERR_LIB_PEM && ERR_GET_REASON(e) == PEM_R_NO_START_LINE;
}

BioPtr memory_bio(const std::string& text) {
  return BioPtr(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
}

// Never prompts: without this OpenSSL would ask for a passphrase on the terminal.
int no_passphrase(char*, int, int, void*) { return -1; }

// The first certificate of `pem` (the server's own; intermediates may follow it), after
// checking that every PEM certificate in it parses. nullptr with `problem` set otherwise.
X509Ptr leaf_certificate(const std::string& pem, std::string& problem) {
  ERR_clear_error();
  BioPtr bio = memory_bio(pem);
  X509Ptr leaf(PEM_read_bio_X509(bio.get(), nullptr, no_passphrase, nullptr));
  if (!leaf) {
    problem = no_more_pem() ? "holds no PEM certificate (-----BEGIN CERTIFICATE-----)"
                            : "is not a readable PEM certificate: " + openssl_reason();
    ERR_clear_error();
    return nullptr;
  }
  for (int n = 2;; ++n) {
    X509Ptr next(PEM_read_bio_X509(bio.get(), nullptr, no_passphrase, nullptr));
    if (next) continue;
    if (no_more_pem()) break;
    problem = "certificate " + std::to_string(n) + " is not readable: " + openssl_reason();
    return nullptr;
  }
  ERR_clear_error();
  return leaf;
}

PkeyPtr private_key(const std::string& pem, std::string& problem) {
  // OpenSSL's own message for a file without a key ("unsupported") would not say so.
  if (pem.find("PRIVATE KEY-----") == std::string::npos) {
    problem = "holds no PEM private key (-----BEGIN PRIVATE KEY-----)";
    return nullptr;
  }
  if (pem.find("ENCRYPTED") != std::string::npos) {
    problem =
        "the private key is encrypted; payorchd reads it unencrypted (protect the file "
        "instead: readable only by payorchd, or a systemd credential)";
    return nullptr;
  }
  ERR_clear_error();
  BioPtr bio = memory_bio(pem);
  PkeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, no_passphrase, nullptr));
  if (!key) problem = "is not a readable PEM private key: " + openssl_reason();
  return key;
}

// Reads `key` (a path, expanded and resolved like every *_file) into `out`; reports and
// returns false when it is missing or unreadable.
bool read_file_key(const Section& s, std::string_view key, std::string& path, std::string& out) {
  if (!s.text(key, path, true)) return false;
  std::string problem;
  std::optional<std::string> contents = s.reader().read_secret_file(path, problem);
  if (!contents) {
    s.reader().error(s.mark_of(key), s.path_of(key), problem);
    return false;
  }
  out = std::move(*contents);
  out += '\n';  // read_secret_file trims the final newline PEM ends with
  return true;
}

}  // namespace

void read_tls(const Section& server, std::optional<Tls>& out) {
  const Section s = server.section("tls", {"cert_file", "key_file"}, false);
  if (!s.present()) return;
  Tls tls;
  const bool cert_read = read_file_key(s, "cert_file", tls.cert_file, tls.cert_pem);
  const bool key_read = read_file_key(s, "key_file", tls.key_file, tls.key_pem);
  Reader& r = s.reader();
  std::string problem;
  X509Ptr leaf;
  if (cert_read && !(leaf = leaf_certificate(tls.cert_pem, problem)))
    r.error(s.mark_of("cert_file"), s.path_of("cert_file"), tls.cert_file + " " + problem);
  PkeyPtr key;
  if (key_read && !(key = private_key(tls.key_pem, problem)))
    r.error(s.mark_of("key_file"), s.path_of("key_file"),
            problem.starts_with("the ") ? problem : tls.key_file + " " + problem);
  if (leaf && key && X509_check_private_key(leaf.get(), key.get()) != 1) {
    ERR_clear_error();
    r.error(s.mark_of("key_file"), s.path_of("key_file"),
            "the private key in " + tls.key_file + " does not match the certificate in " +
                tls.cert_file + " (the first certificate there must be the server's own)");
  }
  out = std::move(tls);
}

}  // namespace payorch::config::detail
