#include "core/job/device_spec.hpp"

#include <ostream>

namespace troupe {

std::string device_spec::str() const {
  if (kind == kind_type::cpu)
    return "cpu";
  return index ? "cuda:" + std::to_string(*index) : "cuda";
}

std::ostream& operator<<(std::ostream& out, const device_spec& d) {
  return out << d.str();
}

std::optional<device_spec> parse_device(const std::string& text) {
  if (text == "cpu")
    return device_spec{};
  if (text == "cuda")
    return device_spec{device_spec::kind_type::cuda, std::nullopt};
  const std::string prefix = "cuda:";
  const auto digits = text.size() - prefix.size();
  if (text.rfind(prefix, 0) != 0 || digits == 0 || digits > 4 ||
      text.find_first_not_of("0123456789", prefix.size()) != std::string::npos)
    return std::nullopt;
  const int index = std::stoi(text.substr(prefix.size()));
  if (index >= 1024 || (digits > 1 && text[prefix.size()] == '0'))
    return std::nullopt;
  return device_spec{device_spec::kind_type::cuda, index};
}

}  // namespace troupe
