#include "core/ensemble/member_figures.hpp"

#include "core/ensemble/ensemble_members.hpp"

#include <algorithm>
#include <stdexcept>

namespace troupe {

std::vector<member_report> member_reports(const job_config& job) {
  std::vector<member_report> members;
  for (int64_t k = 0; k < job.ensemble.members; ++k) {
    member_report m;
    m.member = k;
    m.seed = job.seed + static_cast<uint64_t>(k);
    m.lr = member_job(job, k).optimizer.lr;
    members.push_back(m);
  }
  return members;
}

std::vector<records::member_eval> take_member_figures(std::vector<member_report>& members,
                                                      int64_t step, const std::string& split,
                                                      const std::vector<double>& loss_sums,
                                                      const std::vector<int64_t>& correct,
                                                      int64_t count) {
  if (loss_sums.size() != members.size() || correct.size() != members.size())
    throw std::invalid_argument("an ensemble evaluation of " + std::to_string(loss_sums.size()) +
                                " member(s), the ensemble has " + std::to_string(members.size()));
  const double n = static_cast<double>(std::max<int64_t>(count, 1));
  const bool test = split == "test";
  std::vector<records::member_eval> evals;
  for (std::size_t m = 0; m < members.size(); ++m) {
    auto& member = members[m];
    const double loss = loss_sums[m] / n;
    const double accuracy = static_cast<double>(correct[m]) / n;
    (test ? member.test_loss : member.validation_loss) = loss;
    (test ? member.test_accuracy : member.validation_accuracy) = accuracy;
    evals.push_back({step, static_cast<int64_t>(m), split, loss, accuracy, 0});
  }
  return evals;
}

}  // namespace troupe
