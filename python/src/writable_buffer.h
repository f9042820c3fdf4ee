// File: python/src/writable_buffer.h
//
// A caller's writable, C-contiguous buffer (bytearray, memoryview, NumPy
// array, mmap): its memory, held through the buffer protocol so that
// reads land in it directly, without a copy.
#ifndef RANGEFS_PYTHON_SRC_WRITABLE_BUFFER_H_
#define RANGEFS_PYTHON_SRC_WRITABLE_BUFFER_H_

#include <pybind11/pybind11.h>

#include <string>

#include "absl/types/span.h"

namespace rangefs {
namespace python {

class WritableBuffer {
 public:
  // Raises TypeError (error_already_set) if `obj` is not writable or not
  // C-contiguous. GIL held.
  explicit WritableBuffer(pybind11::handle obj) {
    if (PyObject_GetBuffer(obj.ptr(), &view_,
                           PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) != 0) {
      // As io.FileIO.readinto: TypeError, saying what was wrong.
      pybind11::error_already_set why;
      throw pybind11::type_error(
          std::string("a writable, C-contiguous buffer is needed, not ") +
          Py_TYPE(obj.ptr())->tp_name + ": " + why.what());
    }
  }
  // GIL held.
  ~WritableBuffer() { PyBuffer_Release(&view_); }
  WritableBuffer(const WritableBuffer&) = delete;
  WritableBuffer& operator=(const WritableBuffer&) = delete;

  absl::Span<char> span() {
    return absl::MakeSpan(static_cast<char*>(view_.buf),
                          static_cast<size_t>(view_.len));
  }

 private:
  Py_buffer view_;
};

}  // namespace python
}  // namespace rangefs

#endif  // RANGEFS_PYTHON_SRC_WRITABLE_BUFFER_H_
