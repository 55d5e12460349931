// temp_files.hpp: what the analysis unit tests share to lose a temporary file under the code
// that reads it back.
#pragma once

#include <dirent.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace dftrace::test {

// Cuts every temporary file of the analysis this process holds (unlinked, so reached through
// its descriptor) to nothing; how many it cut.
inline int cut_temporary_files() {
  int cut = 0;
  DIR *d = opendir("/proc/self/fd");
  if (!d) return 0;
  while (dirent *e = readdir(d)) {
    char link[4096];
    const std::string fd_path = std::string("/proc/self/fd/") + e->d_name;
    const ssize_t n = readlink(fd_path.c_str(), link, sizeof link - 1);
    if (n <= 0) continue;
    link[n] = 0;
    if (std::string(link).find("dftrace-analyze-") == std::string::npos) continue;
    if (ftruncate(atoi(e->d_name), 0) == 0) ++cut;
  }
  closedir(d);
  return cut;
}

}  // namespace dftrace::test
