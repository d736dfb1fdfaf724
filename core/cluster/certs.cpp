#include "core/cluster/certs.hpp"

#include "core/errors.hpp"
#include "core/io/regular_file.hpp"

#include <fcntl.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>

namespace troupe {
namespace {

namespace fs = std::filesystem;

template <class T, void (*Free)(T*)>
struct openssl_free {
  void operator()(T* p) const { Free(p); }
};
using key_ptr = std::unique_ptr<EVP_PKEY, openssl_free<EVP_PKEY, EVP_PKEY_free>>;
using cert_ptr = std::unique_ptr<X509, openssl_free<X509, X509_free>>;
using bio_ptr = std::unique_ptr<BIO, openssl_free<BIO, BIO_free_all>>;
using bignum_ptr = std::unique_ptr<BIGNUM, openssl_free<BIGNUM, BN_free>>;
using extension_ptr =
    std::unique_ptr<X509_EXTENSION, openssl_free<X509_EXTENSION, X509_EXTENSION_free>>;

// OpenSSL's queued errors as one line (and the queue emptied, so they do not leak into the next
// call's report).
std::string openssl_errors() {
  std::string out;
  while (const auto e = ERR_get_error()) {
    const char* reason = ERR_reason_error_string(e);
    out += (out.empty() ? "" : "; ") + std::string(reason != nullptr ? reason : "unknown error");
  }
  return out.empty() ? "unknown OpenSSL error" : out;
}

[[noreturn]] void fail(const std::string& what) {
  throw job_error({what});
}

void require(bool ok, const std::string& what) {
  if (!ok)
    fail(what + ": " + openssl_errors());
}

// P-256: TLS 1.3's default curve; its keys and signatures are small and quick to check, which
// matters when every connection handshakes.
key_ptr new_key() {
  key_ptr key(EVP_EC_gen("P-256"));
  require(key != nullptr, "cannot make a key");
  return key;
}

void add_extension(X509* cert, X509V3_CTX* ctx, int nid, const char* value) {
  extension_ptr ext(X509V3_EXT_conf_nid(nullptr, ctx, nid, value));
  require(ext != nullptr && X509_add_ext(cert, ext.get(), -1) == 1, "cannot add an extension");
}

// A certificate for `key` named `cn`, signed by `issuer_key` (self-signed when `issuer` is null).
cert_ptr make_certificate(EVP_PKEY* key, const std::string& cn, X509* issuer, EVP_PKEY* issuer_key,
                          bool authority, int days) {
  cert_ptr cert(X509_new());
  bignum_ptr serial(BN_new());
  require(cert && serial && X509_set_version(cert.get(), 2) == 1 &&
              BN_rand(serial.get(), 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) == 1 &&
              BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(cert.get())) != nullptr,
          "cannot make a certificate");
  // Valid from an hour ago: the clocks of a cluster's machines differ a little.
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 86400L * days);
  X509_NAME* name = X509_get_subject_name(cert.get());
  const auto* text = reinterpret_cast<const unsigned char*>(cn.c_str());
  require(X509_set_pubkey(cert.get(), key) == 1 &&
              X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
                                         reinterpret_cast<const unsigned char*>("troupe"), -1, -1,
                                         0) == 1 &&
              X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, text, -1, -1, 0) == 1 &&
              X509_set_issuer_name(cert.get(), issuer ? X509_get_subject_name(issuer) : name) == 1,
          "cannot name a certificate");
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer ? issuer : cert.get(), cert.get(), nullptr, nullptr, 0);
  add_extension(cert.get(), &ctx, NID_basic_constraints,
                authority ? "critical,CA:TRUE,pathlen:0" : "critical,CA:FALSE");
  add_extension(cert.get(), &ctx, NID_key_usage,
                authority ? "critical,keyCertSign,cRLSign" : "critical,digitalSignature");
  // Every process both connects and accepts (a node accepts its ring neighbour).
  if (!authority)
    add_extension(cert.get(), &ctx, NID_ext_key_usage, "serverAuth,clientAuth");
  add_extension(cert.get(), &ctx, NID_subject_key_identifier, "hash");
  add_extension(cert.get(), &ctx, NID_authority_key_identifier, "keyid:always");
  require(X509_sign(cert.get(), issuer_key, EVP_sha256()) > 0, "cannot sign a certificate");
  return cert;
}

template <class Write>
std::string to_pem(Write write) {
  bio_ptr bio(BIO_new(BIO_s_mem()));
  require(bio && write(bio.get()) == 1, "cannot write PEM");
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(size));
}

// O_EXCL: an existing file is never replaced, not even by a race with another `certs` command.
void write_new_file(const std::string& path, const std::string& text, mode_t mode) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0)
    fail(path + ": cannot create: " + std::strerror(errno));
  bool ok = ::fchmod(fd, mode) == 0;
  for (std::size_t done = 0; ok && done < text.size();) {
    const auto n = ::write(fd, text.data() + done, text.size() - done);
    ok = n > 0;
    done += ok ? static_cast<std::size_t>(n) : 0;
  }
  ok = ::close(fd) == 0 && ok;
  if (!ok) {
    const std::string why = std::strerror(errno);
    ::unlink(path.c_str());
    fail(path + ": cannot write: " + why);
  }
}

// The key first (0600), then the certificate; a certificate that cannot be written takes its
// key with it, so a failed command leaves nothing half made.
void write_pair(const std::string& key_path, EVP_PKEY* key, const std::string& cert_path,
                X509* cert) {
  for (const auto& path : {key_path, cert_path})
    if (fs::exists(path))
      fail(path + " exists: troupe never overwrites a key or a certificate");
  const auto key_pem = to_pem([key](BIO* b) {
    return PEM_write_bio_PrivateKey(b, key, nullptr, nullptr, 0, nullptr, nullptr);
  });
  const auto cert_pem = to_pem([cert](BIO* b) { return PEM_write_bio_X509(b, cert); });
  write_new_file(key_path, key_pem, 0600);
  try {
    write_new_file(cert_path, cert_pem, 0644);
  } catch (...) {
    ::unlink(key_path.c_str());
    throw;
  }
}

bio_ptr open_file(const std::string& path) {
  if (!fs::exists(path))
    fail(path + ": missing");
  // OpenSSL's fopen would wait for a writer on a pipe put in a file's place (silently, for
  // ever), and say "unknown error; system lib" of a file it may not read.
  try {
    regular_file checked(path);
  } catch (const std::runtime_error& e) {
    fail(e.what());
  }
  bio_ptr bio(BIO_new_file(path.c_str(), "r"));
  if (!bio)
    fail(path + ": cannot read: " + openssl_errors());
  return bio;
}

cert_ptr read_certificate(const std::string& path) {
  cert_ptr cert(PEM_read_bio_X509(open_file(path).get(), nullptr, nullptr, nullptr));
  if (!cert)
    fail(path + ": not a PEM certificate (" + openssl_errors() + ")");
  return cert;
}

key_ptr read_key(const std::string& path) {
  key_ptr key(PEM_read_bio_PrivateKey(open_file(path).get(), nullptr, nullptr, nullptr));
  if (!key)
    fail(path + ": not an unencrypted PEM private key (" + openssl_errors() + ")");
  return key;
}

std::string problem_of(const tls_files& files, const std::string& name) {
  const auto ca = read_certificate(files.ca);
  const auto cert = read_certificate(files.certificate);
  const auto key = read_key(files.key);
  if (X509_check_ca(ca.get()) == 0)
    return files.ca + " is not a CA's certificate";
  if (X509_verify(cert.get(), X509_get0_pubkey(ca.get())) != 1) {
    ERR_clear_error();
    return files.certificate + " is not signed by the CA in " + files.ca;
  }
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    ERR_clear_error();
    return files.key + " is not the key of " + files.certificate;
  }
  if (const auto cn = subject_common_name(cert.get()); cn != name)
    return files.certificate + " names \"" + cn + "\", not \"" + name + "\"";
  for (X509* c : {ca.get(), cert.get()}) {
    const auto path = c == ca.get() ? files.ca : files.certificate;
    if (X509_cmp_current_time(X509_get0_notAfter(c)) < 0)
      return path + " has expired";
    if (X509_cmp_current_time(X509_get0_notBefore(c)) > 0)
      return path + " is not valid yet";
  }
  return "";
}

}  // namespace

tls_files tls_files_in(const std::string& dir, const std::string& name) {
  return {dir + "/ca.pem", dir + "/" + name + ".pem", dir + "/" + name + ".key"};
}

bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
}

std::string certificate_name_problem(const std::string& name) {
  const auto quoted = "\"" + name + "\"";
  if (name.empty() || name.size() > 64)
    return "a certificate name has 1 to 64 characters, got " + quoted;
  if (name == "ca")
    return "\"ca\" names the CA's own files";
  if (!std::isalnum(static_cast<unsigned char>(name.front())))
    return quoted + ": a certificate name starts with a letter or a digit";
  if (!std::all_of(name.begin(), name.end(), is_name_char))
    return quoted + ": a certificate name holds only A-Z a-z 0-9 . _ -";
  return "";
}

void make_authority(const std::string& dir, int days) {
  std::error_code ec;
  if (fs::create_directories(dir, ec))
    fs::permissions(dir, fs::perms::owner_all, ec);
  if (!fs::is_directory(dir))
    fail(dir + ": cannot create the directory" + (ec ? ": " + ec.message() : std::string()));
  const auto key = new_key();
  const auto cert =
      make_certificate(key.get(), "troupe cluster CA", nullptr, key.get(), true, days);
  write_pair(dir + "/ca.key", key.get(), dir + "/ca.pem", cert.get());
}

void issue_certificate(const std::string& dir, const std::string& name, int days) {
  if (const auto problem = certificate_name_problem(name); !problem.empty())
    fail(problem);
  if (fs::exists(dir) && !fs::is_directory(dir))
    fail(dir + ": not a folder (a CA's folder holds ca.pem and ca.key)");
  if (!fs::exists(dir + "/ca.key"))
    fail(dir + "/ca.key: missing: make a CA with `troupe certs init " + dir +
         "` (or issue where the CA's key is kept)");
  const auto ca = read_certificate(dir + "/ca.pem");
  const auto ca_key = read_key(dir + "/ca.key");
  // Another CA's key signs certificates no node of this CA accepts, found only where they are
  // used.
  if (X509_check_private_key(ca.get(), ca_key.get()) != 1)
    fail(dir + "/ca.key: not the key of " + dir + "/ca.pem (another CA's?)");
  const auto key = new_key();
  const auto cert = make_certificate(key.get(), name, ca.get(), ca_key.get(), false, days);
  const auto files = tls_files_in(dir, name);
  write_pair(files.key, key.get(), files.certificate, cert.get());
}

std::string subject_common_name(X509* cert) {
  X509_NAME* name = X509_get_subject_name(cert);
  const int i = X509_NAME_get_index_by_NID(name, NID_commonName, -1);
  if (i < 0)
    return "";
  unsigned char* utf8 = nullptr;
  const int size =
      ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, i)));
  if (size < 0)
    return "";
  std::string out(reinterpret_cast<char*>(utf8), static_cast<std::size_t>(size));
  OPENSSL_free(utf8);
  return out;
}

std::string certificate_subject(const std::string& path) {
  return subject_common_name(read_certificate(path).get());
}

std::string tls_files_problem(const tls_files& files, const std::string& name) {
  try {
    return problem_of(files, name);
  } catch (const job_error& e) {
    return e.what();
  }
}

}  // namespace troupe
