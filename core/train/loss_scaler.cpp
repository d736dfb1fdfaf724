#include "core/train/loss_scaler.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace troupe {

loss_scaler::loss_scaler(loss_scale_config settings)
    : settings_(settings), scale_(settings.initial) {
  if (!(settings.initial >= smallest && settings.initial <= largest) ||
      settings.growth_interval < 1)
    throw std::invalid_argument("loss_scaler: initial scale " + std::to_string(settings.initial) +
                                ", growth interval " + std::to_string(settings.growth_interval));
}

bool loss_scaler::record(bool finite) {
  if (!finite) {
    ++skipped_;
    good_steps_ = 0;
    scale_ = std::max(smallest, scale_ * 0.5);
    return false;
  }
  if (++good_steps_ == settings_.growth_interval) {
    good_steps_ = 0;
    scale_ = std::min(largest, scale_ * 2.0);
  }
  return true;
}

std::string loss_scaler::save() const {
  std::ostringstream out;
  out.precision(17);
  out << scale_ << ' ' << good_steps_ << ' ' << skipped_;
  return out.str();
}

void loss_scaler::load(const std::string& text) {
  std::istringstream in(text);
  double scale = 0;
  int64_t good = -1;
  int64_t skipped = -1;
  in >> scale >> good >> skipped;
  if (in.fail() || !(in >> std::ws).eof() || !(scale >= smallest && scale <= largest) || good < 0 ||
      skipped < 0)
    throw std::invalid_argument("loss scaler state \"" + text + "\" is not one troupe wrote");
  scale_ = scale;
  good_steps_ = good;
  skipped_ = skipped;
}

}  // namespace troupe
