// Text troupe reads or writes whole: the hex codec (core/io/hex), files that should be small,
// read up to a limit (core/io/whole_file's read_small_file), files read whole only as regular
// files within a bound (read_whole_file, core/io/regular_file), and JSON a user can edit, parsed
// only as deep as troupe's own (core/io/shallow_json).
#include "core/errors.hpp"
#include "core/io/hex.hpp"
#include "core/io/regular_file.hpp"
#include "core/io/shallow_json.hpp"
#include "core/io/whole_file.hpp"
#include "core/metrics/jsonl_lines.hpp"
#include "temp_folder.hpp"

#include <doctest/doctest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

using namespace troupe;

TEST_SUITE("checkpoint") {
  TEST_CASE("hex text: every byte round-trips; what is not whole hex bytes is refused by name") {
    std::string all;
    for (int b = 0; b < 256; ++b)
      all += static_cast<char>(b);
    const auto hex = to_hex(all);
    CHECK(hex.size() == 512);
    CHECK(hex.substr(0, 6) == "000102");
    CHECK(hex.substr(506) == "fdfeff");
    CHECK(from_hex(hex) == all);
    CHECK(from_hex("ABcd") == "\xab\xcd");
    CHECK(to_hex("") == "");
    CHECK_THROWS_WITH_AS(from_hex("abc"), "hex text of 3 digits: not whole bytes",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(from_hex("00zz"), "hex text holds 'zz' at 2: not hex digits",
                         std::invalid_argument);
  }

  TEST_CASE("a small file is read whole up to its limit; past it, or unopenable, it is refused") {
    const auto path = std::filesystem::temp_directory_path() / "troupe_small_file.txt";
    std::ofstream(path) << std::string(100 * 1024, 'x');
    CHECK(read_small_file(path.string(), 100 * 1024).size() == 100 * 1024);
    CHECK_THROWS_WITH_AS(read_small_file(path.string(), 100 * 1024 - 1), "longer than 99 KiB",
                         std::length_error);
    CHECK_THROWS_WITH_AS(read_small_file("/dev/zero", std::size_t{2} << 20), "longer than 2 MiB",
                         std::length_error);
    std::ofstream(path) << "";
    CHECK(read_small_file(path.string(), 10).empty());
    std::filesystem::remove(path);
    CHECK_THROWS_WITH_AS(read_small_file(path.string(), 10),
                         "cannot open: No such file or directory", std::runtime_error);
    CHECK_THROWS_WITH_AS(read_small_file(path.parent_path().string(), 10),
                         "cannot read: Is a directory", std::runtime_error);
    // A named pipe with no writer: refused at once (it held open() for ever), while a pipe
    // with its writer is read (`troupe validate <(make-job)`).
    temp_folder t;
    const auto pipe = (t.path / "pipe").string();
    REQUIRE(::mkfifo(pipe.c_str(), 0600) == 0);
    CHECK_THROWS_WITH_AS(read_small_file(pipe, 10), "a pipe that no program writes to",
                         std::runtime_error);
  }

  // Found probing as a hostile user: a data or model path naming a pipe waited in open() for a
  // writer that never came, and an image file of gigabytes was read whole before its signature.
  TEST_CASE("a whole file is read only when it is a regular file within its bound") {
    temp_folder t;
    t.write("ten", "0123456789");
    const auto ten = (t.path / "ten").string();
    CHECK(read_whole_file(ten) == "0123456789");
    CHECK(read_whole_file(ten, 10) == "0123456789");
    CHECK_THROWS_WITH_AS(read_whole_file(ten, 9),
                         (ten + ": 10 bytes, more than the 9 such a file may hold").c_str(),
                         std::length_error);
    const auto pipe = (t.path / "pipe").string();
    REQUIRE(::mkfifo(pipe.c_str(), 0600) == 0);
    CHECK_THROWS_WITH_AS(read_whole_file(pipe), (pipe + ": not a regular file (a pipe)").c_str(),
                         std::runtime_error);
    CHECK_THROWS_WITH_AS(read_whole_file(t.path.string()),
                         (t.path.string() + ": not a regular file (a folder)").c_str(),
                         std::runtime_error);
    CHECK_THROWS_WITH_AS(read_whole_file("/dev/zero"),
                         "/dev/zero: not a regular file (a device or socket)", std::runtime_error);
    CHECK_THROWS_WITH_AS(read_whole_file(ten + "-missing"),
                         (ten + "-missing: cannot open it (No such file or directory)").c_str(),
                         std::runtime_error);
    // The data readers' version of it throws data_errors (the job's fault: exit 2).
    CHECK_THROWS_AS(open_data_file(pipe), data_error);
  }

  // Found probing as a hostile user: `troupe report` of a folder whose summary.json held 200,000
  // nested arrays overflowed the stack (a segmentation fault), and so would --resume of such a
  // state.json.
  TEST_CASE("JSON a user can edit is parsed up to 64 levels deep, deeper is discarded") {
    const auto nested = [](std::size_t depth) {
      return std::string(depth, '[') + std::string(depth, ']');
    };
    CHECK(parse_shallow_json(nested(64)).is_array());
    CHECK(parse_shallow_json(nested(65)).is_discarded());
    CHECK(parse_shallow_json("{\"deep\": " + nested(200000) + "}").is_discarded());
    CHECK(parse_shallow_json("{\"step\": 3}")["step"] == 3);
    CHECK(parse_shallow_json("{\"step\": ").is_discarded());
    // A metrics line nested too deep counts as a bad line; the lines around it still arrive.
    jsonl_lines lines;
    int records = 0;
    const auto bad = lines.feed("{\"a\": 1}\n{\"b\": " + nested(100000) + "}\n{\"c\": 2}\n",
                                [&](const nlohmann::json&) { ++records; });
    CHECK(bad == 1);
    CHECK(records == 2);
  }
}
