#include "apps/troupe/suite_display.hpp"

#include "apps/troupe/progress_printer.hpp"
#include "core/io/terminal_output.hpp"
#include "core/train/progress_line.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>

namespace troupe {
namespace {

// A terminal redraws twice a second; a log gets a job's line at most every 10 s.
constexpr auto poll_interval = std::chrono::milliseconds(500);
constexpr auto log_interval = std::chrono::seconds(10);

}  // namespace

suite_display::suite_display(std::vector<job_row> rows, std::FILE* out, bool quiet)
    : rows_(std::move(rows)),
      offsets_(rows_.size(), 0),
      last_lines_(rows_.size()),
      last_printed_(rows_.size()),
      out_(out),
      quiet_(quiet),
      terminal_(::isatty(::fileno(out)) == 1) {}

void suite_display::erase_table() {
  if (drawn_ > 0)  // up to the table's first line, clear below
    print_to_terminal(out_, "\x1b[{}A\r\x1b[J", drawn_);
  drawn_ = 0;
}

void suite_display::draw_table() {
  const auto lines = render_table(rows_, terminal_width(out_));
  std::string text;  // one write: the terminal shows the table whole, not line by line
  for (const auto& line : lines)
    text += line + "\n";
  write_to_terminal(out_, text);
  drawn_ = lines.size();
}

void suite_display::event(const std::string& text) {
  const bool table = terminal_ && !quiet_;
  if (table)
    erase_table();
  print_to_terminal(out_, "{}\n", text);
  if (table)
    draw_table();
}

void suite_display::set_status(std::size_t job, const std::string& status) {
  rows_[job].status = status;
}

void suite_display::read(std::size_t job, const std::string& path) {
  // The child creates the file after it starts; until then there is nothing to read.
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return;
  in.seekg(static_cast<std::streamoff>(offsets_[job]));
  if (!in)
    return;
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  offsets_[job] += text.size();
  rows_[job].feed(text);
}

void suite_display::poll(const std::function<std::string(std::size_t)>& metrics_path) {
  if (quiet_)
    return;
  const auto now = clock::now();
  if (now - last_poll_ < poll_interval)
    return;
  last_poll_ = now;
  // Ended jobs too: their last records may have come after the previous look.
  for (std::size_t j = 0; j < rows_.size(); ++j)
    if (rows_[j].status != "queued")
      read(j, metrics_path(j));
  if (terminal_) {
    erase_table();
    draw_table();
  } else {
    for (std::size_t j = 0; j < rows_.size(); ++j) {
      if (rows_[j].status != "running" || rows_[j].steps == 0)
        continue;
      auto line = row_line(rows_[j]);
      if (line == last_lines_[j] || now - last_printed_[j] < log_interval)
        continue;
      print_to_terminal(out_, "{}\n", line);
      last_lines_[j] = std::move(line);
      last_printed_[j] = now;
    }
  }
}

void suite_display::close(const std::function<std::string(std::size_t)>& metrics_path) {
  if (quiet_ || !terminal_)
    return;
  for (std::size_t j = 0; j < rows_.size(); ++j)
    read(j, metrics_path(j));
  erase_table();
  draw_table();
}

}  // namespace troupe
