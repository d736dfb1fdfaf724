// The private folders a process keeps under the temporary directory: gone with the object, and
// where their process was killed (no destructor ran), removed by the next one of their prefix;
// never a folder a live process holds, another user's, or one made a moment ago.
#include "core/io/owned_temp_folder.hpp"
#include "temp_folder.hpp"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

using namespace troupe;
namespace fs = std::filesystem;

namespace {

// Makes `path` look untouched for an hour.
void age(const fs::path& path) {
  fs::last_write_time(path, fs::file_time_type::clock::now() - std::chrono::hours(1));
}

}  // namespace

TEST_SUITE("io") {
  TEST_CASE("an owned folder is private and goes with its owner") {
    std::string path;
    {
      owned_temp_folder folder("troupe-test-owned");
      path = folder.path();
      CHECK(fs::is_directory(path));
      CHECK((fs::status(path).permissions() & fs::perms::all) == fs::perms::owner_all);
      std::ofstream(path + "/key.pem") << "secret";
    }
    CHECK_FALSE(fs::exists(path));
  }

  TEST_CASE("TMPDIR empty means /tmp; one that is not a folder is named") {
    const char* was = std::getenv("TMPDIR");
    const std::string saved = was != nullptr ? was : "";
    ::setenv("TMPDIR", "", 1);
    CHECK(owned_temp_folder("troupe-test-owned").path().rfind("/tmp/", 0) == 0);
    ::setenv("TMPDIR", "/nonexistent-troupe-test", 1);
    CHECK_THROWS_WITH(owned_temp_folder("troupe-test-owned"),
                      doctest::Contains("TMPDIR=/nonexistent-troupe-test is not a folder"));
    if (was != nullptr)
      ::setenv("TMPDIR", saved.c_str(), 1);
    else
      ::unsetenv("TMPDIR");
  }

  TEST_CASE("a killed owner's folder is removed by the next; a live one's is not") {
    const temp_folder parent;
    // A folder a killed process left: nobody holds its lock.
    const auto left = parent.path / "troupe-x-abandoned";
    fs::create_directories(left / "inside");
    age(left);
    // One a live process holds (a child that locks it and waits).
    const auto held = parent.path / "troupe-x-held";
    fs::create_directories(held);
    int ready[2];
    REQUIRE(::pipe(ready) == 0);
    const pid_t child = ::fork();
    if (child == 0) {
      const int fd = ::open(held.c_str(), O_RDONLY | O_DIRECTORY);
      ::flock(fd, LOCK_EX);
      (void)!::write(ready[1], "x", 1);
      ::pause();
      ::_exit(0);
    }
    char c = 0;
    REQUIRE(::read(ready[0], &c, 1) == 1);
    age(held);
    // One just made (not yet locked by its maker), another prefix, and a link.
    const auto fresh = parent.path / "troupe-x-fresh";
    fs::create_directories(fresh);
    const auto other = parent.path / "troupe-y-abandoned";
    fs::create_directories(other);
    age(other);
    fs::create_directory_symlink(left, parent.path / "troupe-x-link");

    CHECK(remove_abandoned_folders(parent.path.string(), "troupe-x") == 1);
    CHECK_FALSE(fs::exists(left));
    CHECK(fs::exists(held));
    CHECK(fs::exists(fresh));
    CHECK(fs::exists(other));
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    // Its holder killed, the folder is abandoned too.
    CHECK(remove_abandoned_folders(parent.path.string(), "troupe-x") == 1);
    CHECK_FALSE(fs::exists(held));
    ::close(ready[0]);
    ::close(ready[1]);
  }
}
