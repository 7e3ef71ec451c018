// The Viterbi inside chart of one sentence: for every span [start, end) and state, the best
// log-score of a subtree rooted in that state over that span, after the cell's unary layer.
//
// Berkeley's decoder keeps, per cell, the binary (or lexical) maximum and then the maximum after
// one layer of closed unaries; only the latter is read by parents and by tree extraction, so that
// is what a chart holds. Scores are doubles on the CPU reference; a backend that computes in
// float widens them when it fills a chart.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace cky {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

class Chart {
 public:
  Chart() = default;
  Chart(int32_t length, int32_t num_states)
      : length_(length),
        num_states_(num_states),
        scores_(static_cast<size_t>(NumCells(length)) * num_states, kNegInf) {}

  // Changes the length and state count, keeping the scores already there (new ones are
  // -infinity) and the memory: a caller that set every score back to -infinity reuses the chart
  // for another sentence without reallocating or refilling it.
  void Resize(int32_t length, int32_t num_states) {
    length_ = length;
    num_states_ = num_states;
    scores_.resize(static_cast<size_t>(NumCells(length)) * num_states, kNegInf);
  }

  int32_t length() const { return length_; }
  int32_t num_states() const { return num_states_; }

  // Cells are laid out by span length, then start: all one-word cells first, then two-word, ...
  static int64_t NumCells(int32_t length) { return int64_t(length) * (length + 1) / 2; }
  int64_t CellIndex(int32_t start, int32_t end) const {
    const int32_t span = end - start;  // 1..length
    // Cells of shorter spans come first: sum_{w<span} (length - w + 1).
    const int64_t before = int64_t(span - 1) * (2 * length_ - span + 2) / 2;
    return before + start;
  }
  double* cell(int32_t start, int32_t end) {
    return scores_.data() + CellIndex(start, end) * num_states_;
  }
  const double* cell(int32_t start, int32_t end) const {
    return scores_.data() + CellIndex(start, end) * num_states_;
  }
  double score(int32_t start, int32_t end, int32_t state) const { return cell(start, end)[state]; }
  std::vector<double>& data() { return scores_; }
  const std::vector<double>& data() const { return scores_; }

 private:
  int32_t length_ = 0;
  int32_t num_states_ = 0;
  std::vector<double> scores_;
};

}  // namespace cky
