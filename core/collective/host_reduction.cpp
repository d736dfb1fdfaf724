#include "core/collective/host_reduction.hpp"

#include "core/collective/replica_reduction.hpp"

#include <ATen/ATen.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include <cerrno>
#include <climits>
#include <cstring>
#include <random>
#include <stdexcept>

namespace troupe {

namespace {

constexpr uint64_t segment_magic = 0x7472'6f75'7065'3031;  // "troupe01"
constexpr std::size_t line = 64;
/// How long a sleeping waiter sleeps before it looks again at aborts and at its peers.
constexpr std::chrono::milliseconds sleep_slice{5};
/// How often a sleeping waiter checks that every rank's process still exists.
constexpr std::chrono::milliseconds liveness_every{100};

static_assert(std::atomic<uint32_t>::is_always_lock_free, "futex words must be plain words");

std::size_t round_up(std::size_t n) {
  return (n + line - 1) / line * line;
}

std::string system_error(const std::string& what, const std::string& name) {
  return what + " shared-memory segment " + name + ": " + std::strerror(errno);
}

int futex(std::atomic<uint32_t>* word, int op, uint32_t value, const timespec* timeout) {
  // Not FUTEX_PRIVATE_FLAG: the word is in memory shared between processes.
  return static_cast<int>(
      ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, value, timeout, nullptr, 0));
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

// At the start of the segment; each rank's process, then each rank's slot follow, 64-byte
// aligned.
struct header {
  uint64_t magic;
  uint64_t nonce;
  int64_t ranks;
  int64_t numel;
  alignas(line) std::atomic<uint32_t> arrived;
  alignas(line) std::atomic<uint32_t> round;    ///< the futex word waiters sleep on
  alignas(line) std::atomic<uint32_t> aborted;  ///< set by any rank that gives up
};

// After the header, one per rank, each written by its rank: which process to check on.
struct rank_process {
  std::atomic<uint64_t> pid_ns;  ///< the inode of its PID namespace: a pid means nothing elsewhere
  std::atomic<int64_t> pid;      ///< 0 until the rank's first all_reduce
};
static_assert(std::atomic<int64_t>::is_always_lock_free, "shared between processes");

std::size_t header_bytes(int64_t ranks) {
  return round_up(sizeof(header)) +
         round_up(sizeof(rank_process) * static_cast<std::size_t>(ranks));
}

rank_process* processes(void* base) {
  return reinterpret_cast<rank_process*>(static_cast<char*>(base) + round_up(sizeof(header)));
}

uint64_t own_pid_namespace() {
  struct stat st {};
  return ::stat("/proc/self/ns/pid", &st) == 0 ? static_cast<uint64_t>(st.st_ino) : 0;
}

std::size_t segment_bytes(const host_segment_spec& s) {
  return header_bytes(s.ranks) + static_cast<std::size_t>(s.ranks) *
                                     round_up(sizeof(float) * static_cast<std::size_t>(s.numel));
}

void check_spec(const host_segment_spec& s) {
  if (s.name.size() < 2 || s.name[0] != '/' || s.name.find('/', 1) != std::string::npos ||
      s.ranks < 1 || s.numel < 0 || s.nonce == 0)
    throw std::invalid_argument("host_reduction: bad segment spec " + s.name + " (" +
                                std::to_string(s.ranks) + " ranks, " + std::to_string(s.numel) +
                                " elements)");
}

void* map(int fd, std::size_t bytes, const std::string& name) {
  void* base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    const auto error = system_error("cannot map", name);
    ::close(fd);
    throw std::runtime_error(error);
  }
  ::close(fd);
  return base;
}

}  // namespace

std::unique_ptr<host_reduction> host_reduction::create(const host_segment_spec& spec) {
  check_spec(spec);
  const int fd = ::shm_open(spec.name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0)
    throw std::runtime_error(system_error("cannot create", spec.name));
  const auto bytes = segment_bytes(spec);
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    const auto error = system_error("cannot size", spec.name);
    ::close(fd);
    ::shm_unlink(spec.name.c_str());
    throw std::runtime_error(error);
  }
  void* base = nullptr;
  try {
    base = map(fd, bytes, spec.name);
  } catch (...) {
    ::shm_unlink(spec.name.c_str());
    throw;
  }
  // ftruncate zeroed it: the barrier's words start at 0. The identity goes in last.
  auto* h = static_cast<header*>(base);
  h->ranks = spec.ranks;
  h->numel = spec.numel;
  h->nonce = spec.nonce;
  std::atomic_thread_fence(std::memory_order_release);
  h->magic = segment_magic;
  return std::unique_ptr<host_reduction>(new host_reduction(spec, base, bytes, true));
}

std::unique_ptr<host_reduction> host_reduction::open(const host_segment_spec& spec) {
  check_spec(spec);
  const int fd = ::shm_open(spec.name.c_str(), O_RDWR, 0);
  if (fd < 0)
    throw std::runtime_error(system_error("cannot open", spec.name));
  struct stat st {};
  const auto bytes = segment_bytes(spec);
  if (::fstat(fd, &st) != 0 || static_cast<std::size_t>(st.st_size) != bytes) {
    ::close(fd);
    throw std::runtime_error("shared-memory segment " + spec.name + " has " +
                             std::to_string(st.st_size) + " bytes, expected " +
                             std::to_string(bytes));
  }
  void* base = map(fd, bytes, spec.name);
  const auto* h = static_cast<const header*>(base);
  if (h->magic != segment_magic || h->nonce != spec.nonce || h->ranks != spec.ranks ||
      h->numel != spec.numel) {
    ::munmap(base, bytes);
    throw std::runtime_error("shared-memory segment " + spec.name +
                             " is not the one this run made (another nonce or size)");
  }
  return std::unique_ptr<host_reduction>(new host_reduction(spec, base, bytes, false));
}

host_reduction::host_reduction(host_segment_spec spec, void* base, std::size_t bytes, bool creator)
    : spec_(std::move(spec)),
      base_(base),
      bytes_(bytes),
      creator_(creator),
      slices_(reduction_slices(spec_.numel, spec_.ranks)),
      budgets_(static_cast<std::size_t>(spec_.ranks)) {}

void host_reduction::set_spin(std::chrono::microseconds spin) {
  budgets_.assign(static_cast<std::size_t>(spec_.ranks), spin_budget(spin));
}

host_reduction::~host_reduction() {
  if (creator_)
    unlink();
  ::munmap(base_, bytes_);
}

void host_reduction::unlink() {
  if (!unlinked_)
    ::shm_unlink(spec_.name.c_str());
  unlinked_ = true;
}

float* host_reduction::slot(int64_t rank) const {
  const auto stride = round_up(sizeof(float) * static_cast<std::size_t>(spec_.numel));
  return reinterpret_cast<float*>(static_cast<char*>(base_) + header_bytes(spec_.ranks) +
                                  static_cast<std::size_t>(rank) * stride);
}

void host_reduction::throw_aborted() {
  std::lock_guard<std::mutex> lock(why_mutex_);
  throw barrier_aborted(aborted_.load(std::memory_order_acquire)
                            ? why_
                            : "another process gave up the shared-memory reduction");
}

void host_reduction::abort(const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(why_mutex_);
    if (aborted_.load(std::memory_order_acquire))
      return;
    why_ = why;
    aborted_.store(true, std::memory_order_release);
  }
  auto* h = static_cast<header*>(base_);
  h->aborted.store(1, std::memory_order_release);
  futex(&h->round, FUTEX_WAKE, INT_MAX, nullptr);
}

void host_reduction::wait_for_all(int64_t rank) {
  auto* h = static_cast<header*>(base_);
  const auto given_up = [&] {
    return aborted_.load(std::memory_order_acquire) ||
           h->aborted.load(std::memory_order_acquire) != 0;
  };
  if (given_up())
    throw_aborted();
  const uint32_t round = h->round.load(std::memory_order_acquire);
  if (h->arrived.fetch_add(1, std::memory_order_acq_rel) + 1 ==
      static_cast<uint32_t>(spec_.ranks)) {
    h->arrived.store(0, std::memory_order_relaxed);
    h->round.store(round + 1, std::memory_order_release);
    futex(&h->round, FUTEX_WAKE, INT_MAX, nullptr);
    return;
  }
  auto& budget = budgets_[static_cast<std::size_t>(rank)];
  const auto start = std::chrono::steady_clock::now();
  if (budget.now().count() > 0) {
    const auto until = start + budget.now();
    for (uint32_t i = 1;; ++i) {
      if (h->round.load(std::memory_order_acquire) != round) {
        budget.record(std::chrono::steady_clock::now() - start);
        return;
      }
      if (given_up())
        throw_aborted();
      cpu_relax();
      if (i % 64 == 0 && std::chrono::steady_clock::now() >= until)
        break;
    }
  }
  auto next_check = std::chrono::steady_clock::now() + liveness_every;
  const timespec slice{0, std::chrono::nanoseconds(sleep_slice).count()};
  while (h->round.load(std::memory_order_acquire) == round) {
    if (given_up())
      throw_aborted();
    futex(&h->round, FUTEX_WAIT, round, &slice);
    if (std::chrono::steady_clock::now() < next_check)
      continue;
    next_check = std::chrono::steady_clock::now() + liveness_every;
    const auto* ps = processes(base_);
    const auto own_ns = ps[rank].pid_ns.load(std::memory_order_relaxed);
    for (int64_t r = 0; r < spec_.ranks; ++r) {
      const auto pid = static_cast<pid_t>(ps[r].pid.load(std::memory_order_acquire));
      if (r != rank && pid > 0 && own_ns != 0 &&
          ps[r].pid_ns.load(std::memory_order_relaxed) == own_ns && ::kill(pid, 0) != 0 &&
          errno == ESRCH)
        abort("the process of rank " + std::to_string(r) + " (pid " + std::to_string(pid) +
              ") is gone");
    }
  }
  budget.record(std::chrono::steady_clock::now() - start);
}

at::Tensor host_reduction::enter(int64_t rank, const at::Tensor& buffer) {
  if (rank < 0 || rank >= spec_.ranks)
    throw std::invalid_argument("host_reduction: rank " + std::to_string(rank) + " of " +
                                std::to_string(spec_.ranks));
  if (!buffer.defined() || buffer.dim() != 1 || !buffer.is_contiguous() ||
      buffer.scalar_type() != at::kFloat || !buffer.is_cpu() || buffer.numel() != spec_.numel)
    throw std::invalid_argument("host_reduction: rank " + std::to_string(rank) +
                                " needs a contiguous 1-d float32 CPU buffer of " +
                                std::to_string(spec_.numel) + " elements");
  auto& me = processes(base_)[rank];
  if (me.pid.load(std::memory_order_relaxed) == 0) {
    me.pid_ns.store(own_pid_namespace(), std::memory_order_relaxed);
    me.pid.store(::getpid(), std::memory_order_release);
  }
  return slot_tensor(rank);
}

void host_reduction::all_reduce(int64_t rank, const at::Tensor& buffer) {
  auto mine = enter(rank, buffer);
  const bool in_slot = buffer.data_ptr() == mine.data_ptr();
  if (!in_slot)
    mine.copy_(buffer);
  wait_for_all(rank);  // every slot holds its rank's gradient
  const auto& s = slices_[static_cast<std::size_t>(rank)];
  if (s.count > 0 && spec_.ranks > 1) {
    auto sum = slot_tensor(0).narrow(0, s.offset, s.count);
    for (int64_t r = 1; r < spec_.ranks; ++r)
      sum.add_(slot_tensor(r).narrow(0, s.offset, s.count));
    for (int64_t r = 1; r < spec_.ranks; ++r)
      slot_tensor(r).narrow(0, s.offset, s.count).copy_(sum);
  }
  wait_for_all(rank);  // every slice is summed into every slot
  if (!in_slot)
    buffer.copy_(mine);
}

void host_reduction::broadcast(int64_t rank, const at::Tensor& buffer, int64_t root) {
  enter(rank, buffer);
  const auto from = slot_tensor(root);
  if (rank == root && buffer.data_ptr() != from.data_ptr())
    from.copy_(buffer);
  wait_for_all(rank);  // the root's slot holds what it gives
  if (rank != root)
    buffer.copy_(from);
  wait_for_all(rank);  // every rank has read it: the root may write its slot again
}

at::Tensor host_reduction::slot_tensor(int64_t rank) const {
  if (rank < 0 || rank >= spec_.ranks)
    throw std::invalid_argument("host_reduction: rank " + std::to_string(rank) + " of " +
                                std::to_string(spec_.ranks));
  return at::from_blob(slot(rank), {spec_.numel}, at::TensorOptions().dtype(at::kFloat));
}

std::string new_segment_name() {
  std::random_device device;
  const uint64_t bits = (static_cast<uint64_t>(device()) << 32) ^ device();
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(bits));
  return "/troupe-" + std::to_string(::getpid()) + "-" + hex;
}

uint64_t new_segment_nonce() {
  std::random_device device;
  uint64_t nonce = 0;
  while (nonce == 0)
    nonce = (static_cast<uint64_t>(device()) << 32) ^ device();
  return nonce;
}

}  // namespace troupe
