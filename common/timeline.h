// Where a run's time goes: a process-wide record of named phases (`cky parse --timeline`).
//
// Off by default, and then a Scope costs one relaxed atomic load. When on, each Scope adds its
// wall time to its phase (calls, total seconds, first start and last end since Enable), from any
// thread; phases that overlap in time (a device batch and the next batch's reading) show it in
// their [first, last] intervals against their totals. Notes are free text kept by key (the CUDA
// backends put their device-side breakdown there). Report() prints both as a table.
#pragma once

#include <string>

namespace cky::timeline {

void Enable();
bool Enabled();

// Times the enclosing block as `phase` (a string literal or one that outlives the process).
class Scope {
 public:
  explicit Scope(const char* phase);
  ~Scope();
  // Records nothing for this scope (e.g. a wait that ended because the work is over).
  void Cancel() { begin_ = -1; }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  const char* phase_;
  double begin_ = -1;  // seconds since Enable; < 0 when off
};

// Sets the note `key` to `text` (replacing an earlier one).
void Note(const std::string& key, const std::string& text);

// One line per phase, in order of first start: calls, total seconds, [first start, last end];
// then the notes. Empty when off.
std::string Report();

}  // namespace cky::timeline
