// A cluster's certificates (core/cluster/certs): a CA, keys and certificates made with OpenSSL's
// library, files never overwritten, keys private; the checks a process runs on its TLS files;
// the join rules that bind a node's name to its certificate; the largest message of a run.
#include "core/cluster/certs.hpp"
#include "core/cluster/join_check.hpp"
#include "core/cluster/link_limits.hpp"
#include "core/errors.hpp"
#include "join_claims.hpp"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

using namespace troupe;
using troupe::testing::claim;

namespace {

namespace fs = std::filesystem;

// A fresh directory, removed with the object.
struct temp_dir {
  std::string path;
  temp_dir() {
    path = (fs::temp_directory_path() / "troupe-certs-XXXXXX").string();
    REQUIRE(::mkdtemp(path.data()) != nullptr);
  }
  ~temp_dir() { fs::remove_all(path); }
};

unsigned mode_of(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_mode & 0777;
}

std::string file_text(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_SUITE("certs") {
  TEST_CASE("init makes a CA, issue makes keys and certificates naming their process") {
    temp_dir tmp;
    const auto dir = tmp.path + "/cluster";
    make_authority(dir);
    CHECK((mode_of(dir) & 0077) == 0);  // created private
    CHECK(mode_of(dir + "/ca.key") == 0600);
    CHECK(certificate_subject(dir + "/ca.pem") == "troupe cluster CA");
    issue_certificate(dir, "coordinator");
    issue_certificate(dir, "gpu-box.1");
    for (const auto* name : {"coordinator", "gpu-box.1"}) {
      const auto files = tls_files_in(dir, name);
      CHECK(files.ca == dir + "/ca.pem");
      CHECK(files.certificate == dir + "/" + name + ".pem");
      CHECK(mode_of(files.key) == 0600);
      CHECK(certificate_subject(files.certificate) == name);
      CHECK(tls_files_problem(files, name).empty());
    }
    // Keys differ: each call makes a new one.
    CHECK(file_text(dir + "/coordinator.key") != file_text(dir + "/gpu-box.1.key"));
  }

  TEST_CASE("nothing is overwritten, and a failed command leaves nothing behind") {
    temp_dir tmp;
    make_authority(tmp.path);
    const auto ca = file_text(tmp.path + "/ca.pem");
    CHECK_THROWS_WITH_AS(make_authority(tmp.path), doctest::Contains("ca.key exists"), job_error);
    CHECK(file_text(tmp.path + "/ca.pem") == ca);
    issue_certificate(tmp.path, "a");
    const auto key = file_text(tmp.path + "/a.key");
    CHECK_THROWS_WITH_AS(issue_certificate(tmp.path, "a"), doctest::Contains("never overwrites"),
                         job_error);
    CHECK(file_text(tmp.path + "/a.key") == key);
    // A certificate alone in the way: its key is not written either.
    std::ofstream(tmp.path + "/b.pem") << "in the way";
    CHECK_THROWS_AS(issue_certificate(tmp.path, "b"), job_error);
    CHECK_FALSE(fs::exists(tmp.path + "/b.key"));
  }

  TEST_CASE("names are checked before anything is made") {
    CHECK(certificate_name_problem("node-1").empty());
    CHECK(certificate_name_problem("A.b_c-9").empty());
    for (const auto* bad : {"", "ca", "-x", ".hidden", "a/b", "../up", "a b", "é"})
      CHECK_FALSE(certificate_name_problem(bad).empty());
    CHECK_FALSE(certificate_name_problem(std::string(65, 'a')).empty());
    temp_dir tmp;
    make_authority(tmp.path);
    CHECK_THROWS_AS(issue_certificate(tmp.path, "../escape"), job_error);
    CHECK_FALSE(fs::exists(fs::path(tmp.path).parent_path() / "escape.key"));
  }

  TEST_CASE("issue needs the CA's key") {
    temp_dir tmp;
    CHECK_THROWS_WITH_AS(issue_certificate(tmp.path, "a"), doctest::Contains("troupe certs init"),
                         job_error);
    make_authority(tmp.path);
    fs::remove(tmp.path + "/ca.key");
    CHECK_THROWS_WITH_AS(issue_certificate(tmp.path, "a"), doctest::Contains("ca.key: missing"),
                         job_error);
    // Another CA's key: its certificates would fail only where they are used.
    const auto other = tmp.path + "/other";
    make_authority(other);
    fs::copy_file(other + "/ca.key", tmp.path + "/ca.key");
    CHECK_THROWS_WITH_AS(issue_certificate(tmp.path, "a"),
                         doctest::Contains("ca.key: not the key of"), job_error);
    CHECK_FALSE(fs::exists(tmp.path + "/a.key"));
  }

  TEST_CASE("a process's files must be its own and signed by its CA") {
    temp_dir tmp;
    const auto ours = tmp.path + "/ours", theirs = tmp.path + "/theirs";
    make_authority(ours);
    make_authority(theirs);
    issue_certificate(ours, "a");
    issue_certificate(ours, "b");
    issue_certificate(theirs, "x");
    CHECK(tls_files_problem(tls_files_in(ours, "a"), "a").empty());
    // Another name than the certificate's.
    CHECK(tls_files_problem(tls_files_in(ours, "a"), "b").find("names \"a\", not \"b\"") !=
          std::string::npos);
    // Another CA's certificate.
    auto files = tls_files_in(theirs, "x");
    files.ca = ours + "/ca.pem";
    CHECK(tls_files_problem(files, "x").find("is not signed by the CA") != std::string::npos);
    // A key that is not the certificate's.
    files = tls_files_in(ours, "a");
    files.key = ours + "/b.key";
    CHECK(tls_files_problem(files, "a").find("is not the key of") != std::string::npos);
    // Missing or garbage files are named.
    CHECK(tls_files_problem(tls_files_in(ours, "c"), "c").find("c.pem: missing") !=
          std::string::npos);
    std::ofstream(ours + "/junk.pem") << "-----BEGIN CERTIFICATE-----\nnope\n";
    files.certificate = ours + "/junk.pem";
    CHECK(tls_files_problem(files, "a").find("not a PEM certificate") != std::string::npos);
    // A leaf is no CA.
    files = tls_files_in(ours, "a");
    files.ca = ours + "/b.pem";
    CHECK(tls_files_problem(files, "a").find("not a CA") != std::string::npos);
    // A pipe or a folder in a file's place is named, never opened (OpenSSL waited on the pipe
    // for a writer, for ever).
    files = tls_files_in(ours, "a");
    files.ca = ours + "/pipe.pem";
    REQUIRE(::mkfifo(files.ca.c_str(), 0600) == 0);
    CHECK(tls_files_problem(files, "a").find("pipe.pem: not a regular file (a pipe)") !=
          std::string::npos);
    files.ca = ours;
    CHECK(tls_files_problem(files, "a").find(": not a regular file (a folder)") !=
          std::string::npos);
  }

  TEST_CASE("with certificates a node joins under its certificate's name, never as coordinator") {
    join_terms terms{"0.2.0", "s3cret", {}, 2, true};
    CHECK(join_refusal(claim("0.2.0", "s3cret", "a", 1, "a"), terms).empty());
    CHECK(join_refusal(claim("0.2.0", "s3cret", "b", 1, "a"), terms) ==
          "node \"b\": its connection presented the certificate of \"a\"");
    CHECK(join_refusal(claim("0.2.0", "s3cret", "b", 1, ""), terms) ==
          "node \"b\": its connection presented no certificate");
    CHECK(join_refusal(claim("0.2.0", "s3cret", "coordinator", 1, "coordinator"), terms) ==
          "node \"coordinator\": that name is the coordinator's");
    // The token still comes first.
    CHECK(join_refusal(claim("0.2.0", "nope", "b", 1, "a"), terms) ==
          "node \"b\": wrong token (or a join replayed from another connection)");
    // Without TLS there is no certificate to compare.
    terms.certificates = false;
    CHECK(join_refusal(claim("0.2.0", "s3cret", "b", 1, ""), terms).empty());
  }

  TEST_CASE("the largest message: three weight buffers or a bucket, the job, 1 MiB of framing") {
    const uint64_t mib = 1 << 20;
    // 1M float32 parameters: a checkpoint part's weights and Adam's two moments, 12 MB.
    CHECK(largest_message_bytes(1000000, 1, 0) == 12000000 + mib);
    // A bucket larger than the model.
    CHECK(largest_message_bytes(10, 4, 0) == 4 * mib + mib);
    CHECK(largest_message_bytes(10, 0.05, 3000) ==
          static_cast<uint64_t>(0.05 * mib + 1) + 3000 + mib);
    CHECK(largest_message_bytes(0, 0, 0) == mib);
    link_limits defaults;
    CHECK(defaults.max_message_bytes == pre_join_message_bytes);
  }
}
