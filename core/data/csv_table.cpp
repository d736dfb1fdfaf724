#include "core/data/csv_table.hpp"

#include "core/data/targets.hpp"
#include "core/errors.hpp"
#include "core/io/regular_file.hpp"

#include <ATen/ATen.h>
#include <csv.h>
#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <string_view>
#include <unordered_map>

namespace troupe {
namespace {

// A column's name in a message: the first 40 characters.
std::string cut(const std::string& name) {
  return name.size() <= 40 ? name : name.substr(0, 40) + "...";
}

// libcsv calls back from C: the callbacks must not throw, so the first problem is kept here and
// thrown once parsing returns.
struct table_reader {
  std::string path;
  std::string label;
  bool class_labels = true;
  const std::vector<std::string>* expected_header = nullptr;  // the training file's

  std::vector<std::string> header;
  std::optional<std::size_t> label_column;
  std::vector<float> features;
  std::vector<double> targets;
  std::size_t field = 0;     // within the current row
  int64_t line = 1;          // of the current row (quoted line breaks aside)
  bool header_read = false;  // blank lines may come before it
  int last_terminator = 0;   // of the last row: a '\r' and then '\n' end one line
  std::optional<std::string> problem;

  void fail(std::string message) {
    if (!problem)
      problem = fmt::format("{}: line {}: {}", path, line, message);
  }

  void on_header_field(std::string name) { header.push_back(std::move(name)); }

  // Where the header parts from the training file's, in a line however wide the tables are
  // (echoing both headers of 10^6 columns made a 7.9 MB message).
  std::string header_difference(const std::vector<std::string>& expected) const {
    std::size_t k = 0;
    while (k < header.size() && k < expected.size() && header[k] == expected[k])
      ++k;
    const auto here = k < header.size() ? "\"" + cut(header[k]) + "\"" : std::string("nothing");
    const auto there =
        k < expected.size() ? "\"" + cut(expected[k]) + "\"" : std::string("nothing");
    return fmt::format(
        "the header differs from the training file's at column {}: {} here, {} there ({} "
        "columns here, {} there)",
        k + 1, here, there, header.size(), expected.size());
  }

  void on_header_end() {
    std::unordered_map<std::string_view, std::size_t> column_of;
    for (std::size_t i = 0; i < header.size(); ++i) {
      // Two columns of one name: which is the label (or a feature) would be a guess, and a label
      // read from one while the other went in as a feature leaked the target into the inputs.
      if (const auto [it, first] = column_of.emplace(header[i], i); !first)
        return fail(fmt::format("columns {} and {} are both named \"{}\"", it->second + 1, i + 1,
                                cut(header[i])));
      if (header[i] == label)
        label_column = i;
    }
    if (expected_header != nullptr && header != *expected_header)
      return fail(header_difference(*expected_header));
    if (!label_column) {
      constexpr std::size_t shown = 8;
      return fail(fmt::format(
          "no column \"{}\" (data.label) in the header ({}{}); name the target column there", label,
          fmt::join(header.begin(), header.begin() + std::min(shown, header.size()), ","),
          header.size() > shown ? fmt::format(", ... {} columns", header.size()) : ""));
    }
    if (header.size() < 2)
      fail("the header names only the label column: there is no input feature");
  }

  void on_value_field(const char* text, std::size_t length) {
    const auto column = field;
    if (column >= header.size())
      return;  // counted, and refused, at the row's end
    const auto& name = header[column];
    if (length == 0)
      return fail(fmt::format("column \"{}\" is empty", name));
    errno = 0;
    char* end = nullptr;
    const double value = std::strtod(text, &end);
    if (end != text + length)
      return fail(fmt::format("column \"{}\" holds \"{}\", not a number", name,
                              std::string(text, std::min<std::size_t>(length, 40))));
    if (!std::isfinite(value) || errno == ERANGE)
      return fail(fmt::format("column \"{}\" holds {}, not a finite float", name,
                              std::string(text, std::min<std::size_t>(length, 40))));
    // Training is in float32: a value past its range would become infinite there (a cell of
    // 1e39 passed validate and the run diverged at step 6).
    if (std::abs(value) > std::numeric_limits<float>::max())
      return fail(fmt::format("column \"{}\" holds {}, beyond float32's range (±3.4e38)", name,
                              std::string(text, std::min<std::size_t>(length, 40))));
    if (column == *label_column) {
      if (class_labels && (value != std::floor(value) || value < 0))
        return fail(fmt::format(
            "column \"{}\" holds {}: under cross_entropy the label is a class number from 0 (set "
            "training.loss to mse or l1 for a numeric target)",
            name, std::string(text, length)));
      // Checked here, as a double: a label of 1e30 has no int64 to become.
      if (class_labels && value >= static_cast<double>(max_tensor_classes))
        return fail(fmt::format("column \"{}\" holds {}: at most {} classes", name,
                                std::string(text, length), max_tensor_classes));
      targets.push_back(value);
    } else {
      features.push_back(static_cast<float>(value));
    }
  }

  void on_field(const char* text, std::size_t length) {
    if (!problem) {
      if (!header_read)
        on_header_field(std::string(text, length));
      else
        on_value_field(text, length);
    }
    ++field;
  }

  // `terminator`: the '\r' or '\n' that ended the row (libcsv reports every one, so that blank
  // lines count in the line numbers), -1 at the end of the file.
  void on_row_end(int terminator) {
    const bool blank = field == 0;
    const bool rest_of_crlf = blank && terminator == '\n' && last_terminator == '\r';
    last_terminator = terminator;
    if (rest_of_crlf)
      return;
    if (!problem && !blank && header_read && field != header.size())
      fail(fmt::format("{} fields, the header has {}", field, header.size()));
    if (!problem && !blank && !header_read) {
      on_header_end();
      header_read = true;
    }
    field = 0;
    ++line;
  }
};

extern "C" void csv_field_callback(void* text, std::size_t length, void* reader) {
  static_cast<table_reader*>(reader)->on_field(static_cast<const char*>(text), length);
}
extern "C" void csv_row_callback(int terminator, void* reader) {
  static_cast<table_reader*>(reader)->on_row_end(terminator);
}

// A number, or a column's name, is far shorter. libcsv keeps a field whole until it ends: without
// a bound, a file with no separators (a link to /dev/zero) is read into one field until memory
// runs out.
constexpr std::size_t max_field_bytes = std::size_t{1} << 20;

void parse_file(table_reader& reader) {
  auto in = open_data_file(reader.path);
  csv_parser parser;
  if (csv_init(&parser, CSV_STRICT | CSV_STRICT_FINI | CSV_APPEND_NULL | CSV_REPALL_NL) != 0)
    throw std::bad_alloc();
  const std::unique_ptr<csv_parser, void (*)(csv_parser*)> owned(&parser, csv_free);
  std::vector<char> chunk(1 << 16);
  for (std::size_t n = chunk.size(), first = 1; !reader.problem && n == chunk.size(); first = 0) {
    n = in.read(chunk.data(), chunk.size());
    // A spreadsheet's UTF-8 byte order mark: not part of the first column's name (where no
    // message could show it), nor a character before a quoted name (libcsv's strict mode).
    const std::size_t skip =
        first && n >= 3 && std::memcmp(chunk.data(), "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
    if (csv_parse(&parser, chunk.data() + skip, n - skip, csv_field_callback, csv_row_callback,
                  &reader) != n - skip)
      reader.fail(fmt::format("not valid CSV ({})", csv_strerror(csv_error(&parser))));
    else if (parser.entry_pos > max_field_bytes)
      reader.fail(fmt::format("a field longer than {} MiB: is it a CSV table of numbers?",
                              max_field_bytes >> 20));
  }
  if (!reader.problem && csv_fini(&parser, csv_field_callback, csv_row_callback, &reader) != 0)
    reader.fail(fmt::format("not valid CSV ({})", csv_strerror(csv_error(&parser))));
  if (reader.problem)
    throw data_error(*reader.problem);
  if (reader.header.empty())
    throw data_error(reader.path + ": is empty; it needs a header row and rows of numbers");
  if (reader.targets.empty())
    throw data_error(reader.path + ": holds a header but no rows");
}

}  // namespace

csv_split read_csv_split(const std::string& path, const std::string& label, bool class_labels,
                         const csv_split* train) {
  table_reader reader;
  reader.path = path;
  reader.label = label;
  reader.class_labels = class_labels;
  reader.expected_header = train != nullptr ? &train->header : nullptr;
  parse_file(reader);
  const auto rows = static_cast<int64_t>(reader.targets.size());
  const auto columns = static_cast<int64_t>(reader.header.size()) - 1;
  auto x = at::from_blob(reader.features.data(), {rows, columns}, at::kFloat).clone();
  auto y = at::from_blob(reader.targets.data(), {rows}, at::kDouble);
  y = class_labels ? y.to(at::kLong) : y.to(at::kFloat);
  const auto where = fmt::format("{}: column \"{}\"", path, label);
  auto targets = checked_targets(where, y, train != nullptr ? train->rows.labels : at::Tensor());
  return {std::move(reader.header), {std::move(x), std::move(targets)}};
}

dataset load_csv_files(const std::string& train_path, const std::string& test_path,
                       const std::string& label, bool class_labels) {
  const auto train = read_csv_split(train_path, label, class_labels, nullptr);
  const auto test = read_csv_split(test_path, label, class_labels, &train);
  dataset data;
  data.train = train.rows;
  data.test = test.rows;
  data.classes = outputs_for(data.train.labels);
  data.description = fmt::format("csv ({} train, {} test, {} features)", data.train.size(),
                                 data.test.size(), data.train.images.row_shape().at(0));
  return data;
}

}  // namespace troupe
