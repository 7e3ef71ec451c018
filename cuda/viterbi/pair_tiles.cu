// The tiles of kernels 7-9, built on the host (pair_tiles.cuh).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cuda/viterbi/pair_tiles.cuh"

namespace cky::cuda::viterbi {

bool PairTiles::Build(const GrammarView& g, const std::vector<float>& w, const TileOptions& o,
                      const std::vector<int>& aligned_first, std::string* error) {
  std::map<std::pair<int, int>, std::vector<int64_t>> by_pair;
  for (int64_t r = 0; r < g.num_binary; ++r)
    by_pair[{g.state_symbol[g.binary_left[r]], g.state_symbol[g.binary_right[r]]}].push_back(r);
  std::vector<int4> info;
  std::vector<int2> symbols;
  std::vector<int> pl_begin{0}, pl_parent, pl_rule_begin{0}, key;
  std::vector<float> key_w;
  // One launch per span length over every tile (heaviest first), or one per size class.
  const std::vector<int> limits = o.size_classes ? std::vector<int>{64, 128, 256, o.band_limit}
                                                 : std::vector<int>{o.band_limit};
  std::vector<int> tile_rules;
  // kLaneRules: units of at most kUnitRules rules of one parent, per tile longest first.
  std::vector<int4> units;
  std::vector<int> unit_begin{0};
  for (auto& [symbols_pair, all_rules] : by_pair) {
    const int b_sym = symbols_pair.first, c_sym = symbols_pair.second;
    const int b_first = g.symbol_first_state[b_sym], s_b = g.symbol_num_substates[b_sym];
    const int c_first = g.symbol_first_state[c_sym], s_c = g.symbol_num_substates[c_sym];
    if (s_c > o.band_limit) {
      *error = "a symbol has more substates than the pair-fused kernels support";
      return false;
    }
    // kQuadPad: pairs numbered b x s_c4 + c (s_c rounded up to 4), bands of whole 4-row blocks.
    const bool quad = o.quad_pad;
    const int s_c4 = (s_c + 3) / 4 * 4;
    int rows = std::max(1, o.band_limit / (quad ? s_c4 : s_c));
    if (o.aligned && rows >= 4) rows -= rows % 4;  // bands start at aligned rows
    for (int b_lo = 0; b_lo < s_b; b_lo += rows) {
      const int b_hi = std::min(s_b, b_lo + rows);
      std::vector<int64_t> rules;
      for (int64_t r : all_rules) {
        const int b = g.binary_left[r] - b_first;
        if (b >= b_lo && b < b_hi) rules.push_back(r);
      }
      if (rules.empty()) continue;
      int4 pinfo{b_first + b_lo, b_hi - b_lo, c_first, s_c};
      // Keys and rules use state numbers; only the split loop's row offsets are aligned.
      const int4 state_info = pinfo;
      if (o.aligned) pinfo.x = aligned_first[b_sym] + b_lo, pinfo.z = aligned_first[c_sym];
      const int pair_index = static_cast<int>(info.size());
      info.push_back(pinfo);
      symbols.push_back({b_sym, c_sym});
      tile_rules.push_back(static_cast<int>(rules.size()));
      std::stable_sort(rules.begin(), rules.end(), [&](int64_t x, int64_t y) {
        return g.binary_parent[x] < g.binary_parent[y];
      });
      const int tile_key_begin = static_cast<int>(key.size());
      for (size_t i = 0; i < rules.size(); ++i) {
        const int64_t r = rules[i];
        if (i == 0 || g.binary_parent[r] != g.binary_parent[rules[i - 1]]) {
          if (i > 0) pl_rule_begin.push_back(static_cast<int>(key.size()));
          pl_parent.push_back(g.binary_parent[r]);
        }
        const int b = g.binary_left[r] - state_info.x, c = g.binary_right[r] - state_info.z;
        key.push_back(b * (quad ? s_c4 : pinfo.w) + c);
        key_w.push_back(w[r]);
      }
      pl_rule_begin.push_back(static_cast<int>(key.size()));
      pl_begin.push_back(static_cast<int>(pl_parent.size()));
      if (o.lane_rules) {
        std::vector<int4> tile_units;
        const int tile_key_end = static_cast<int>(key.size());
        const int cap = o.adaptive_units
                            ? std::clamp((tile_key_end - tile_key_begin + 191) / 192, 4, kUnitRules)
                            : kUnitRules;
        for (int lo = tile_key_begin; lo < tile_key_end;) {
          const int parent = g.binary_parent[rules[lo - tile_key_begin]];
          int hi = lo;
          while (hi < tile_key_end && hi - lo < cap &&
                 g.binary_parent[rules[hi - tile_key_begin]] == parent)
            ++hi;
          tile_units.push_back({parent, lo, hi, 0});
          lo = hi;
        }
        std::stable_sort(tile_units.begin(), tile_units.end(),
                         [](const int4& x, const int4& y) { return x.z - x.y > y.z - y.y; });
        units.insert(units.end(), tile_units.begin(), tile_units.end());
        unit_begin.push_back(static_cast<int>(units.size()));
      }
      const int bc = quad ? (pinfo.y + 3) / 4 * 4 * s_c4 : pinfo.y * pinfo.w;
      for (size_t c = 0; c < limits.size(); ++c) {
        // The last class takes the rest (kQuadPad: 4 rows of a symbol over 256 substates).
        if (bc <= limits[c] || c + 1 == limits.size()) {
          classes_[c].pairs.push_back(pair_index);
          classes_[c].max_bc = std::max(classes_[c].max_bc, bc);
          break;
        }
      }
    }
  }
  for (SizeClass& c : classes_) {
    std::stable_sort(c.pairs.begin(), c.pairs.end(),
                     [&](int x, int y) { return tile_rules[x] > tile_rules[y]; });
    if (c.pairs.size() > 65535) {
      *error = "too many child pairs for one launch";
      return false;
    }
    if (!c.device_pairs.Upload(c.pairs)) return false;
  }
  if (o.lane_rules) {
    // Each rule's offset in sh_best (BestOffset<8, true>) and log-prob in one 8-byte load.
    std::vector<int2> packed(key.size());
    for (size_t r = 0; r < key.size(); ++r) {
      int bits;
      std::memcpy(&bits, &key_w[r], sizeof(bits));
      packed[r] = {key[r] * 8 + 4 * (key[r] >> 2), bits};
    }
    if (!lane_units_.Upload(units) || !lane_unit_begin_.Upload(unit_begin) ||
        !lane_rules_.Upload(packed))
      return false;
  }
  return pair_info_.Upload(info) && pair_symbols_.Upload(symbols) &&
         pair_pl_begin_.Upload(pl_begin) && pl_parent_.Upload(pl_parent) &&
         pl_rule_begin_.Upload(pl_rule_begin) && key_.Upload(key) && key_w_.Upload(key_w);
}

}  // namespace cky::cuda::viterbi
