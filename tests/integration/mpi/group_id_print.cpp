// group_id_print.cpp: prints the comm_group id libdftrace_mpi gives each list of world ranks
// read from stdin (one list a line, ranks in the communicator's order, blank-separated), for
// test_comm_group_id.py to compare with the torch side's.
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "plugins/mpi/group_id.hpp"

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::vector<int> ranks;
    for (int r; in >> r;) ranks.push_back(r);
    std::cout << dftrace::mpi::ranks_id(ranks.data(), ranks.size()) << '\n';
  }
  return 0;
}
