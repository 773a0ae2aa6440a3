// FunctionRef: a non-owning, allocation-free reference to a callable, for hot paths
// (kernel task bodies) where std::function's allocation and copy are unwanted.
#ifndef TIERSCOPE_CORE_FUNCTION_REF_H_
#define TIERSCOPE_CORE_FUNCTION_REF_H_

#include <type_traits>
#include <utility>

namespace tierscope {

template <typename Sig>
class FunctionRef;

template <typename R, typename... Args>
class FunctionRef<R(Args...)> {
 public:
  template <typename F,
            typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, FunctionRef>>>
  FunctionRef(F&& f)  // NOLINT: implicit, like absl::FunctionRef
      : obj_(const_cast<void*>(static_cast<const void*>(&f))),
        call_([](void* obj, Args... args) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(obj))(
              std::forward<Args>(args)...);
        }) {}

  R operator()(Args... args) const { return call_(obj_, std::forward<Args>(args)...); }

 private:
  void* obj_;
  R (*call_)(void*, Args...);
};

}  // namespace tierscope

#endif  // TIERSCOPE_CORE_FUNCTION_REF_H_
