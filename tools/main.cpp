// main.cpp: the dftrace command: finds the subcommand in the table (commands.cpp), parses its
// options by it and runs it.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "commands.hpp"

namespace {

int run_command(int argc, char **argv) {
  using namespace dftrace::tools;
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") ||
      !std::strcmp(argv[1], "help")) {
    fputs(overview().c_str(), argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const command_spec *c = find_command(argv[1]);
  if (!c) {
    error_line(std::string("unknown command '") + argv[1] + "' (see dftrace --help)");
    return 2;
  }
  if (c->exec) return c->exec(argc, argv);
  args_t a;
  switch (parse_args(*c, argc, argv, 2, &a)) {
    case parse_result::help: fputs(command_help(*c).c_str(), stdout); return 0;
    case parse_result::error: return 2;
    case parse_result::ok: break;
  }
  return c->run(a);
}

}  // namespace

// An exception no command handles (no memory, a thread the system refuses) is one line and exit
// status 1, never std::terminate (the stack is unwound: output streams stop their threads).
int main(int argc, char **argv) {
  try {
    return run_command(argc, argv);
  } catch (const std::exception &e) {
    dftrace::tools::error_line(e.what());
    return 1;
  }
}
