// --set PATH=VALUE: walks (and creates) the dotted path in a job's JSON and merges the value in
// as a suite merges its jobs (RFC 7386), reporting a bad assignment as one job_error problem
// that quotes it.
#include "core/config/overrides.hpp"

#include "core/config/json_fields.hpp"
#include "core/config/parse_job.hpp"
#include "core/errors.hpp"
#include "core/io/shallow_json.hpp"

#include <cctype>
#include <vector>

namespace troupe {
namespace {

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> keys;
  std::string key;
  for (char c : path) {
    if (c == '.') {
      keys.push_back(key);
      key.clear();
    } else {
      key += c;
    }
  }
  keys.push_back(key);
  return keys;
}

bool is_index(const std::string& key) {
  if (key.empty())
    return false;
  for (char c : key)
    if (!std::isdigit(static_cast<unsigned char>(c)))
      return false;
  return true;
}

// A training length given here replaces the other one, so that `--set training.steps=50` shortens a
// job whose file counts epochs (and vice versa). The length may come as a dotted key or inside a
// `training` object.
void replace_other_length(nlohmann::json& job, const std::vector<std::string>& keys,
                          const nlohmann::json& value) {
  nlohmann::json patch = value;
  for (auto k = keys.rbegin(); k != keys.rend(); ++k)
    patch = nlohmann::json{{*k, std::move(patch)}};
  const auto training = patch.find("training");
  if (training == patch.end() || !training->is_object() || !job.contains("training") ||
      !job["training"].is_object())
    return;
  for (const auto& [given, other] : {std::pair{"steps", "epochs"}, std::pair{"epochs", "steps"}})
    if (training->contains(given) && !(*training)[given].is_null() && !training->contains(other))
      job["training"].erase(other);
}

// VALUE as JSON, or as the plain string it is where it is none; throws job_error with the one
// problem (not yet naming the assignment).
nlohmann::json parsed_value(const std::string& text) {
  nlohmann::json value;
  try {
    value = parse_json_within_depth(text);
  } catch (const json_too_deep& e) {
    throw job_error({std::string("the value is ") + e.what()});
  }
  if (value.is_discarded()) {
    // A value that begins as an object or an array and does not parse is a typo in JSON (a
    // quote the shell ate, a missing brace), not a name: say where it breaks instead of
    // passing it on as a string that validation then calls "not an object".
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first != std::string::npos && (text[first] == '{' || text[first] == '[')) {
      try {
        parse_json_text(text, "the value");
      } catch (const job_error& e) {
        throw job_error({e.problems().front() + " (a value that begins with '" + text[first] +
                         "' is read as JSON; to mean a string, give it as one: '\"...\"')"});
      }
    }
    return text;
  }
  // A key twice in an object value (training={"steps":20,"steps":30}) is refused as it is in a
  // job file, not decided silently for the last. (parse_json_text's checks, which want an
  // object at the top.)
  if (value.is_object())
    parse_json_text(text, "the value");
  return value;
}

}  // namespace

void apply_override(nlohmann::json& job, const std::string& assignment) {
  // A long value is cut in messages: the problem is named, the value was the user's own.
  auto fail = [&](const std::string& why) {
    throw job_error({"--set " + shown_key(assignment) + ": " + why});
  };
  const auto eq = assignment.find('=');
  if (eq == std::string::npos)
    fail("expected PATH=VALUE");
  const std::string path = assignment.substr(0, eq);
  const std::string text = assignment.substr(eq + 1);
  if (path.empty())
    fail("empty path");

  nlohmann::json value;
  try {
    value = parsed_value(text);
  } catch (const job_error& e) {
    fail(e.problems().front());
  }

  const auto keys = split_path(path);
  for (const auto& key : keys)
    if (key.empty())
      fail("empty key in path");
  if (keys.size() > static_cast<std::size_t>(max_json_depth))
    fail("a path of more than " + std::to_string(max_json_depth) + " keys");

  // Work on a copy so that a failure half-way leaves the job untouched.
  nlohmann::json result = job;
  nlohmann::json* node = &result;
  std::string pointer;
  auto where = [&] { return pointer.empty() ? std::string("/") : pointer; };
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const auto& key = keys[i];
    const bool last = i + 1 == keys.size();
    if (node->is_array()) {
      if (!is_index(key))
        fail(where() + " is an array: '" + key + "' is not an index");
      // More digits than any real array's size would overflow stoul: out of range all the same.
      const auto index = key.size() > 9 ? node->size() : std::stoul(key);
      if (index >= node->size())
        fail(where() + " has " + std::to_string(node->size()) + " elements, no index " + key);
      node = &(*node)[index];
    } else if (node->is_object() || node->is_null()) {
      // The suite's rules (a JSON merge patch, RFC 7386): null removes the key.
      if (last && value.is_null()) {
        if (node->is_null())
          *node = nlohmann::json::object();
        node->erase(key);
        break;
      }
      node = &(*node)[key];  // creates the key (and turns null into an object)
    } else {
      fail(where() + " is not an object");
    }
    pointer += "/" + key;
    // ... and an object merges into the object there instead of replacing it, as a suite's
    // `jobs` entry merges onto its base.
    if (last)
      node->merge_patch(value);
  }
  replace_other_length(result, keys, value);
  job = std::move(result);
}

}  // namespace troupe
