// progress.cpp: the progress bar on stderr.
#include "progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace dftrace::tools {

double now_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

progress::progress(const char *what, uint64_t total)
    : what_(what), total_(total), enabled_(isatty(2) && total > 0), start_(now_seconds()) {
  if (std::getenv("DFTRACE_NO_PROGRESS")) enabled_ = false;
  // Runs shorter than this get no bar (tests set 0 to see it on small inputs).
  if (const char *d = std::getenv("DFTRACE_PROGRESS_DELAY")) delay_ = std::atof(d);
}

progress::~progress() { done(); }

void progress::add(uint64_t n) {
  seen_ += n;
  if (!enabled_) return;
  const double t = now_seconds();
  // Only runs longer than half a second get a bar, redrawn ten times a second.
  if (t - start_ < delay_ || t - last_ < 0.1) return;
  last_ = t;
  draw(false);
}

void progress::done() {
  if (!enabled_ || !shown_) return;
  draw(true);
  shown_ = false;
  enabled_ = false;
}

void progress::draw(bool final) {
  shown_ = true;
  const double frac = total_ ? std::min(1.0, static_cast<double>(seen_) / total_) : 1.0;
  const int width = 30;
  const int fill = static_cast<int>(frac * width);
  char bar[width + 1];
  for (int i = 0; i < width; ++i) bar[i] = i < fill ? '#' : '.';
  bar[width] = 0;
  const double el = now_seconds() - start_;
  const double mbs = el > 0 ? seen_ / el / 1e6 : 0;
  fprintf(stderr, "\r%s [%s] %3.0f%% %.0f MB in, %.0f MB/s%s", what_, bar, frac * 100, seen_ / 1e6,
          mbs, final ? "\n" : "");
  fflush(stderr);
}

}  // namespace dftrace::tools
