// Replays fuzz inputs without libFuzzer: runs a target's LLVMFuzzerTestOneInput over every file
// of the folders (recursively, in name order) and files given, as libFuzzer would run them.
// A crash, a sanitizer report or an uncaught exception fails the run (the ctest
// fuzz_replay.TARGET); otherwise it prints how many inputs it ran and exits 0.
//   fuzz_replay_TARGET tests/fuzz/corpus/TARGET [more folders or files]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) __attribute__((weak));

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FOLDER_OR_FILE...\n", argv[0]);
    return 2;
  }
  if (LLVMFuzzerInitialize != nullptr)
    LLVMFuzzerInitialize(&argc, &argv);
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    const fs::path arg = argv[i];
    if (fs::is_directory(arg)) {
      for (const auto& entry : fs::recursive_directory_iterator(arg))
        if (entry.is_regular_file())
          inputs.push_back(entry.path());
    } else if (fs::is_regular_file(arg)) {
      inputs.push_back(arg);
    } else {
      std::fprintf(stderr, "%s: no such file or folder\n", arg.c_str());
      return 2;
    }
  }
  std::sort(inputs.begin(), inputs.end());
  const auto start = std::chrono::steady_clock::now();
  for (const auto& path : inputs) {
    std::ifstream in(path, std::ios::binary);
    const std::vector<char> bytes{std::istreambuf_iterator<char>(in), {}};
    if (!in.eof() && in.fail()) {
      std::fprintf(stderr, "%s: cannot read\n", path.c_str());
      return 2;
    }
    // Named before it runs: if it crashes, the last name printed is the culprit.
    std::fprintf(stderr, "replay: %s\n", path.c_str());
    // libFuzzer never passes a null pointer, not even for an empty input.
    static const uint8_t empty = 0;
    LLVMFuzzerTestOneInput(bytes.empty() ? &empty : reinterpret_cast<const uint8_t*>(bytes.data()),
                           bytes.size());
  }
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  std::printf("replayed %zu inputs in %.2f s\n", inputs.size(), took.count());
  return 0;
}
