// attach_channel.hpp: the private channel of `dftrace attach` (docs/attach.md), shared by the
// runtime (which waits for requests) and the tool (which makes them). One directory per user,
// made 0700 and checked (a directory, not a symbolic link, owned by this user, no access for
// others); in it, per process: PID.ready (the process waits for requests: its start time, to
// tell a reused pid, and its trace's directory), PID.req (a request, written under another
// name and renamed) and PID.ack (the answer).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace dftrace::detail {

// attach.dir, or /tmp/dftrace-attach-UID when empty.
std::string attach_dir_path(const std::string &configured);
// The directory as it must be (made 0700 when missing and `create`); false with why.
bool attach_dir_ready(const std::string &dir, bool create, std::string *why);

// What a request asks: a window of for_ns, or of `steps` dftrace_step calls (one of them).
struct attach_request {
  uint64_t for_ns = 0;
  uint64_t steps = 0;
  std::string level = "full";
};
constexpr size_t k_attach_request_max = 4096;  // a longer file is not a request
std::string attach_request_text(const attach_request &r);
// The request's text: "dftrace-attach 1", then one "key value" a line (for, steps, level).
bool parse_attach_request(std::string_view text, attach_request *r, std::string *why);

// dir as the PID.ready files name it: its real path, or when it does not exist (yet: a trace
// directory is made when the first window opens) the path made absolute.
std::string attach_absolute_dir(const std::string &dir);

// The process's start time (/proc/PID/stat, field 22), 0 when unknown.
uint64_t process_start_ticks(pid_t pid);
// A numeric field of /proc/PID/stat (1-based, as proc(5) counts; 4 is the parent), 0 when
// unknown.
uint64_t process_stat_field(pid_t pid, int field);

// The first bytes of a PID.page (runtime/schedule_share.hpp's schedule_page begins with them):
// its sequence, its magic, and the pid and start time of the process that made it.
struct channel_page_head {
  uint32_t seq;
  uint32_t magic;
  uint64_t owner_pid, owner_start;
};
constexpr uint32_t k_channel_page_magic = 0x64667370;  // "dfsp"

// Removes from the channel dir the files left by processes that are gone (killed by SIGKILL,
// or any end that ran no finalize): PID.page and PID.ready whose process is dead, or whose pid
// another process has now (the start time the file holds differs), and PID.req and PID.ack of
// a dead pid. A file is judged by what it holds, then taken out of its name and removed only
// when it is still the file judged (a process that made its own in between keeps it). Files
// that are not a process's (other names, temporary files) are left alone. The number removed.
size_t sweep_attach_channel(const std::string &dir);

// Reads a file of this user under dir, no symbolic link, at most max bytes: false with why.
bool read_private_file(const std::string &path, size_t max, std::string *text, std::string *why);
// Writes path through a temporary name beside it and a rename (0600); false on failure.
bool write_private_file(const std::string &path, std::string_view text);

}  // namespace dftrace::detail
