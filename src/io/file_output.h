// A file being written: buffered appends to "PATH.part", renamed to PATH by commit(); if
// the writer is destroyed without commit() (an error midway), the partial file is removed.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace sd {

class FileOutput {
  public:
    explicit FileOutput(const std::string& path);
    ~FileOutput();
    FileOutput(const FileOutput&) = delete;
    FileOutput& operator=(const FileOutput&) = delete;

    void write(const void* data, size_t bytes);
    void write_zeros(size_t bytes);
    template <class T>
    void write_value(T v) {
        write(&v, sizeof(T));
    }
    uint64_t position() const { return position_; }
    void commit();

  private:
    std::string path_, part_path_;
    std::FILE* file_ = nullptr;
    uint64_t position_ = 0;
};

}  // namespace sd
