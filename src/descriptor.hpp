// An open file descriptor, closed on the way out (the spec's reader and the safetensors reader
// open files with O_NONBLOCK, which streams cannot).
#pragma once

#include <unistd.h>

namespace nnmem {

struct Descriptor {
  explicit Descriptor(int f) : fd(f) {}
  ~Descriptor() {
    if (fd >= 0) ::close(fd);
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  const int fd;
};

}  // namespace nnmem
