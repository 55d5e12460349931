// held_fds_test.cpp: descriptors held for a run (base/held_fds.hpp): held high, given up for
// good at the program's EMFILE, a holder's generation never touching its successor's, and the
// word libdftrace_io reads (held count, momentary stretches open and ended).
#include "base/held_fds.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

using namespace dftrace::detail;

namespace {

int a_descriptor() { return ::open("/dev/null", O_RDONLY | O_CLOEXEC); }

bool is_open(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

unsigned word() { return static_cast<unsigned>(g_held_fds.load()); }

}  // namespace

TEST(HeldFds, HeldHighGivenUpForGoodAndGenerationsApart) {
  static held_fd *h = new held_fd();  // (never destroyed, as the runtime's)
  const unsigned before = word() & k_held_mask;
  const int fd = a_descriptor();
  ASSERT_GE(fd, 0);
  const uint64_t gen = h->hold(fd);
  ASSERT_NE(gen, 0u);
  const int high = h->peek();
  ASSERT_GE(high, 0);
  struct rlimit rl;
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &rl), 0);
  if (rl.rlim_cur > static_cast<rlim_t>(k_high_fd_floor)) {
    EXPECT_GE(high, k_high_fd_floor);
  }
  EXPECT_FALSE(is_open(fd));  // moved: the low number is the program's again
  EXPECT_EQ(word() & k_held_mask, before + 1);
  int used = -1;
  EXPECT_TRUE(h->use(gen, [&](int d) { used = d; }));
  EXPECT_EQ(used, high);

  give_up_held_fds();  // the program met EMFILE
  EXPECT_TRUE(h->given_up());
  EXPECT_FALSE(is_open(high));
  EXPECT_FALSE(h->use(gen, [](int) {}));
  EXPECT_EQ(h->peek(), -1);
  EXPECT_EQ(word() & k_held_mask, before);

  // A later holder (a listener after init again): the old generation neither uses nor closes it.
  const uint64_t next = h->hold(a_descriptor());
  ASSERT_GT(next, gen);
  const int now = h->peek();
  h->close(gen);
  EXPECT_TRUE(is_open(now));
  EXPECT_FALSE(h->use(gen, [](int) {}));
  h->close(next);
  EXPECT_FALSE(is_open(now));
  EXPECT_EQ(word() & k_held_mask, before);
}

TEST(HeldFds, MomentaryStretchesAreCountedAndTheirEndsSeen) {
  const unsigned w0 = word();
  {
    const momentary_fds m;
    EXPECT_EQ((word() & k_momentary_mask) / k_momentary_one,
              ((w0 & k_momentary_mask) / k_momentary_one) + 1);
  }
  const unsigned w1 = word();
  EXPECT_EQ(w1 & k_momentary_mask, w0 & k_momentary_mask);
  EXPECT_NE(w1 >> 16, w0 >> 16);  // one ended: a call spanning it tells
}
