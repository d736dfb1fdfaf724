// A scratch folder for a test, removed with everything in it when the test ends.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

struct temp_folder {
  std::filesystem::path path;

  temp_folder() {
    path = std::filesystem::temp_directory_path() /
           ("troupe-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~temp_folder() { std::filesystem::remove_all(path); }
  temp_folder(const temp_folder&) = delete;
  temp_folder& operator=(const temp_folder&) = delete;

  /// Replaces (or makes) `name` in the folder with `text`.
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name, std::ios::binary) << text;
  }
  /// Appends `text` to `name`, as a run appends to metrics.jsonl.
  void append(const std::string& name, const std::string& text) const {
    std::ofstream(path / name, std::ios::binary | std::ios::app) << text;
  }

 private:
  static int& counter() {
    static int n = 0;
    return n;
  }
};
