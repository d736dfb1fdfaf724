// "Did you mean ...?" for a misspelt key: the known key closest to it by edit distance, when it
// is close enough to be a slip of the fingers rather than another word.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace troupe {

/// Edit distance: insertions, deletions, substitutions and swaps of two neighbours ("nmae" for
/// "name", the commonest slip) each cost 1 (optimal string alignment).
std::size_t edit_distance(const std::string& a, const std::string& b);

/// The known key nearest to `key`, if at most a third of its letters (at least one, at most 3)
/// are wrong; ties go to the first in `known`.
std::optional<std::string> nearest_key(const std::string& key,
                                       const std::vector<std::string>& known);

}  // namespace troupe
