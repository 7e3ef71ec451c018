#include "parser/child_pair_runs.h"

#include <algorithm>
#include <numeric>
#include <tuple>

namespace cky {

ChildPairRuns::ChildPairRuns(const Grammar& g) {
  order.resize(g.num_binary_rules());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return std::tie(g.binary_left[a], g.binary_right[a]) <
           std::tie(g.binary_left[b], g.binary_right[b]);
  });
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

}  // namespace cky
