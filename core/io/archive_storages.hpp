// The tensors a PyTorch archive's pickle builds, held against the records that store them before
// LibTorch reads any of them. LibTorch 1.13 sizes a storage by the element count its pickle
// declares and backs it with the record as it is: a TorchScript file whose weight declared 10^8
// elements over a 400-byte record trained until flat_parameters or ExportModule read past it
// (SIGSEGV). And LibTorch inflates a deflated record whole before anything is built: a 23 MB file
// of deflated zeros took 5.8 GB at `troupe validate`.
//
// Thread safety: pure functions of their inputs.
#pragma once

#include "core/io/archive_check.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace troupe {

/// Why LibTorch must not unpickle NAME.pkl of `archive` (an archive that passed
/// archive_problem), building its tensors over the records NAME/KEY, or "". The pickle must pass
/// walk_pickle; each storage's record must exist and hold at least the bytes the storage
/// declares; a deflated record may inflate to no more than the tensors over it reach; and all the
/// records together to no more than `memory_bytes` (0: unbounded), so that loading cannot take
/// more memory than the machine has. An archive without NAME.pkl has no problem here.
std::string archive_tensors_problem(std::string_view archive, std::string_view name,
                                    double memory_bytes);

/// archive_problem, then archive_tensors_problem for both pickles torch::jit::load reads: the
/// module's attributes (data.pkl) and its code's tensor constants (constants.pkl).
std::string script_archive_problem(std::string_view archive, double memory_bytes);

}  // namespace troupe
