// The boundary between code that may throw (the standard library, third-party parsers,
// allocation) and the Status world: an exception becomes a one-line Status instead of
// escaping a thread (std::terminate) or a command (an abort).
#ifndef TIERSCOPE_CORE_EXCEPTIONS_H_
#define TIERSCOPE_CORE_EXCEPTIONS_H_

#include <exception>
#include <new>
#include <string>

#include "tierscope/status.h"

namespace tierscope {

// The Status for the exception being handled (call inside a catch block): bad_alloc is
// ResourceExhausted, anything else Internal; `what` names the work that failed.
inline Status StatusFromCurrentException(const std::string& what) {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    return ResourceExhausted(what + ": out of memory (an allocation failed)");
  } catch (const std::exception& e) {
    return Internal(what + ": " + e.what());
  } catch (...) {
    return Internal(what + ": an unknown exception");
  }
}

// Runs `fn` (returning Status or StatusOr<T>) and returns its result, or the Status of
// the exception it threw.
template <typename Fn>
auto CatchAll(const std::string& what, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (...) {
    return StatusFromCurrentException(what);
  }
}

}  // namespace tierscope

#endif  // TIERSCOPE_CORE_EXCEPTIONS_H_
