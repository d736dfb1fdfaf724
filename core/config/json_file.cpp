// read_json_file(): a job or suite file from disk, with every way the text can be wrong named by
// file, line and column or JSON path: unreadable, not JSON, a number beyond a double, a key
// given twice (JSON allows it and the last would silently win), a top level that is no object.
// parse_json_text() does the same checks on text already in memory (the fuzz targets use it).
#include "core/config/parse_job.hpp"

#include "core/config/json_fields.hpp"
#include "core/errors.hpp"
#include "core/io/whole_file.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>
#include <vector>

namespace troupe {
namespace {

using json = nlohmann::json;

// Where the parser is, for naming the path of a duplicate key and of a value nested too deep
// (the suite's expansion and the job's checks walk values recursively: 200,000 nested arrays in
// a sweep overflowed the stack): one frame per open object or array, with the keys seen so far
// or the index of the element being read.
class key_tracker {
 public:
  /// The parser's callback: refuses a key given twice in one object (job_error with its path).
  bool operator()(int, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        frames_.push_back({event == json::parse_event_t::object_start, {}, "", 0});
        if (frames_.size() > static_cast<std::size_t>(max_json_depth))
          throw job_error({path() + ": nested deeper than " + std::to_string(max_json_depth) +
                           " levels (a job is a few levels deep)"});
        break;
      case json::parse_event_t::key:
        on_key(parsed.get<std::string>());
        break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        frames_.pop_back();
        element_done();
        break;
      case json::parse_event_t::value:
        element_done();
        break;
    }
    return true;
  }

 private:
  struct frame {
    bool object;
    std::set<std::string> keys;
    std::string key;    ///< object: the member being read
    int64_t index = 0;  ///< array: the element being read
  };

  void on_key(const std::string& key) {
    auto& f = frames_.back();
    if (!f.keys.insert(key).second)
      throw job_error({path() + "/" + pointer_token(key) +
                       ": given twice in the same object (JSON would keep the last silently; "
                       "say which one you mean)"});
    f.key = key;
  }

  void element_done() {
    if (!frames_.empty() && !frames_.back().object)
      ++frames_.back().index;
  }

  std::string path() const {
    std::string out;
    for (std::size_t i = 0; i + 1 < frames_.size(); ++i)
      out += "/" +
             (frames_[i].object ? pointer_token(frames_[i].key) : std::to_string(frames_[i].index));
    return out;
  }

  std::vector<frame> frames_;
};

// nlohmann's byte offset as line:column, which editors understand.
std::string line_and_column(const std::string& text, std::size_t byte) {
  std::size_t line = 1, column = 1;
  const std::size_t end = std::min<std::size_t>(byte > 0 ? byte - 1 : 0, text.size());
  for (std::size_t i = 0; i < end; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return std::to_string(line) + ":" + std::to_string(column);
}

// nlohmann's message without its "[json.exception.parse_error.101] parse error at ...: ".
std::string plain(const json::exception& e) {
  std::string what = e.what();
  if (auto colon = what.find(": "); colon != std::string::npos)
    what = what.substr(colon + 2);
  else if (auto bracket = what.find("] "); bracket != std::string::npos)
    what = what.substr(bracket + 2);
  return what;
}

// A job or suite file is kilobytes; a suite of thousands of jobs a few megabytes.
constexpr std::size_t max_job_file_bytes = std::size_t{64} << 20;

std::string read_text(const std::string& path) {
  // A folder opens fine as a stream and then reads as nothing: say what it is instead.
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw job_error({path + ": cannot open: " + std::strerror(EISDIR)});
  try {
    return read_small_file(path, max_job_file_bytes);
  } catch (const std::length_error& e) {
    throw job_error({path + ": " + e.what() + ", more than a job file holds (is it the job?)"});
  } catch (const std::runtime_error& e) {
    throw job_error({path + ": " + e.what()});
  }
}

}  // namespace

nlohmann::json read_json_file(const std::string& path) {
  return parse_json_text(read_text(path), path);
}

nlohmann::json parse_json_text(const std::string& text, const std::string& name) {
  json parsed;
  try {
    parsed = json::parse(text, key_tracker());
  } catch (const json::parse_error& e) {
    throw job_error({name + ":" + line_and_column(text, e.byte) + ": invalid JSON: " + plain(e)});
  } catch (const json::exception& e) {
    // Numbers beyond a double ("1e400") end up here, without a position.
    throw job_error({name + ": invalid JSON: " + plain(e)});
  } catch (const job_error& e) {
    throw job_error({name + ": " + e.problems().front()});
  }
  if (!parsed.is_object())
    throw job_error({name + ": the job must be a JSON object, got " + parsed.type_name()});
  return parsed;
}

}  // namespace troupe
