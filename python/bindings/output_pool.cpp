// Recycled memory for large outputs.
//
// A fresh output of tens of megabytes comes from mmap, and the kernel zeroes
// every page on first touch: for a 50 MB output that costs as much as the op
// itself (W2 at 1 thread: 7.6 ms with a fresh array, 3.6 ms into a reused
// one). ONNX Runtime's arena and OpenVINO's output buffers avoid it the same
// way. A result's memory returns here when NumPy frees the array, and the
// next output of the same size class takes it, already mapped.
//
// Every call runs with the GIL held (array allocation and deallocation), so
// the pool needs no lock of its own, and a fork (which Python performs holding
// the GIL) never copies it mid-update.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <memory>
#include <vector>

#include "arrays.hpp"
#include "scatterkit/scratch.hpp"

namespace scatterkit::bindings {
namespace {

// Size classes are whole transparent huge pages, and blocks are aligned to one
// (scratch.hpp), so the kernel can back them with huge pages as NumPy's own
// large arrays are.
struct Block {
  void* ptr;
  size_t capacity;
};

class OutputPool {
 public:
  Block acquire(size_t bytes) {
    const size_t capacity = detail::huge_page_capacity(bytes);
    for (auto it = free_.rbegin(); it != free_.rend(); ++it) {  // most recently freed first
      if (it->capacity != capacity) continue;
      const Block b = *it;
      free_.erase(std::next(it).base());
      cached_ -= capacity;
      ++hits_;
      return b;
    }
    ++misses_;
    return Block{detail::map_huge_page_block(capacity), capacity};
  }

  void release(const Block& b) {
    if (b.capacity > limit_) {
      std::free(b.ptr);
      return;
    }
    free_.push_back(b);
    cached_ += b.capacity;
    trim();
  }

  void set_limit(size_t limit) {
    limit_ = limit;
    trim();
  }

  py::dict info() const {
    py::dict d;
    d["limit"] = limit_;
    d["cached_bytes"] = cached_;
    d["cached_blocks"] = free_.size();
    d["hits"] = hits_;
    d["misses"] = misses_;
    return d;
  }

 private:
  void trim() {  // frees the least recently released blocks first
    while (cached_ > limit_) {
      std::free(free_.front().ptr);
      cached_ -= free_.front().capacity;
      free_.pop_front();
    }
  }

  std::deque<Block> free_;
  size_t cached_ = 0;
  size_t limit_ = size_t(1) << 30;
  size_t hits_ = 0, misses_ = 0;
};

// Never destroyed: arrays still alive at interpreter exit release into it.
OutputPool& pool() {
  static OutputPool* p = new OutputPool();
  return *p;
}

py::array empty_output(const py::dtype& dtype, const std::vector<py::ssize_t>& shape) {
  // Recycled bytes are garbage: as PyObject pointers they would crash on first use.
  if (dtype.attr("hasobject").cast<bool>())
    throw TypeError("empty_output: dtype " + std::string(py::str(dtype)) + " holds Python objects");
  size_t bytes = size_t(dtype.itemsize());
  for (py::ssize_t n : shape) {
    if (n < 0) throw ValueError("empty_output: negative dimension");
    if (n != 0 && bytes > SIZE_MAX / size_t(n)) throw ValueError("empty_output: too large");
    bytes *= size_t(n);
  }
  if (bytes == 0) return py::array(dtype, shape);
  auto block = std::make_unique<Block>(pool().acquire(bytes));
  void* ptr = block->ptr;
  py::capsule owner(block.get(), [](void* p) {
    const std::unique_ptr<Block> b(static_cast<Block*>(p));
    pool().release(*b);
  });
  block.release();  // the capsule owns it now, whatever happens next
  return py::array(dtype, shape, ptr, owner);
}

}  // namespace

void bind_output_pool(py::module_& m) {
  m.def("empty_output", &empty_output, py::arg("dtype"), py::arg("shape"),
        "An uninitialised C-contiguous array whose memory is recycled when it is freed.");
  m.def(
      "set_output_cache",
      [](size_t limit) {
        pool().set_limit(limit);
        set_scratch_cache(std::min(limit, detail::kDefaultScratchCacheBytes));
      },
      py::arg("max_bytes"),
      "Most bytes of freed outputs kept for reuse, and of the kernels' scratch up to 256 MiB "
      "(0 frees them all and keeps none).");
  m.def(
      "output_cache_info",
      [] {
        py::dict d = pool().info();
        d["scratch_bytes"] = scratch_cache_bytes();
        return d;
      },
      "The output cache's limit, cached bytes and blocks, hits and misses; the scratch kept.");
}

}  // namespace scatterkit::bindings
