// Fuzz target: a checkpoint as `troupe run --resume` reads it (core/checkpoint): the newest
// folder under DIR/checkpoints whose manifest and files verify, then its state decoded. The
// first byte picks the file the rest of the input replaces in an otherwise valid checkpoint:
// manifest.json (so the manifest reader and the verification see it), or state.json or state.pt
// written with a manifest that matches them (so the input passes the checksums and reaches the
// decoder, as a checkpoint written by something else would). Refusals are std::exceptions with
// a message; what decodes must be what resume relies on: flat float weights per part.
#include "core/checkpoint/checkpoint_store.hpp"
#include "core/checkpoint/run_checkpoint.hpp"
#include "tests/fuzz/fuzz_common.hpp"

#include <ATen/ATen.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

namespace {

const troupe::stored_checkpoint& valid_checkpoint() {
  static const auto stored = [] {
    troupe::run_checkpoint c;
    c.step = 3;
    c.job = {{"training", {{"steps", 10}}}};
    c.progress = {{"tracker", {{"samples", 128}}}};
    c.parts = {{0, at::arange(6, at::kFloat), "adam"}, {1, at::ones({6}), ""}};
    c.best_weights = at::zeros({6});
    return troupe::encode_checkpoint(c, 1, {{"fc.weight", {2, 3}}});
  }();
  return stored;
}

// A run folder of this process beside the scratch files, removed at exit.
struct run_folder {
  std::filesystem::path path =
      std::filesystem::path(troupe::fuzz::scratch_file("anchor", "")).parent_path() /
      ("troupe-fuzz-checkpoint-" + std::to_string(::getpid()));
  run_folder() { std::filesystem::create_directories(path); }
  ~run_folder() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

std::string run_dir() {
  static const run_folder folder;
  return folder.path.string();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0)
    return 0;
  const auto which = data[0] % 3;
  const auto input = troupe::fuzz::as_text(data + 1, size - 1);
  auto stored = valid_checkpoint();
  if (which > 0)
    for (auto& f : stored.files)
      if (f.name == (which == 1 ? "state.json" : "state.pt"))
        f.bytes = input;
  const auto dir = run_dir();
  troupe::write_checkpoint(dir, stored, 1);
  if (which == 0)
    std::ofstream(troupe::checkpoints_folder(dir) + "/step-3/manifest.json", std::ios::binary)
        << input;

  const auto read = troupe::read_latest_checkpoint(dir, [](const std::string&) {});
  if (!read)
    return 0;
  try {
    const auto c = troupe::decode_checkpoint(*read);
    for (const auto& p : c.parts)
      if (!p.weights.defined() || p.weights.dim() != 1 || p.weights.scalar_type() != at::kFloat)
        troupe::fuzz::fail("decode_checkpoint passed on weights that are not flat floats");
  } catch (const std::exception&) {
  }
  return 0;
}
