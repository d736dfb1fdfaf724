// A scratch folder for a test, removed with everything in it when the test ends; unique across
// processes (pid) and within one (a counter).
#pragma once

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>

struct temp_folder {
  std::filesystem::path path;

  temp_folder() {
    static std::atomic<int> counter{0};
    path = std::filesystem::temp_directory_path() /
           ("troupe-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~temp_folder() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  temp_folder(const temp_folder&) = delete;
  temp_folder& operator=(const temp_folder&) = delete;

  /// The path of `name` in the folder.
  std::string operator/(const std::string& name) const { return (path / name).string(); }
  /// Replaces (or makes) `name` in the folder with `text`; its path.
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name, std::ios::binary) << text;
    return *this / name;
  }
  /// Appends `text` to `name`, as a run appends to metrics.jsonl.
  void append(const std::string& name, const std::string& text) const {
    std::ofstream(path / name, std::ios::binary | std::ios::app) << text;
  }
};
