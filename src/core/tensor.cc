// Tensor allocation and shape helpers.
#include "core/tensor.h"

namespace tierscope {

int64_t NumElements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string ShapeString(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

StatusOr<Tensor> Tensor::Empty(Allocator& alloc, DType dtype, Shape shape) {
  for (int64_t d : shape) {
    if (d < 0) return InvalidArgument("negative dimension in shape " + ShapeString(shape));
  }
  Tensor t;
  t.alloc_ = &alloc;
  t.dtype_ = dtype;
  t.bytes_ = static_cast<size_t>(NumElements(shape)) * DTypeSize(dtype);
  t.shape_ = std::move(shape);
  TS_ASSIGN_OR_RETURN(t.data_, alloc.Allocate(t.bytes_));
  return t;
}

Tensor& Tensor::operator=(Tensor&& other) noexcept {
  if (this != &other) {
    Release();
    alloc_ = other.alloc_;
    data_ = other.data_;
    bytes_ = other.bytes_;
    dtype_ = other.dtype_;
    shape_ = std::move(other.shape_);
    other.alloc_ = nullptr;
    other.data_ = nullptr;
    other.bytes_ = 0;
  }
  return *this;
}

void Tensor::Release() {
  if (alloc_ != nullptr && data_ != nullptr) alloc_->Deallocate(data_, bytes_);
  alloc_ = nullptr;
  data_ = nullptr;
  bytes_ = 0;
}

Status Tensor::Reshape(Shape shape) {
  if (NumElements(shape) != numel()) {
    return InvalidArgument("cannot reshape " + ShapeString(shape_) + " to " + ShapeString(shape));
  }
  shape_ = std::move(shape);
  return OkStatus();
}

}  // namespace tierscope
