// File: file_info.h
//
// What a listing or a Stat says about one file (client.h, dataset.h).
#ifndef RANGEFS_CLIENT_LIB_FILE_INFO_H_
#define RANGEFS_CLIENT_LIB_FILE_INFO_H_

#include <cstdint>
#include <string>

namespace rangefs {

struct FileInfo {
  std::string path;
  uint64_t size = 0;
  uint64_t file_id = 0;
  uint64_t generation = 0;
  // The generation these bytes were written at: only a create or an
  // overwrite changes it (namespace/content_id.h).
  uint64_t content_generation = 0;
  bool ready = false;  // state READY (IMPORTING files cannot be opened)
  int64_t mod_revision = 0;
  // Non-empty: the file's etcd record is invalid (why, naming the key); the
  // other fields but path are unset and OpenFile/Stat fail with DATA_LOSS.
  std::string invalid;
};

}  // namespace rangefs

#endif  // RANGEFS_CLIENT_LIB_FILE_INFO_H_
