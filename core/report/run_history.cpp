#include "core/report/run_history.hpp"

#include "core/errors.hpp"
#include "core/io/shallow_json.hpp"
#include "core/metrics/record_reader.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <variant>

namespace troupe {
namespace {

namespace fs = std::filesystem;

double number(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}

// A file from outside may hold 1e300 where a step belongs: converting that to int64 is
// undefined, so only values that fit are taken.
int64_t integer(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number())
    return 0;
  if (it->is_number_integer())
    return it->get<int64_t>();
  const double v = it->get<double>();
  return std::isfinite(v) && std::abs(v) < 9e18 ? static_cast<int64_t>(v) : 0;
}

// Worker indices come from the file: a corrupt one must not make the report allocate gigabytes.
constexpr int64_t max_workers = 65536;

template <class Row>
Row* slot(std::vector<Row>& rows, int64_t index) {
  if (index < 0 || index >= max_workers)
    return nullptr;
  if (rows.size() <= static_cast<std::size_t>(index))
    rows.resize(static_cast<std::size_t>(index) + 1);
  return &rows[static_cast<std::size_t>(index)];
}

worker_time* worker_slot(run_history& h, int64_t w) {
  auto* row = slot(h.workers, w);
  if (row != nullptr)
    row->worker = w;
  return row;
}

stage_time* stage_slot(run_history& h, int64_t pipeline, int64_t stage) {
  for (auto& s : h.stages)
    if (s.pipeline == pipeline && s.stage == stage)
      return &s;
  if (h.stages.size() >= static_cast<std::size_t>(max_workers))
    return nullptr;
  h.stages.push_back({pipeline, stage, 0, 0});
  return &h.stages.back();
}

// What a run folder's files may be when they are read back: troupe writes summaries of a few
// KB and plans of a few lines. A file far past that was not written by troupe; it is refused,
// or (plan.txt) cut, rather than read into memory whole.
constexpr std::uintmax_t max_json_bytes = 64 << 20;
constexpr std::size_t max_plan_bytes = 1 << 20;

// Only regular files: a name linked to /dev/zero or a pipe would never end.
bool regular_file(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    return false;
  if (!fs::is_regular_file(path, ec))
    throw data_error(path.string() + ": not a regular file");
  return true;
}

std::string read_text_file(const fs::path& path) {
  if (!regular_file(path))
    return "";
  std::ifstream in(path, std::ios::binary);
  std::string text(max_plan_bytes, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  return text;
}

// A visitor of any record from the lambdas that handle some kinds: the rest are ignored.
template <class... F>
struct folding : F... {
  using F::operator()...;
  template <class R>
  void operator()(const R&) const {}
};
template <class... F>
folding(F...) -> folding<F...>;

void fold_events(run_history& h, const records::any_record& record) {
  std::visit(
      folding{
          [&](const records::checkpoint& r) {
            h.events.push_back({r.t, "checkpoint",
                                r.error.empty()
                                    ? fmt::format("checkpoint after step {} ({:.1f} MB)", r.step,
                                                  static_cast<double>(r.bytes) / 1e6)
                                    : "checkpoint failed: " + r.error});
          },
          [&](const records::resumed& r) {
            h.events.push_back({r.t, "resumed", fmt::format("resumed after step {}", r.step)});
          },
          [&](const records::phase& r) {
            h.events.push_back({r.t, "phase", fmt::format("{} from step {}", r.policy, r.step)});
          },
          [&](const records::failure& r) {
            h.events.push_back({r.t, "failure", "failed: " + r.error});
          },
          [&](const records::node_lost& r) {
            h.events.push_back(
                {r.t, "node_lost",
                 fmt::format("node {} lost at step {} ({}); worker(s) {} gone, {} node(s) left",
                             r.node, r.step, r.reason, fmt::join(r.workers, ", "), r.live_nodes)});
          },
          [&](const records::step_redone& r) {
            h.events.push_back({r.t, "step_redone",
                                fmt::format("step {} redone by the live workers (membership {})",
                                            r.step, r.epoch)});
          },
          [&](const records::node_joined& r) {
            h.events.push_back(
                {r.t, "node_joined",
                 fmt::format("node {} joined at step {}: worker(s) {}, {:.1f} MB of state", r.node,
                             r.step, fmt::join(r.workers, ", "),
                             static_cast<double>(r.state_bytes) / 1e6)});
          },
          [&](const records::replicas_checked& r) {
            h.events.push_back(
                {r.t, "replicas_checked",
                 fmt::format("replicas {} hold the same weights after step {} (SHA-256 {})",
                             fmt::join(r.workers, ", "), r.step, r.sha256.substr(0, 12))});
          },
      },
      record);
}

// The figures the report draws from a record of evaluation: accuracy only where it is one.
eval_row eval_row_of(int64_t step, double t, const std::string& split, double loss, double value,
                     bool accuracy) {
  return {step, t, split, loss, accuracy ? value : 0.0, -1, accuracy};
}

// summary.json's per-worker totals are the run's own; the records may have been aggregated.
void take_summary_workers(run_history& h) {
  auto it = h.summary.find("workers");
  if (it == h.summary.end() || !it->is_array())
    return;
  for (const auto& w : *it) {
    if (!w.is_object())
      continue;
    auto* row = worker_slot(h, integer(w, "rank"));
    if (row == nullptr)
      continue;
    row->compute_s = number(w, "compute_s");
    row->comm_s = number(w, "comm_s");
    row->apply_s = number(w, "apply_s");
    row->data_wait_s = number(w, "data_wait_s");
    row->wait_s = number(w, "wait_s");
    row->idle_s = number(w, "idle_s");
  }
}

}  // namespace

nlohmann::json read_json_object(const std::string& file) {
  const fs::path path(file);
  if (!regular_file(path))
    return nullptr;
  std::error_code ec;
  if (const auto size = fs::file_size(path, ec); !ec && size > max_json_bytes)
    throw data_error(fmt::format("{}: {:.0f} MB, more than troupe writes (at most {} MB is read)",
                                 path.string(), static_cast<double>(size) / 1e6,
                                 max_json_bytes >> 20));
  std::ifstream in(path);
  if (!in)
    return nullptr;
  std::stringstream buffer;
  buffer << in.rdbuf();
  auto parsed = parse_shallow_json(buffer.str());
  if (parsed.is_discarded())
    throw data_error(path.string() +
                     ": not JSON (was it cut off while being written?), or nested deeper than " +
                     std::to_string(max_json_depth) + " levels");
  if (!parsed.is_object())
    throw data_error(path.string() + ": not a JSON object, as troupe writes it");
  return parsed;
}

std::string run_history::name() const {
  if (job.is_object() && job.contains("name") && job["name"].is_string())
    return job["name"].get<std::string>();
  return fs::path(folder).filename().string();
}

void fold_record(run_history& h, const nlohmann::json& line) {
  const auto record = records::parse_record(line);
  if (!record) {
    // A line that is no record troupe writes; an event of a later version is passed over.
    const auto event = line.find("event");
    if (event == line.end() || !event->is_string() ||
        records::is_known_event(event->get<std::string>()))
      ++h.skipped_lines;
    return;
  }
  std::visit(
      folding{
          [&](const records::step& r) {
            h.steps.push_back({r.step, r.t, r.loss, r.samples_per_s, r.samples, r.lr});
          },
          [&](const records::eval& r) {
            h.evals.push_back(
                eval_row_of(r.step, r.t, r.split, r.loss, r.accuracy, r.metric == "accuracy"));
          },
          [&](const records::member_eval& r) {
            auto e = eval_row_of(r.step, r.t, r.split, r.loss, r.accuracy, true);
            e.member = r.member;
            h.member_evals.push_back(e);
          },
          [&](const records::worker_step& r) {
            if (auto* w = worker_slot(h, r.worker)) {
              w->compute_s += r.compute_s;
              w->comm_s += r.comm_s;
              w->apply_s += r.apply_s;
              w->data_wait_s += r.data_wait_s;
            }
          },
          [&](const records::waited& r) {
            if (auto* w = worker_slot(h, r.worker))
              w->wait_s += r.wait_s;
          },
          [&](const records::applied& r) { h.staleness[r.staleness] += records::records_in(line); },
          [&](const records::confusion& r) { h.confusion = r; },
          [&](const records::stage_step& r) {
            if (auto* s = stage_slot(h, r.pipeline, r.stage)) {
              s->busy_s += r.busy_s;
              s->idle_s += r.idle_s;
            }
            if (auto* w = worker_slot(h, r.worker))
              w->idle_s += r.idle_s;
          },
      },
      *record);
  fold_events(h, *record);
}

run_follower::run_follower(std::string folder) {
  history_.folder = std::move(folder);
}

bool run_follower::same_metrics_file(const std::string& path) {
  constexpr std::size_t head_bytes = 256;
  struct stat info {};
  // Not a regular file (a pipe put there): no bytes of it are read, here or by refresh().
  const bool exists = ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
  const std::pair<uint64_t, uint64_t> id{exists ? info.st_dev : 0, exists ? info.st_ino : 0};
  const auto size = exists ? static_cast<std::uintmax_t>(info.st_size) : 0;
  std::string head(std::min<std::uintmax_t>(size, head_bytes), '\0');
  if (!head.empty()) {
    std::ifstream in(path, std::ios::binary);
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<std::size_t>(in.gcount()));
  }
  if (offset_ == 0) {  // nothing read yet: whatever it is now is the file
    file_id_ = id;
    head_ = head;
    return true;
  }
  const auto compared = std::min(head.size(), head_.size());
  const bool same =
      id == file_id_ && size >= offset_ && head.compare(0, compared, head_, 0, compared) == 0;
  if (same && head.size() > head_.size())
    head_ = head;
  return same;
}

const run_history& run_follower::refresh() {
  const fs::path dir(history_.folder);
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw data_error(history_.folder + ": not a folder (give a run's or a suite's output folder)");
  const auto metrics = dir / "metrics.jsonl";
  const auto summary = dir / "summary.json";
  const bool has_metrics = fs::exists(metrics, ec);
  // A folder this user may not read was called "not a run's output folder".
  if (ec && ec != std::errc::no_such_file_or_directory)
    throw data_error(history_.folder + ": cannot read it: " + ec.message());
  if (!has_metrics && !fs::exists(summary, ec))
    throw data_error(history_.folder +
                     ": holds neither metrics.jsonl nor summary.json: not a run's output folder");
  if (!same_metrics_file(metrics.string())) {
    // Another file, or rewritten from the start (or cut back by a resume): fold it again.
    history_ = run_history{};
    history_.folder = dir.string();
    offset_ = 0;
    lines_.clear();
    same_metrics_file(metrics.string());  // what the file now is
  }
  history_.job = read_json_object((dir / "job.json").string());
  history_.summary = read_json_object(summary.string());
  history_.plan = read_text_file(dir / "plan.txt");
  std::ifstream in;
  if (regular_file(metrics))
    in.open(metrics, std::ios::binary);
  if (in) {
    // What was appended since the last read, in pieces: the file may be large.
    const auto end = fs::file_size(metrics, ec);
    in.seekg(static_cast<std::streamoff>(offset_));
    std::string piece(4 << 20, '\0');
    while (!ec && offset_ < end) {
      in.read(piece.data(),
              static_cast<std::streamsize>(std::min<std::uintmax_t>(piece.size(), end - offset_)));
      const auto got = static_cast<std::size_t>(in.gcount());
      if (got == 0)
        break;
      offset_ += got;
      // A last line without its newline may still be being written: it waits for the next
      // read.
      history_.skipped_lines +=
          lines_.feed(std::string_view(piece.data(), got),
                      [this](const nlohmann::json& record) { fold_record(history_, record); });
    }
  }
  take_summary_workers(history_);
  return history_;
}

run_history read_run_history(const std::string& folder) {
  return run_follower(folder).refresh();
}

}  // namespace troupe
