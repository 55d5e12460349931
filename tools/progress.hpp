// progress.hpp: the progress bar the long commands draw on stderr.
#pragma once

#include <cstdint>

namespace dftrace::tools {

// A progress bar on stderr, shown only when stderr is a terminal and the run is long.
class progress {
 public:
  progress(const char *what, uint64_t total);
  ~progress();
  void add(uint64_t n);
  void done();

 private:
  void draw(bool final);
  const char *what_;
  uint64_t total_;
  uint64_t seen_ = 0;
  bool enabled_;
  bool shown_ = false;
  double start_;
  double last_ = 0;
  double delay_ = 0.5;
};

double now_seconds();

}  // namespace dftrace::tools
