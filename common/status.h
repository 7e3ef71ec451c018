// Error values returned by library code. Only apps/ prints errors and chooses exit codes.
//
//   StatusOr<Grammar> g = LoadGrammar(prefix);
//   if (!g.ok()) return g.status();      // message names the file and line
//   Use(*g);
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace cky {

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  static Status Error(std::string message) { return Status(std::move(message)); }

  bool ok() const { return !message_.has_value(); }
  // The message of a failed status; empty for OK.
  const std::string& message() const {
    static const std::string kEmpty;
    return message_ ? *message_ : kEmpty;
  }

 private:
  explicit Status(std::string message) : message_(std::move(message)) {}
  std::optional<std::string> message_;
};

// Either a value or a failed Status.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT
    assert(!status_.ok() && "StatusOr needs a value or an error");
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

// "file:line: message", the form every parser error takes.
inline Status LineError(const std::string& file, long line, const std::string& message) {
  return Status::Error(file + ":" + std::to_string(line) + ": " + message);
}

}  // namespace cky

#define CKY_RETURN_IF_ERROR(expr)              \
  do {                                         \
    ::cky::Status cky_status_ = (expr);        \
    if (!cky_status_.ok()) return cky_status_; \
  } while (0)
