// What the data tests check of an error: the message a call's data_error carries.
#pragma once

#include "core/errors.hpp"

#include <string>

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// The message of the data_error that `f` throws, or "" when it throws none.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const troupe::data_error& e) {
    return e.what();
  }
  return "";
}
