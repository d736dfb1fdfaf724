// A cluster's certificates, made with OpenSSL's library (no openssl command needed): a CA of its
// own, and for each process a key and a certificate the CA signed, whose subject (CN) is the
// process's name. Connections between troupe processes are mutual TLS: each side presents its
// certificate and accepts only peers whose certificate the same CA signed
// (actors/links/tls_session.hpp).
//
// Layout of a certificate directory (`troupe certs init DIR`, `troupe certs issue DIR NAME`):
//   DIR/ca.pem     the CA's certificate: every process needs it
//   DIR/ca.key     the CA's key (0600): only `certs issue` needs it; keep it off the nodes
//   DIR/NAME.pem   NAME's certificate, subject CN=NAME, signed by the CA
//   DIR/NAME.key   NAME's key (0600)
// The coordinator's certificate is named "coordinator"; nodes check that name before they send
// their token, and no node may take it.
//
// Every function is safe to call from any thread; none keeps state.
#pragma once

#include <string>

struct x509_st;  // OpenSSL's X509

namespace troupe {

/// The files one process presents and trusts.
struct tls_files {
  std::string ca;           ///< PEM: the cluster's CA certificate
  std::string certificate;  ///< PEM: this process's certificate, signed by the CA
  std::string key;          ///< PEM: its private key
};

/// The name on the coordinator's certificate, reserved for it.
inline const char* coordinator_name = "coordinator";

/// DIR/ca.pem, DIR/NAME.pem and DIR/NAME.key.
tls_files tls_files_in(const std::string& dir, const std::string& name);

/// Why `name` cannot name a certificate (and a file in the directory), or "". A name is 1 to 64
/// of A-Z a-z 0-9 . _ -, starts with a letter or a digit, and is not "ca".
std::string certificate_name_problem(const std::string& name);

/// Whether `c` may be in a certificate's or a node's name (core/cluster/join_check): A-Z a-z 0-9
/// . _ -, what a host name holds and a file name may.
bool is_name_char(char c);

/// Makes a CA in `dir` (created with mode 0700 when missing): ca.key (mode 0600) and ca.pem,
/// valid for `days`. Throws job_error naming the file when either exists: nothing is overwritten.
void make_authority(const std::string& dir, int days = 3650);

/// Issues NAME.key (0600) and NAME.pem, signed by the CA in `dir`, valid for `days`, usable to
/// connect and to accept. Throws job_error for a bad name, a missing CA, or a file that exists.
void issue_certificate(const std::string& dir, const std::string& name, int days = 825);

/// The subject CN of the PEM certificate in `path`; throws job_error when it cannot be read.
std::string certificate_subject(const std::string& path);

/// The subject CN of a certificate OpenSSL holds ("" when it names none).
std::string subject_common_name(x509_st* cert);

/// Why process `name` cannot use `files`, or "": each file readable, the certificate signed by
/// the CA, the key the certificate's, the certificate's CN `name`, and the certificate valid now.
std::string tls_files_problem(const tls_files& files, const std::string& name);

}  // namespace troupe
