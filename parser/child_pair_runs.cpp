#include "parser/child_pair_runs.h"

#include <algorithm>
#include <numeric>

namespace cky {

ChildPairRuns::ChildPairRuns(const Grammar& g) {
  // A stable sort by (left, right) as two stable counting sorts, by right then by left: linear,
  // where a comparison sort with the children looked up in its comparator took about 0.15 s a
  // grammar on en_sm6s (every CPU backend and every pruning level builds one).
  const size_t rules = static_cast<size_t>(g.num_binary_rules());
  std::vector<size_t> next(g.num_states() + 1);  // per child state: its next position
  auto start_positions = [&](const std::vector<int32_t>& child) {
    std::fill(next.begin(), next.end(), 0);
    for (size_t r = 0; r < rules; ++r) ++next[child[r] + 1];
    std::partial_sum(next.begin(), next.end(), next.begin());
  };
  std::vector<int32_t> by_right(rules);
  start_positions(g.binary_right);
  for (size_t r = 0; r < rules; ++r) by_right[next[g.binary_right[r]]++] = int32_t(r);
  start_positions(g.binary_left);
  order.resize(rules);
  for (int32_t r : by_right) order[next[g.binary_left[r]]++] = r;
  left_pair_begin.assign(g.num_states() + 1, 0);
  for (size_t k = 0; k < order.size(); ++k) {
    const int32_t r = order[k];
    if (k == 0 || g.binary_left[order[k - 1]] != g.binary_left[r] ||
        g.binary_right[order[k - 1]] != g.binary_right[r]) {
      ++left_pair_begin[g.binary_left[r] + 1];
      pair_right.push_back(g.binary_right[r]);
      pair_begin.push_back(int32_t(k));
    }
  }
  pair_begin.push_back(int32_t(order.size()));
  std::partial_sum(left_pair_begin.begin(), left_pair_begin.end(), left_pair_begin.begin());
}

void PresentLeftStates(const double* cell, double absent,
                       const std::vector<int32_t>& left_pair_begin, std::vector<int32_t>* present) {
  present->clear();
  const int32_t states = int32_t(left_pair_begin.size()) - 1;
  for (int32_t s = 0; s < states; ++s) {
    if (cell[s] > absent && left_pair_begin[s] < left_pair_begin[s + 1]) present->push_back(s);
  }
}

}  // namespace cky
