// File: python/src/handles.h
//
// What the Python objects hold. A File or Dataset must be destroyed before
// its Client (client.h, dataset.h): each FileHandle and DatasetHandle keeps
// its ClientHandle alive, so Python may drop the Client object first. All
// are thread-safe (the C++ Client, File and Dataset are), so any Python
// thread may call them with the GIL released.
#ifndef RANGEFS_PYTHON_SRC_HANDLES_H_
#define RANGEFS_PYTHON_SRC_HANDLES_H_

#include <pybind11/pybind11.h>

#include <memory>
#include <utility>

#include "client_lib/client.h"
#include "client_lib/dataset.h"
#include "client_lib/file.h"
#include "python/src/file_cache.h"

namespace rangefs {
namespace python {

struct ClientHandle {
  // The Client's teardown may wait (up to teardown_timeout) for its I/O
  // threads: other Python threads run meanwhile. Kept Files go first.
  ~ClientHandle() {
    if (PyGILState_Check()) {
      pybind11::gil_scoped_release release;
      files.Clear();
      client.reset();
    } else {
      files.Clear();
    }
  }
  std::unique_ptr<Client> client;
  FileCache files;  // read_ranges' open Files
};

struct FileHandle {
  FileHandle(std::shared_ptr<ClientHandle> o, std::unique_ptr<File> f)
      : owner(std::move(o)), file(std::move(f)) {}
  // Declared first: destroyed after `file`.
  std::shared_ptr<ClientHandle> owner;
  std::unique_ptr<File> file;
};

struct DatasetHandle {
  DatasetHandle(std::shared_ptr<ClientHandle> o, std::unique_ptr<Dataset> d)
      : owner(std::move(o)), dataset(std::move(d)) {}
  // Closing kept Files may wait for their reads: other threads run.
  ~DatasetHandle() {
    if (PyGILState_Check()) {
      pybind11::gil_scoped_release release;
      files.Clear();
    } else {
      files.Clear();
    }
  }
  // Declared first: destroyed last.
  std::shared_ptr<ClientHandle> owner;
  std::unique_ptr<Dataset> dataset;
  FileCache files;  // read_ranges' open Files (never replaced: pinned)
};

}  // namespace python
}  // namespace rangefs

#endif  // RANGEFS_PYTHON_SRC_HANDLES_H_
