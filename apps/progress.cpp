#include "apps/progress.h"

#include <unistd.h>

#include <cstdio>

namespace cky::apps {
namespace {

std::string WithCommas(int64_t value) {
  std::string digits = std::to_string(value);
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) digits.insert(i, ",");
  return digits;
}

std::string Duration(double seconds) {
  const int64_t total = static_cast<int64_t>(seconds + 0.5);
  char text[32];
  std::snprintf(text, sizeof text, "%lld:%02lld:%02lld", static_cast<long long>(total / 3600),
                static_cast<long long>(total / 60 % 60), static_cast<long long>(total % 60));
  return text;
}

}  // namespace

bool ShowProgress(bool force_on, bool force_off) {
  return !force_off && (force_on || isatty(STDERR_FILENO));
}

ProgressMeter::ProgressMeter(std::string what, int64_t input_size, bool enabled)
    : what_(std::move(what)),
      input_size_(input_size),
      enabled_(enabled),
      start_(std::chrono::steady_clock::now()) {
  if (enabled_) thread_ = std::thread([this] { Loop(); });
}

ProgressMeter::~ProgressMeter() {
  if (!enabled_) return;
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  thread_.join();
  Draw();
  std::fputc('\n', stderr);
}

void ProgressMeter::Update(int64_t done, int64_t bytes) {
  done_ = done;
  bytes_ = bytes;
}

std::string ProgressMeter::Describe(const std::string& what, int64_t done, int64_t bytes,
                                    int64_t input_size, double seconds) {
  char rate[64];
  std::snprintf(rate, sizeof rate, "%.1f", done / std::max(seconds, 1e-9));
  std::string line = WithCommas(done) + " " + what + ", " + rate + " " + what + "/s";
  if (input_size > 0) {
    const double fraction = std::min(1.0, static_cast<double>(bytes) / input_size);
    line += ", " + std::to_string(static_cast<int>(fraction * 100)) + "% of the input";
    if (fraction > 0 && fraction < 1) {
      line += ", " + Duration(seconds * (1 - fraction) / fraction) + " left";
    }
  }
  return line + ", " + Duration(seconds) + " elapsed";
}

void ProgressMeter::Draw() {
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  // \33[K clears what a longer previous line left on the terminal.
  std::fprintf(stderr, "\rcky: %s\33[K",
               Describe(what_, done_, bytes_, input_size_, seconds).c_str());
  std::fflush(stderr);
}

void ProgressMeter::Loop() {
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, std::chrono::milliseconds(500), [this] { return stop_; })) {
    Draw();
  }
}

}  // namespace cky::apps
