// tls.cpp: server.tls, its PEM files read and checked at load, each fault named at its line.
#include <doctest/doctest.h>

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "config/config_fixture.h"
#include "support/process.h"
#include "support/test_cert.h"

namespace payorch::config {

using namespace payorch::test;

namespace {

// valid_yaml with a server.tls section; `tls_lines` are its keys, four spaces in.
std::string with_tls(std::string_view tls_lines) {
  return edit(valid_yaml, "  max_body_bytes: 65536\n",
              "  max_body_bytes: 65536\n  tls:\n" + std::string(tls_lines));
}

// The key of `cert` as an encrypted PKCS#8 PEM.
std::string encrypted_key(const test::TestCert& cert) {
  std::unique_ptr<BIO, decltype(&BIO_free)> in(
      BIO_new_mem_buf(cert.key_pem.data(), static_cast<int>(cert.key_pem.size())), &BIO_free);
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(
      PEM_read_bio_PrivateKey(in.get(), nullptr, nullptr, nullptr), &EVP_PKEY_free);
  REQUIRE(key);
  std::unique_ptr<BIO, decltype(&BIO_free)> out(BIO_new(BIO_s_mem()), &BIO_free);
  char pass[] = "passphrase";
  REQUIRE(PEM_write_bio_PKCS8PrivateKey(out.get(), key.get(), EVP_aes_256_cbc(), pass,
                                        static_cast<int>(sizeof pass - 1), nullptr, nullptr) == 1);
  char* data = nullptr;
  const long len = BIO_get_mem_data(out.get(), &data);
  return std::string(data, static_cast<std::size_t>(len));
}

}  // namespace

TEST_CASE("config: server.tls reads its PEM files relative to the config file's folder") {
  TempDir dir("payorch-config");
  const test::TestCert cert = test::make_self_signed_cert("IP:127.0.0.1");
  dir.write("etc/tls/server.crt", cert.cert_pem);
  const std::string key_path = dir.write("keys/server.key", cert.key_pem);
  const std::string yaml =
      with_tls("    cert_file: tls/server.crt\n    key_file: " + key_path + "\n");
  const Config c = load(dir.write("etc/payorch.yaml", yaml));
  REQUIRE(c.server.tls.has_value());
  CHECK(c.server.tls->cert_file == "tls/server.crt");
  CHECK(c.server.tls->key_file == key_path);
  CHECK(c.server.tls->cert_pem == cert.cert_pem);
  CHECK(c.server.tls->key_pem == cert.key_pem);

  // Without the section (or with an empty one) the listener is plain HTTP.
  CHECK_FALSE(load_ok(valid_yaml).server.tls.has_value());
  CHECK_FALSE(load_ok(with_tls("")).server.tls.has_value());
}

TEST_CASE("config: server.tls files may come from ${CREDENTIALS_DIRECTORY}") {
  TempDir dir("payorch-config");
  const test::TestCert cert = test::make_self_signed_cert("IP:127.0.0.1");
  dir.write("creds/tls.crt", cert.cert_pem);
  dir.write("creds/tls.key", cert.key_pem);
  const ScopedEnv env("CREDENTIALS_DIRECTORY", dir.path() + "/creds");
  const std::vector<std::string> errors = errors_of(
      with_tls("    cert_file: ${CREDENTIALS_DIRECTORY}/tls.crt\n"
               "    key_file: ${CREDENTIALS_DIRECTORY}/tls.key\n"));
  CHECK_MESSAGE(errors.empty(), joined(errors));
}

TEST_CASE("config: server.tls errors name the line of the file at fault") {
  TempDir dir("payorch-config");
  const test::TestCert cert = test::make_self_signed_cert("IP:127.0.0.1");
  const test::TestCert other = test::make_self_signed_cert("IP:127.0.0.1");
  dir.write("cert.pem", cert.cert_pem);
  dir.write("key.pem", cert.key_pem);
  dir.write("other.key", other.key_pem);
  dir.write("encrypted.key", encrypted_key(cert));
  dir.write("garbage.pem", "-----BEGIN CERTIFICATE-----\nnot base64 at all!\n-----END CERTIFICATE-----\n");
  dir.write("garbage.key", "-----BEGIN PRIVATE KEY-----\n!!\n-----END PRIVATE KEY-----\n");
  dir.write("chain.pem", cert.cert_pem + other.cert_pem + "-----BEGIN CERTIFICATE-----\n!!\n-----END CERTIFICATE-----\n");
  std::filesystem::create_directories(dir.path() + "/a-directory");

  // (tls lines, the line to blame, the message)
  struct Case {
    std::string lines;
    std::string_view needle;
    std::string message;
  };
  const Case cases[] = {
      {"    cert_file: missing.pem\n    key_file: key.pem\n", "missing.pem",
       "server.tls.cert_file: cannot read " + dir.path() + "/missing.pem: No such file or directory"},
      {"    cert_file: cert.pem\n    key_file: a-directory\n", "a-directory",
       "server.tls.key_file: cannot read " + dir.path() + "/a-directory: Is a directory"},
      {"    cert_file: cert.pem\n    key_file: other.key\n", "other.key",
       "server.tls.key_file: the private key in other.key does not match the certificate in "
       "cert.pem"},
      {"    cert_file: key.pem\n    key_file: key.pem\n", "cert_file",
       "server.tls.cert_file: key.pem holds no PEM certificate"},
      {"    cert_file: cert.pem\n    key_file: cert.pem\n", "key_file",
       "server.tls.key_file: cert.pem holds no PEM private key"},
      {"    cert_file: garbage.pem\n    key_file: key.pem\n", "garbage.pem",
       "server.tls.cert_file: garbage.pem is not a readable PEM certificate"},
      {"    cert_file: cert.pem\n    key_file: garbage.key\n", "garbage.key",
       "server.tls.key_file: garbage.key is not a readable PEM private key"},
      {"    cert_file: chain.pem\n    key_file: key.pem\n", "chain.pem",
       "server.tls.cert_file: chain.pem certificate 3 is not readable"},
      {"    cert_file: cert.pem\n    key_file: encrypted.key\n", "encrypted.key",
       "server.tls.key_file: the private key is encrypted"},
      {"    cert_file: cert.pem\n", "  tls:", "server.tls.key_file: missing required key"},
      {"    cert_file: cert.pem\n    key_file: key.pem\n    key_pass: x\n", "key_pass",
       "server.tls.key_pass: unknown key 'key_pass'; expected one of: cert_file key_file"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.lines);
    const std::string yaml = with_tls(c.lines);
    const std::string path = dir.write("payorch.yaml", yaml);
    const std::vector<std::string> errors = errors_of(yaml, path);
    const std::string prefix = line_prefix(path, yaml, c.needle);
    CHECK_MESSAGE(has_error(errors, prefix, c.message),
                  "expected \"" << prefix << " ... " << c.message << "\" among:\n" << joined(errors));
    CHECK(errors.size() == 1);
  }
}

}  // namespace payorch::config
