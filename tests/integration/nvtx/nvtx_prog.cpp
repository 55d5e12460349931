// nvtx_prog.cpp: the same regions through the C++ face (scopes, the ai tree).
#include <dftrace/dftrace.hpp>

int main(int argc, char **argv) {
  dftrace_options_t o;
  dftrace_options_init(&o);
  o.enable = 1;
  if (argc > 1) o.output_file = argv[1];
  if (dftrace_init(&o) != DFTRACE_OK) return 1;
  for (int i = 0; i < 2; ++i) {
    dftrace::scope s(dftrace_node_find("compute.step"));
    {
      dftrace::scope f(dftrace_node_find("compute.forward"));
      dftrace_instant(dftrace_node_child(dftrace_category("app"), "marker"), nullptr, 0);
    }
    dftrace::scope b(dftrace_node_find("compute.backward"));
  }
  return dftrace_finalize() == DFTRACE_OK ? 0 : 1;
}
