#include "common/timeline.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <vector>

namespace cky::timeline {
namespace {

struct Phase {
  long calls = 0;
  double total = 0, first = 0, last = 0;
};

struct State {
  std::atomic<bool> on{false};
  std::chrono::steady_clock::time_point zero;
  std::mutex mutex;
  std::map<std::string, Phase> phases;
  std::map<std::string, std::string> notes;
};

State& Get() {
  static State state;
  return state;
}

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - Get().zero).count();
}

}  // namespace

void Enable() {
  State& s = Get();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.on.load()) return;
  s.zero = std::chrono::steady_clock::now();
  s.on.store(true);
}

bool Enabled() { return Get().on.load(std::memory_order_relaxed); }

Scope::Scope(const char* phase) : phase_(phase) {
  if (Enabled()) begin_ = Now();
}

Scope::~Scope() {
  if (begin_ < 0) return;
  const double end = Now();
  State& s = Get();
  std::lock_guard<std::mutex> lock(s.mutex);
  Phase& p = s.phases[phase_];
  if (p.calls == 0 || begin_ < p.first) p.first = begin_;
  p.last = std::max(p.last, end);
  p.total += end - begin_;
  ++p.calls;
}

void Note(const std::string& key, const std::string& text) {
  if (!Enabled()) return;
  State& s = Get();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.notes[key] = text;
}

std::string Report() {
  if (!Enabled()) return "";
  State& s = Get();
  const double now = Now();
  std::lock_guard<std::mutex> lock(s.mutex);
  std::vector<std::pair<std::string, Phase>> phases(s.phases.begin(), s.phases.end());
  std::stable_sort(phases.begin(), phases.end(),
                   [](const auto& a, const auto& b) { return a.second.first < b.second.first; });
  std::string out;
  char line[256];
  std::snprintf(line, sizeof(line), "timeline (seconds since start; %.3f s in all)\n", now);
  out += line;
  std::snprintf(line, sizeof(line), "  %-28s %7s %9s %9s %9s\n", "phase", "calls", "total", "first",
                "last");
  out += line;
  for (const auto& [name, p] : phases) {
    std::snprintf(line, sizeof(line), "  %-28s %7ld %9.3f %9.3f %9.3f\n", name.c_str(), p.calls,
                  p.total, p.first, p.last);
    out += line;
  }
  for (const auto& [key, text] : s.notes) out += "  " + key + ": " + text + "\n";
  return out;
}

}  // namespace cky::timeline
