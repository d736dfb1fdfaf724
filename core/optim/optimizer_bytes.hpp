// An optimizer's state as plain bytes, for checkpoints and hand-overs: every parameter group's
// options and every parameter's state tensors, raw, in parameter order. LibTorch's own archive
// (a TorchScript module in a zip with a CRC over every byte) took ~1.4 ms for Adam on the
// 235k-parameter MLP, on the worker's thread at the step boundary where the other replicas wait
// for it; this is a copy of the state (~0.2 ms) and loads back bit for bit what was saved.
// Checkpoints written before it hold LibTorch's archive format, which load_optimizer still reads.
//
// Layout, little-endian: the 16-byte magic "troupe-optim-v1\n"; u8 kind (0 sgd, 1 adam, 2
// adamw, 3 rmsprop); u64 groups; per group its options as f64s (sgd: lr, momentum, dampening,
// weight_decay; adam(w): lr, beta1, beta2, eps, weight_decay; rmsprop: lr, alpha, eps,
// weight_decay, momentum), u8 flag (sgd: nesterov; adam(w): amsgrad; rmsprop: centered), u64
// parameters; per parameter u8 has-state, and with state (sgd) one tensor, the momentum buffer,
// or (adam, adamw) i64 step and three tensors, exp_avg, exp_avg_sq, max_exp_avg_sq, or
// (rmsprop) i64 step and three tensors, square_avg, momentum_buffer, grad_avg; a tensor is u8
// defined, then u8 scalar type, u64 elements and the elements' bytes.
//
// Thread safety: reentrant; an optimizer must not step while it is saved or loaded.
#pragma once

#include <torch/optim/optimizer.h>

#include <string>
#include <string_view>
#include <vector>

namespace troupe {

/// Whether `bytes` begin with this format's magic (else: LibTorch's archive, or neither).
bool is_optimizer_bytes(std::string_view bytes);

/// SGD, Adam, AdamW and RMSprop (what make_optimizer builds); throws std::logic_error for
/// another kind.
std::string save_optimizer_bytes(const torch::optim::Optimizer& optimizer);

/// Why `bytes` are not a well-formed state of this format, or "": every length lies inside them
/// and they end where the last tensor does. Needs no optimizer (checkpoints are checked on load).
std::string optimizer_bytes_problem(std::string_view bytes);

/// Puts the state back into an optimizer of the same kind over parameters of the same number,
/// sizes and types. Throws std::runtime_error naming what differs; the optimizer is unchanged
/// then.
void load_optimizer_bytes(torch::optim::Optimizer& optimizer, std::string_view bytes);

/// A sharded parameter server's part of a state (core/policy/server_shards): the state of
/// `count` parameters from parameter `first` on, of a state with one parameter group. Throws
/// std::runtime_error for another format, several groups, or parameters it does not hold.
std::string optimizer_bytes_part(std::string_view bytes, int64_t first, int64_t count);
/// The parts of one split back into one state, in order: the first part's options, every
/// part's parameters. optimizer_bytes_part's exact inverse.
std::string join_optimizer_bytes(const std::vector<std::string>& parts);

}  // namespace troupe
