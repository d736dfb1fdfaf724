// The checkpoint store without actors: what it writes reads back byte for byte, a damaged or
// replaced file falls back to the checkpoint before (saying why), retention, and its crash
// safety (a child process killed at random moments while it writes).
#include "core/checkpoint/checkpoint_store.hpp"
#include "core/checkpoint/sha256.hpp"
#include "temp_folder.hpp"

#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace troupe;
namespace fs = std::filesystem;

namespace {

// A checkpoint of `step` whose files say which step they belong to, a large one included.
stored_checkpoint sample(int64_t step, std::size_t big = 1 << 20) {
  stored_checkpoint c;
  c.step = step;
  c.files.push_back({"state.json", "{\"step\": " + std::to_string(step) + "}\n"});
  c.files.push_back({"state.pt", std::string(big, static_cast<char>('a' + step % 26))});
  return c;
}

std::vector<std::string> skipped_lines(const std::string& dir) {
  std::vector<std::string> lines;
  read_latest_checkpoint(dir, [&](const std::string& l) { lines.push_back(l); });
  return lines;
}

void flip_byte(const fs::path& file, std::size_t at) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(at));
  char c = 0;
  f.get(c);
  f.seekp(static_cast<std::streamoff>(at));
  f.put(static_cast<char>(c ^ 0x01));
}

}  // namespace

TEST_SUITE("checkpoint") {
  TEST_CASE("sha256 matches the standard's test vectors") {
    CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  }

  TEST_CASE("the newest checkpoint is read back, byte for byte, with its manifest and latest") {
    const temp_folder dir;
    write_checkpoint(dir.path.string(), sample(4), 3);
    const auto bytes = write_checkpoint(dir.path.string(), sample(9), 3);
    CHECK(bytes == static_cast<int64_t>(sample(9).files[0].bytes.size() + (1 << 20)));
    const auto c = read_latest_checkpoint(dir.path.string(), nullptr);
    REQUIRE(c);
    CHECK(c->step == 9);
    REQUIRE(c->find("state.pt"));
    CHECK(*c->find("state.pt") == sample(9).files[1].bytes);
    const auto folder = fs::path(checkpoints_folder(dir.path.string()));
    CHECK(fs::exists(folder / "step-9" / "manifest.json"));
    std::ifstream latest(folder / "latest");
    std::string name;
    latest >> name;
    CHECK(name == "step-9");
  }

  TEST_CASE(
      "a flipped byte, a missing file or a cut file falls back to the one before, saying so") {
    const temp_folder dir;
    write_checkpoint(dir.path.string(), sample(1), 5);
    write_checkpoint(dir.path.string(), sample(2), 5);
    write_checkpoint(dir.path.string(), sample(3), 5);
    const auto folder = fs::path(checkpoints_folder(dir.path.string()));
    flip_byte(folder / "step-3" / "state.pt", 12345);
    auto c = read_latest_checkpoint(dir.path.string(), nullptr);
    REQUIRE(c);
    CHECK(c->step == 2);
    auto lines = skipped_lines(dir.path.string());
    REQUIRE(lines.size() == 1);
    CHECK(lines[0].find("step-3") != std::string::npos);
    CHECK(lines[0].find("state.pt: its SHA-256 differs") != std::string::npos);

    fs::remove(folder / "step-2" / "state.json");
    c = read_latest_checkpoint(dir.path.string(), nullptr);
    REQUIRE(c);
    CHECK(c->step == 1);
    fs::resize_file(folder / "step-1" / "state.pt", 100);
    CHECK_FALSE(read_latest_checkpoint(dir.path.string(), nullptr));
    lines = skipped_lines(dir.path.string());
    REQUIRE(lines.size() == 3);
    CHECK(lines[2].find("state.pt has 100 bytes") != std::string::npos);
  }

  TEST_CASE("a run folder renamed away is not made again for a checkpoint") {
    temp_folder dir;
    const auto gone = (dir.path / "run").string();
    CHECK_THROWS_WITH(write_checkpoint(gone, sample(4), 3),
                      doctest::Contains("the run's folder is gone (renamed or removed"));
    CHECK(!std::filesystem::exists(gone));
  }

  TEST_CASE("a damaged manifest is skipped, and a folder naming another step is not trusted") {
    const temp_folder dir;
    write_checkpoint(dir.path.string(), sample(1), 5);
    write_checkpoint(dir.path.string(), sample(2), 5);
    const auto folder = fs::path(checkpoints_folder(dir.path.string()));
    std::ofstream(folder / "step-2" / "manifest.json") << "{\"step\": 2, \"files\": [";
    CHECK(read_latest_checkpoint(dir.path.string(), nullptr)->step == 1);
    // Valid JSON of another shape, or a size no integer holds: named as such, not in JSON's words.
    for (const char* manifest : {"[]", "{\"step\": 2, \"files\": [{\"name\": \"state.pt\"}]}",
                                 "{\"step\": 2, \"files\": [{\"name\": \"state.pt\", "
                                 "\"size\": 1e30, \"sha256\": \"00\"}]}"}) {
      std::ofstream(folder / "step-2" / "manifest.json") << manifest;
      std::vector<std::string> notes;
      CHECK(read_latest_checkpoint(dir.path.string(), [&](const std::string& line) {
              notes.push_back(line);
            })->step == 1);
      REQUIRE(notes.size() == 1);
      CHECK(notes[0].find("manifest.json: ") != std::string::npos);
      CHECK(notes[0].find("json.exception") == std::string::npos);
    }
    fs::rename(folder / "step-1", folder / "step-7");
    CHECK_FALSE(read_latest_checkpoint(dir.path.string(), nullptr));
  }

  // Found probing as a hostile user: such a folder was read until memory ran out.
  TEST_CASE("a file linked to an endless device, or an endless manifest, is skipped unread") {
    for (const char* replaced : {"state.pt", "manifest.json"}) {
      CAPTURE(replaced);
      const temp_folder dir;
      write_checkpoint(dir.path.string(), sample(1), 5);
      write_checkpoint(dir.path.string(), sample(2), 5);
      const auto file = fs::path(checkpoints_folder(dir.path.string())) / "step-2" / replaced;
      fs::remove(file);
      fs::create_symlink("/dev/zero", file);
      const auto c = read_latest_checkpoint(dir.path.string(), nullptr);
      REQUIRE(c);
      CHECK(c->step == 1);
      const auto lines = skipped_lines(dir.path.string());
      REQUIRE(lines.size() == 1);
      CHECK(lines[0].find(std::string(replaced) == "state.pt"
                              ? "state.pt is missing or not a regular file"
                              : "manifest.json: longer than 1 MiB") != std::string::npos);
    }
  }

  // Found probing as a hostile user: a link loop anywhere in checkpoints/ aborted --resume (an
  // uncaught filesystem_error), and the run that met one failed.
  TEST_CASE("a link loop among the checkpoints is passed over, named when it looks like one") {
    const temp_folder dir;
    write_checkpoint(dir.path.string(), sample(1), 5);
    write_checkpoint(dir.path.string(), sample(2), 5);
    const auto folder = fs::path(checkpoints_folder(dir.path.string()));
    fs::create_symlink("zz", folder / "zz");
    fs::remove_all(folder / "step-2");
    fs::create_symlink("step-2", folder / "step-2");
    const auto c = read_latest_checkpoint(dir.path.string(), nullptr);
    REQUIRE(c);
    CHECK(c->step == 1);
    const auto lines = skipped_lines(dir.path.string());
    REQUIRE(lines.size() == 1);
    CHECK(lines[0].find("checkpoint step-2 skipped: Too many levels of symbolic links") !=
          std::string::npos);
    CHECK(write_checkpoint(dir.path.string(), sample(3, 10), 1) > 0);  // retention passes them
    CHECK(read_latest_checkpoint(dir.path.string(), nullptr)->step == 3);
  }

  // (Its mode 000 hid "Permission denied" the same way; root, as in CI, reads such a folder.)
  TEST_CASE("a checkpoints folder that cannot be listed is named, not taken for an empty one") {
    const temp_folder dir;
    std::ofstream(checkpoints_folder(dir.path.string())) << "not a folder";
    const auto lines = skipped_lines(dir.path.string());
    REQUIRE(lines.size() == 1);
    CHECK(lines[0].find("cannot list") != std::string::npos);
    CHECK(lines[0].find("Not a directory") != std::string::npos);
    CHECK_FALSE(read_latest_checkpoint(dir.path.string(), nullptr));
  }

  TEST_CASE("retention keeps the newest `keep` and removes stray temporaries") {
    const temp_folder dir;
    const auto folder = fs::path(checkpoints_folder(dir.path.string()));
    fs::create_directories(folder / ".tmp-step-99");
    for (int64_t s = 0; s < 6; ++s)
      write_checkpoint(dir.path.string(), sample(s, 10), 2);
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(folder))
      names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    CHECK(names == std::vector<std::string>{".tmp-step-99", "latest", "step-4", "step-5"});
  }

  TEST_CASE("killed at random moments while writing, the store always yields a checkpoint") {
    // A child writes checkpoints of growing steps as fast as it can; the parent kills it with
    // SIGKILL after a random delay, 60 times. Every time, the newest verified checkpoint must
    // be one the child finished or the one before it: never torn, never none.
    const temp_folder dir;
    write_checkpoint(dir.path.string(), sample(0, 1 << 18), 2);
    std::mt19937 random(20261123);
    int64_t first = 1;
    int64_t resumed_from_newest = 0;
    for (int kill = 0; kill < 60; ++kill) {
      const pid_t child = ::fork();
      REQUIRE(child >= 0);
      if (child == 0) {
        for (int64_t s = first;; ++s)
          write_checkpoint(dir.path.string(), sample(s, 1 << 18), 2);
      }
      std::this_thread::sleep_for(std::chrono::microseconds(random() % 30000));
      ::kill(child, SIGKILL);
      int status = 0;
      ::waitpid(child, &status, 0);
      std::vector<std::string> skipped;
      const auto c = read_latest_checkpoint(dir.path.string(),
                                            [&](const std::string& l) { skipped.push_back(l); });
      INFO("kill " << kill);
      REQUIRE(c);
      CHECK(skipped.empty());  // a torn write stays a temporary: nothing named step-S is torn
      CHECK(*c->find("state.pt") == sample(c->step, 1 << 18).files[1].bytes);
      resumed_from_newest += c->step >= first ? 1 : 0;
      first = c->step + 1;  // the next child goes on from there, as a resumed run would
    }
    CHECK(resumed_from_newest > 0);
  }
}
