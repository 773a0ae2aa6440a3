// How a family of CPU micro-kernels (FP32, INT8) is chosen: the variant the CPU runs best,
// unless an environment variable names another this CPU runs (or names none: a one-line
// error the family returns before any kernel runs), and a scoped override for the tests.
#ifndef TIERSCOPE_BACKEND_CPU_KERNEL_VARIANT_H_
#define TIERSCOPE_BACKEND_CPU_KERNEL_VARIANT_H_

#include <atomic>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace tierscope {

// The variant of `all` (each with a `const char* isa`, fastest first) whose isa is
// `preferred` (the first when none is), unless `env_var` names another of them. When it
// names none, the preferred one and `*env_error` saying so ("<env_var>=<value> names no
// <family> variant this CPU runs (it runs a, b)").
template <typename V>
V PickKernelVariant(const std::vector<V>& all, std::string_view preferred, const char* env_var,
                    const char* family, std::string* env_error) {
  V picked = all.front();
  for (const V& v : all) {
    if (preferred == v.isa) picked = v;
  }
  const char* env = std::getenv(env_var);
  if (env == nullptr || *env == '\0') return picked;
  std::string names;
  for (const V& v : all) {
    if (std::string_view(env) == v.isa) return v;
    names += (names.empty() ? "" : ", ") + std::string(v.isa);
  }
  *env_error = std::string(env_var) + "=" + env + " names no " + family + " variant this CPU runs (it runs " +
               names + ")";
  return picked;
}

// Puts `variant` in `slot` while in scope and restores what was there. Not for concurrent
// use.
template <typename K>
class ScopedKernelVariant {
 public:
  ScopedKernelVariant(std::atomic<const K*>& slot, const K& variant)
      : slot_(slot), variant_(variant), previous_(slot.exchange(&variant_, std::memory_order_acq_rel)) {}
  ~ScopedKernelVariant() { slot_.store(previous_, std::memory_order_release); }
  ScopedKernelVariant(const ScopedKernelVariant&) = delete;
  ScopedKernelVariant& operator=(const ScopedKernelVariant&) = delete;

 private:
  std::atomic<const K*>& slot_;
  K variant_;
  const K* previous_;
};

}  // namespace tierscope

#endif  // TIERSCOPE_BACKEND_CPU_KERNEL_VARIANT_H_
