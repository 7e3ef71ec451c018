// The Viterbi inside chart of one sentence: for every span [start, end) and state, the best
// log-score of a subtree rooted in that state over that span, after the cell's unary layer.
//
// Berkeley's decoder keeps, per cell, the binary (or lexical) maximum and then the maximum after
// one layer of closed unaries; only the latter is read by parents and by tree extraction, so that
// is what a chart holds. Scores are doubles on the CPU reference; a backend that computes in
// float widens them when it fills a chart.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "common/memory.h"

namespace cky {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// A sentence's charts grow with the square of its length (a 5,000-word sentence's can take more
// memory than the machine has), so each backend estimates them before it allocates them and gives
// a sentence that cannot fit kOutOfMemory (its line is "(())" with a warning) while the others are
// parsed.
//
// The bytes of the charts of a `length`-word sentence holding `bytes_per_cell` bytes in each of
// its length * (length + 1) / 2 cells (saturating at INT64_MAX).
inline int64_t ChartBytes(int32_t length, double bytes_per_cell) {
  const double cells = 0.5 * double(length) * (double(length) + 1);
  return int64_t(std::min(cells * bytes_per_cell, 9.0e18));
}
// "" when `bytes` fit in the memory available now (common/memory.h); else the message of the
// sentence's kOutOfMemory outcome.
inline std::string ChartsDoNotFit(int32_t length, int64_t bytes) {
  if (bytes < (int64_t(64) << 20)) return "";  // not worth reading /proc for
  const int64_t available = AvailableMemoryBytes();
  if (bytes <= available) return "";
  return "the charts of its " + std::to_string(length) + " words would take " +
         FormatBytes(double(bytes)) + ", more than the " + FormatBytes(double(available)) +
         " of memory available";
}

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
