// Status and StatusOr: the error type returned across every library boundary.
#ifndef TIERSCOPE_STATUS_H_
#define TIERSCOPE_STATUS_H_

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace tierscope {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,
  kNotFound,
  kOutOfRange,
  kDataLoss,        // a file is corrupt or truncated
  kUnimplemented,   // valid input that this build does not support
  kResourceExhausted,
  kFailedPrecondition,
  kDeadlineExceeded,  // a child process or a request ran past its time limit
  kInternal,
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message)
      : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "invalid argument: <message>", or "ok".
  std::string ToString() const;
  // Returns a copy whose message is "<prefix>: <message>".
  Status WithContext(const std::string& prefix) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status OkStatus() { return Status(); }
inline Status InvalidArgument(std::string m) {
  return Status(StatusCode::kInvalidArgument, std::move(m));
}
inline Status NotFound(std::string m) {
  return Status(StatusCode::kNotFound, std::move(m));
}
inline Status OutOfRange(std::string m) {
  return Status(StatusCode::kOutOfRange, std::move(m));
}
inline Status DataLoss(std::string m) {
  return Status(StatusCode::kDataLoss, std::move(m));
}
inline Status Unimplemented(std::string m) {
  return Status(StatusCode::kUnimplemented, std::move(m));
}
inline Status ResourceExhausted(std::string m) {
  return Status(StatusCode::kResourceExhausted, std::move(m));
}
inline Status FailedPrecondition(std::string m) {
  return Status(StatusCode::kFailedPrecondition, std::move(m));
}
inline Status DeadlineExceeded(std::string m) {
  return Status(StatusCode::kDeadlineExceeded, std::move(m));
}
inline Status Internal(std::string m) {
  return Status(StatusCode::kInternal, std::move(m));
}

// Holds either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(const Status& status) : data_(status) {  // NOLINT: implicit
    assert(!status.ok() && "StatusOr built from an OK status");
    if (status.ok()) data_ = Status(StatusCode::kInternal, "OK status in StatusOr");
  }
  StatusOr(T value) : data_(std::move(value)) {}  // NOLINT: implicit

  bool ok() const { return std::holds_alternative<T>(data_); }
  Status status() const { return ok() ? Status() : std::get<Status>(data_); }

  T& value() & { return std::get<T>(data_); }
  const T& value() const& { return std::get<T>(data_); }
  T&& value() && { return std::get<T>(std::move(data_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<Status, T> data_;
};

}  // namespace tierscope

#define TS_CONCAT_INNER_(a, b) a##b
#define TS_CONCAT_(a, b) TS_CONCAT_INNER_(a, b)

// Returns from the enclosing function when `expr` yields a non-OK Status.
#define TS_RETURN_IF_ERROR(expr)                     \
  do {                                               \
    ::tierscope::Status ts_status_ = (expr);         \
    if (!ts_status_.ok()) return ts_status_;         \
  } while (0)

// `TS_ASSIGN_OR_RETURN(auto x, MakeX());`
#define TS_ASSIGN_OR_RETURN(lhs, expr) \
  TS_ASSIGN_OR_RETURN_IMPL_(TS_CONCAT_(ts_statusor_, __LINE__), lhs, expr)
#define TS_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()

#endif  // TIERSCOPE_STATUS_H_
