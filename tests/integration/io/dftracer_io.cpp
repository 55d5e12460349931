// dftracer_io.cpp: a DFTracer-annotated C++ program (built on the drop-in header, unchanged)
// doing file I/O in the data directory it is given; DFTRACER_CPP_INIT binds I/O tracing to that
// directory, as DFTracer's FUNCTION mode does (test_io.py checks the events). Each call's result
// is checked: the application must see libc unchanged.
#include <dftracer/dftracer.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utime.h>

#include <cstdio>
#include <cstring>
#include <string>

#define CHECK(c)                                                            \
  do {                                                                      \
    if (!(c)) {                                                             \
      std::fprintf(stderr, "dftracer_io: %s failed at %d\n", #c, __LINE__); \
      return 1;                                                             \
    }                                                                       \
  } while (0)

static int write_greeting(const std::string &file) {
  DFTRACER_CPP_FUNCTION();
  FILE *f = std::fopen(file.c_str(), "w+");
  CHECK(f != nullptr);
  CHECK(std::fwrite("greetings", 9, 1, f) == 1);
  CHECK(std::fclose(f) == 0);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  const std::string dir = argv[1];
  DFTRACER_CPP_INIT(nullptr, dir.c_str(), nullptr);
  const std::string file = dir + "/notes.txt", alias = dir + "/alias.txt";
  if (write_greeting(file) != 0) return 1;
  {
    DFTRACER_CPP_REGION(NAMES);
    CHECK(link(file.c_str(), alias.c_str()) == 0);
    CHECK(unlink(alias.c_str()) == 0);
    CHECK(symlink(file.c_str(), alias.c_str()) == 0);
    CHECK(chmod(file.c_str(), 0640) == 0);
    struct utimbuf times = {1000000000, 1000000000};
    CHECK(utime(file.c_str(), &times) == 0);
  }
  // A directory descriptor and the calls relative to it.
  const int d = open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  CHECK(d >= 0);
  const int d2 = fcntl(d, F_DUPFD_CLOEXEC, 20);
  CHECK(d2 >= 20);
  CHECK(faccessat(d, "notes.txt", R_OK, 0) == 0);
  CHECK(linkat(d, "notes.txt", d, "second.txt", 0) == 0);
  CHECK(chdir(dir.c_str()) == 0);
  int fd = openat(d, "notes.txt", O_RDONLY);
  CHECK(fd >= 0);
  CHECK(close(fd) == 0);
  CHECK(close(d2) == 0);
  CHECK(close(d) == 0);
  // After chdir, a relative name is the data directory's file.
  fd = creat64("fresh.txt", 0644);
  CHECK(fd >= 0);
  CHECK(close(fd) == 0);
  fd = open("fresh.txt", O_RDWR);
  CHECK(fd >= 0);
  char c = 'x';
  CHECK(pwrite(fd, &c, 1, 3) == 1);
  CHECK(pwrite64(fd, &c, 1, 4) == 1);
  CHECK(lseek(fd, 1, SEEK_SET) == 1);
  CHECK(pread(fd, &c, 1, 3) == 1);
  CHECK(pread64(fd, &c, 1, 4) == 1);
  CHECK(fsync(fd) == 0);
  CHECK(fdatasync(fd) == 0);
  CHECK(ftruncate(fd, 0) == 0);
  CHECK(close(fd) == 0);
  CHECK(remove("fresh.txt") == 0);
  CHECK(remove("second.txt") == 0);
  CHECK(remove(alias.c_str()) == 0);
  DFTRACER_CPP_FINI();
  std::printf("dftracer_io: ok\n");
  return 0;
}
