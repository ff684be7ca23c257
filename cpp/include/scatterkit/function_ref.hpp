// FunctionRef: a non-owning reference to something callable, for the library's own
// drivers (parallel_for, for_each_line_block). A driver that takes its body as a template
// parameter is compiled again, with the body inlined, for every body: with hundreds of
// kernels that was most of the build. Through a FunctionRef the driver is compiled once and
// the body once; the one indirect call per chunk or block of work costs nothing measurable.
#pragma once

#include <memory>
#include <type_traits>
#include <utility>

namespace scatterkit {
namespace detail {

template <class Signature>
class FunctionRef;

template <class R, class... Args>
class FunctionRef<R(Args...)> {
 public:
  // The callable must outlive the FunctionRef: pass it straight to the function that
  // takes it (a temporary lambda lives until that call returns).
  template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, FunctionRef> &&
                                              std::is_invocable_r_v<R, F&, Args...>>>
  FunctionRef(F&& f) noexcept  // NOLINT(google-explicit-constructor): used like a lambda
      : object_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* object, Args... args) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(object))(std::forward<Args>(args)...);
        }) {}

  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  void* object_;
  R (*call_)(void*, Args...);
};

}  // namespace detail
}  // namespace scatterkit
