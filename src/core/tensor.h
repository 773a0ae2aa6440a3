// Tensor: a dense, row-major array in a backend's memory. Owns its buffer through the
// Allocator that made it, so live and peak bytes are accounted for every allocation.
#ifndef TIERSCOPE_CORE_TENSOR_H_
#define TIERSCOPE_CORE_TENSOR_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tierscope/dtype.h"
#include "tierscope/status.h"

namespace tierscope {

using Shape = std::vector<int64_t>;

int64_t NumElements(const Shape& shape);
std::string ShapeString(const Shape& shape);

struct MemoryStats {
  int64_t live_bytes = 0;
  int64_t peak_bytes = 0;
  int64_t allocations = 0;  // calls to Allocate since creation
  int64_t frees = 0;
};

// Device memory with accounting. Implemented by every Backend.
class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual StatusOr<void*> Allocate(size_t bytes) = 0;
  virtual void Deallocate(void* ptr, size_t bytes) = 0;
  virtual MemoryStats memory_stats() const = 0;
  // Sets the peak to the current live bytes (torch.cuda.reset_peak_memory_stats).
  virtual void ResetPeakMemory() = 0;
};

class Tensor {
 public:
  Tensor() = default;
  // Allocates an uninitialised tensor.
  static StatusOr<Tensor> Empty(Allocator& alloc, DType dtype, Shape shape);
  ~Tensor() { Release(); }
  Tensor(Tensor&& other) noexcept { *this = std::move(other); }
  Tensor& operator=(Tensor&& other) noexcept;
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;

  bool defined() const { return alloc_ != nullptr; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t dim(int i) const { return shape_[i < 0 ? shape_.size() + i : i]; }
  int64_t numel() const { return NumElements(shape_); }
  size_t bytes() const { return bytes_; }
  void* data() { return data_; }
  const void* data() const { return data_; }
  template <typename T> T* data_as() { return static_cast<T*>(data_); }
  template <typename T> const T* data_as() const { return static_cast<const T*>(data_); }

  // Reinterprets the same memory with another shape of equal element count.
  Status Reshape(Shape shape);

 private:
  void Release();

  Allocator* alloc_ = nullptr;
  void* data_ = nullptr;
  size_t bytes_ = 0;
  DType dtype_ = DType::kF32;
  Shape shape_;
};

}  // namespace tierscope

#endif  // TIERSCOPE_CORE_TENSOR_H_
