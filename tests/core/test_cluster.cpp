// The rules of joining a run across processes: addresses, tokens, versions, names, placement.
#include "core/cluster/address.hpp"
#include "core/cluster/join_check.hpp"
#include "core/cluster/slurm_env.hpp"
#include "core/cluster/token.hpp"
#include "core/errors.hpp"
#include "join_claims.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

using namespace troupe;
using troupe::testing::claim;

TEST_SUITE("cluster") {
  TEST_CASE("HOST:PORT, :PORT and PORT; bad ones are named") {
    auto a = parse_host_port("10.0.0.5:7000", "127.0.0.1", "--listen");
    CHECK(a.host == "10.0.0.5");
    CHECK(a.port == 7000);
    a = parse_host_port(":0", "127.0.0.1", "--listen");
    CHECK(a.host == "127.0.0.1");
    CHECK(a.port == 0);
    CHECK(parse_host_port("4242", "localhost", "--join").host == "localhost");
    CHECK(parse_host_port("[::1]:5", "x", "--join").host == "::1");
    for (const char* bad : {"host:", "host:99999", "host:12a", "", "h:-1", ":"})
      CHECK_THROWS_WITH_AS(parse_host_port(bad, "127.0.0.1", "--join"),
                           doctest::Contains("--join: expected HOST:PORT"), job_error);
    CHECK(is_loopback("127.0.0.1"));
    CHECK(is_loopback("127.1.2.3"));
    CHECK(is_loopback("localhost"));
    CHECK(is_loopback("::1"));
    CHECK_FALSE(is_loopback("0.0.0.0"));
    CHECK_FALSE(is_loopback("10.1.1.1"));
    // A name that begins like a loopback address may resolve anywhere.
    CHECK_FALSE(is_loopback("127.attacker.example"));
    CHECK_FALSE(is_loopback("127.0.0.1.example.com"));
    CHECK(is_loopback("0:0:0:0:0:0:0:1"));
  }

  TEST_CASE("a Slurm host list's first host, ranges and padding kept; bad lists are named") {
    CHECK(first_slurm_host("vm") == "vm");
    CHECK(first_slurm_host("a,b") == "a");
    CHECK(first_slurm_host("node[07-09,12],gpu1") == "node07");
    CHECK(first_slurm_host("rack[3,5]-n[01-02]") == "rack3-n[01-02]");  // one bracket at a time
    CHECK(first_slurm_host("n[12]") == "n12");
    CHECK_THROWS_WITH_AS(first_slurm_host(""), doctest::Contains("no host"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(first_slurm_host("n[01-02"), doctest::Contains("does not close"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(first_slurm_host("n]01["), doctest::Contains("unbalanced"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(first_slurm_host("n[-3]"), doctest::Contains("n[-3]"),
                         std::invalid_argument);
  }

  TEST_CASE("a Slurm step's environment gives the join address, a name, the address, threads") {
    std::map<std::string, std::string> vars;
    const env_lookup env = [&](const char* name) -> const char* {
      const auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
    auto d = slurm_node_defaults_of(env);  // outside Slurm: nothing
    CHECK(d.join.empty());
    CHECK(d.name.empty());
    CHECK(d.threads == 0);
    vars = {{"SLURM_JOB_NODELIST", "node[03-04]"},
            {"TROUPE_PORT", "29517"},
            {"SLURM_PROCID", "5"},
            {"SLURMD_NODENAME", "node04"},
            {"SLURM_CPUS_PER_TASK", "8"}};
    d = slurm_node_defaults_of(env);
    CHECK(d.join == "node03:29517");
    CHECK(d.name == "node04-task5");
    CHECK(d.listen == "node04");
    CHECK(d.threads == 8);
    vars["TROUPE_JOIN"] = "10.0.0.1:7000";  // said outright: it wins
    CHECK(slurm_node_defaults_of(env).join == "10.0.0.1:7000");
    vars.erase("TROUPE_JOIN");
    vars.erase("TROUPE_PORT");
    CHECK_THROWS_WITH_AS(slurm_node_defaults_of(env), doctest::Contains("TROUPE_PORT"),
                         std::invalid_argument);
    vars["TROUPE_PORT"] = "1";
    vars["SLURM_CPUS_PER_TASK"] = "0";
    CHECK_THROWS_WITH_AS(slurm_node_defaults_of(env), doctest::Contains("SLURM_CPUS_PER_TASK"),
                         std::invalid_argument);
    // --threads's bound holds for the environment too (a million was taken).
    vars["SLURM_CPUS_PER_TASK"] = "1000000";
    CHECK_THROWS_WITH_AS(slurm_node_defaults_of(env),
                         "SLURM_CPUS_PER_TASK \"1000000\": a node offers at most 4096 threads",
                         std::invalid_argument);
    vars["SLURM_CPUS_PER_TASK"] = "2";
    vars["SLURM_PROCID"] = "x";
    CHECK_THROWS_WITH_AS(slurm_node_defaults_of(env), doctest::Contains("SLURM_PROCID"),
                         std::invalid_argument);
  }

  TEST_CASE("a join is refused for the token first, then the version, the name, the count") {
    join_terms terms{"0.2.0", "s3cret", {"a"}, 2};
    CHECK(join_refusal(claim("0.2.0", "s3cret", "b", 2), terms).empty());
    CHECK(join_refusal(claim("0.2.0", "nope", "b", 2), terms) ==
          "node \"b\": wrong token (or a join replayed from another connection)");
    CHECK(join_refusal(claim("0.2.0", "", "b", 2), terms) == "node \"b\": no token");
    // A stranger with another version learns about the token, not the version.
    CHECK(join_refusal(claim("0.1.0", "nope", "b", 2), terms) ==
          "node \"b\": wrong token (or a join replayed from another connection)");
    const auto version = join_refusal(claim("0.1.0", "s3cret", "b", 2), terms);
    CHECK(version.find("runs troupe 0.1.0") != std::string::npos);
    CHECK(version.find("this coordinator runs troupe 0.2.0") != std::string::npos);
    CHECK(join_refusal(claim("0.2.0", "s3cret", "a", 2), terms).find("already joined") !=
          std::string::npos);
    CHECK(join_refusal(claim("0.2.0", "s3cret", "b", 0), terms).find("0 threads") !=
          std::string::npos);
    terms.joined.push_back("b");
    CHECK(join_refusal(claim("0.2.0", "s3cret", "c", 1), terms).find("already has its 2") !=
          std::string::npos);
    // Without a coordinator token any token is accepted (loopback only; the CLI enforces it).
    CHECK(join_refusal({"0.2.0", "whatever", "x", 1}, {"0.2.0", "", {}, 1}).empty());
    CHECK(join_refusal({"0.2.0", "", "x", 1}, {"0.2.0", "", {}, 1}).empty());
    // A name off the wire reaches the log escaped and cut, whoever sent it; a node with the
    // token but a name outside the rule is refused for it.
    const std::string forged = "x\n\x1b[2Jerror: " + std::string(150, 'y');
    CHECK(join_refusal(claim("0.2.0", "nope", forged, 2), terms) ==
          "node \"x\\n\\u001b[2Jerror: " + std::string(100, 'y') +
              "... (163 characters): wrong token (or a join replayed from another connection)");
    CHECK(join_refusal(claim("0.2.0", "s3cret", "a b", 2), terms) ==
          "node \"a b\": a node name holds only A-Z a-z 0-9 . _ - and starts with a letter or a "
          "digit");
    CHECK(join_refusal(claim("0.2.0", "s3cret", "", 2), terms) == "a node without a name");
    CHECK(join_refusal(claim("0.2.0", "s3cret", std::string(129, 'n'), 2), terms)
              .find("a node name has at most 128 characters") != std::string::npos);
    CHECK(node_name_problem("vm-1234.example_net").empty());
    CHECK(node_name_problem(std::string(128, 'n')).empty());
    CHECK(!node_name_problem("-a").empty());
    CHECK(!node_name_problem("../x").empty());
    CHECK(join_refusal(claim("0.2.0", "s3cret", "a\"b\\c", 2), terms) ==
          "node \"a\\\"b\\\\c\": a node name holds only A-Z a-z 0-9 . _ - and starts with a "
          "letter or a digit");
    CHECK(same_secret("abc", "abc"));
    CHECK_FALSE(same_secret("abc", "abd"));
    CHECK_FALSE(same_secret("abc", "abcd"));
  }

  TEST_CASE("a join proves the token over a fresh challenge: captured bytes replayed do not") {
    // Issue 39, row 13: node a's join, captured on a plaintext link and replayed, took a's slot.
    // The join holds a proof over the challenge a's connection was given, not the token.
    join_terms terms{"0.2.0", "s3cret", {}, 2};
    const auto first = new_challenge();
    const auto second = new_challenge();
    CHECK(first.size() == 64);
    CHECK(first != second);
    const join_claim captured{"0.2.0", join_proof("s3cret", first, "a"), "a", 1, "", first};
    CHECK(join_refusal(captured, terms).empty());
    CHECK(captured.proof.find("s3cret") == std::string::npos);
    // Replayed on a connection given another challenge, or none: refused.
    auto replayed = captured;
    replayed.challenge = second;
    CHECK(join_refusal(replayed, terms) ==
          "node \"a\": wrong token (or a join replayed from another connection)");
    replayed.challenge = "";
    CHECK(join_refusal(replayed, terms) ==
          "node \"a\": it answered no challenge (a replayed or forged join)");
    // The proof binds the name: it does not let the sender in under another.
    auto renamed = captured;
    renamed.name = "b";
    CHECK(join_refusal(renamed, terms) ==
          "node \"b\": wrong token (or a join replayed from another connection)");
    // HMAC-SHA256 of "CHALLENGE\nNAME" keyed with the token, as Python's hmac computes it.
    CHECK(join_proof("Jefe", "what do ya want", "for nothing?") ==
          "50ff9fd552ba6f7d7aea9a88e93f2ebee2870bf860cfd7a2b6cf2cbbed92a13e");
  }

  TEST_CASE("replicas go to nodes in contiguous, even blocks") {
    CHECK(place_replicas(4, 2) == std::vector<int64_t>{0, 0, 1, 1});
    CHECK(place_replicas(5, 3) == std::vector<int64_t>{0, 0, 1, 1, 2});
    CHECK(place_replicas(3, 3) == std::vector<int64_t>{0, 1, 2});
    CHECK_THROWS_AS(place_replicas(1, 2), std::invalid_argument);
  }

  TEST_CASE("the token comes from a file or TROUPE_TOKEN; an unusable file is named") {
    const auto dir = std::filesystem::temp_directory_path() / "troupe_token_test";
    std::filesystem::create_directories(dir);
    const auto file = (dir / "token").string();
    std::ofstream(file) << "  s3cret \nsecond line\n";
    CHECK(load_token(file) == "s3cret");
    std::ofstream(file) << "\n";
    CHECK_THROWS_WITH_AS(load_token(file), doctest::Contains("holds no token"), job_error);
    CHECK_THROWS_WITH_AS(load_token((dir / "missing").string()), doctest::Contains("cannot open"),
                         job_error);
    CHECK_THROWS_WITH_AS(load_token(dir.string()), doctest::Contains("Is a directory"), job_error);
    CHECK_THROWS_WITH_AS(load_token("/dev/zero"),
                         doctest::Contains("longer than 64 KiB, more than a token file holds"),
                         job_error);
    ::setenv(token_variable, "from-env", 1);
    CHECK(load_token("") == "from-env");
    ::unsetenv(token_variable);
    CHECK(load_token("").empty());
    std::filesystem::remove_all(dir);
  }
}
