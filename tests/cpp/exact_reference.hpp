// References the exact-sum tests compare the fast paths against.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "scatterkit/scatterkit.hpp"

namespace sktest {

// exact_state_fold term by term: every term added to its element's state, one by one.
template <class T>
void fold_term_by_term(std::vector<uint64_t>& states, const std::vector<int64_t>& flat,
                       const std::vector<T>& upd) {
  namespace sd = scatterkit::detail;
  using L = scatterkit::ExactLayout<T>;
  for (size_t p = 0; p < flat.size(); ++p) {
    uint64_t* s = &states[size_t(flat[p] * L::kWords)];
    sd::add_value<T>(s, sd::exact_double(upd[p]));
    ++s[L::kCount];
  }
}

}  // namespace sktest
