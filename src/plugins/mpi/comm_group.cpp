// comm_group.cpp: the `comm_group` id of a communicator (comm_group.hpp): its members in
// MPI_COMM_WORLD ranks, cached in an attribute; a duplicate's id is its parent's and a count.
#include "comm_group.hpp"

#include <atomic>
#include <cstdint>
#include <new>
#include <string>
#include <vector>

namespace dftrace::mpi {

namespace {

// What the attribute holds: the id ("" when the communicator has none) and how many
// duplicates were made of the communicator so far (every member dups it in the same order:
// MPI_Comm_dup is collective, so the count agrees across them).
struct comm_id {
  std::string text;
  int dups = 0;
};

std::atomic<int> g_keyval{MPI_KEYVAL_INVALID};

// Each thread's last communicator and its id, so that calls on one communicator in a row skip
// even MPI_Comm_get_attr (OpenMPI's takes a lock and a hash look-up). A freed communicator's
// handle can be reused by a new one: every free of a communicator that has an id counts in
// g_frees, and a count other than the entry's makes it stale. (Freeing a communicator while
// another thread calls a collective on it is erroneous MPI, so no entry is used across its free.)
std::atomic<uint64_t> g_frees{0};
struct last_comm {
  MPI_Comm comm;
  uint64_t frees;
  const char *id;
};
thread_local last_comm t_last
    __attribute__((tls_model("initial-exec"))) = {MPI_COMM_NULL, 0, nullptr};

// MPI_Comm_dup (and _idup, _dup_with_info) copies the attribute: the duplicate is a different
// communicator of the same members, so its id is the parent's with "+k" for the k-th duplicate
// (calls on the two never match each other). Never lets an exception reach MPI.
int copy_id(MPI_Comm, int, void *, void *in, void *out, int *flag) {
  *flag = 0;
  auto *parent = static_cast<comm_id *>(in);
  try {
    auto *child = new comm_id;
    ++parent->dups;
    if (!parent->text.empty())
      child->text = short_id(parent->text + "+" + std::to_string(parent->dups));
    *static_cast<void **>(out) = child;
    *flag = 1;
  } catch (...) {  // no memory: the duplicate gets its own id on first use instead
  }
  return MPI_SUCCESS;
}

int delete_id(MPI_Comm, int, void *value, void *) {
  g_frees.fetch_add(1, std::memory_order_release);
  delete static_cast<comm_id *>(value);
  return MPI_SUCCESS;
}

// The id of a communicator that has none cached: its members' world ranks, or "" (none) for an
// intercommunicator or a member outside MPI_COMM_WORLD.
std::string members_id(MPI_Comm c) {
  int inter = 0;
  if (PMPI_Comm_test_inter(c, &inter) != MPI_SUCCESS || inter) return {};
  MPI_Group group = MPI_GROUP_NULL, world = MPI_GROUP_NULL;
  int n = 0;
  std::string id;
  if (PMPI_Comm_group(c, &group) == MPI_SUCCESS &&
      PMPI_Comm_group(MPI_COMM_WORLD, &world) == MPI_SUCCESS &&
      PMPI_Group_size(group, &n) == MPI_SUCCESS && n > 0) {
    std::vector<int> local(static_cast<size_t>(n)), global(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) local[i] = i;
    bool all_in_world =
        PMPI_Group_translate_ranks(group, n, local.data(), world, global.data()) == MPI_SUCCESS;
    for (int r : global) all_in_world = all_in_world && r != MPI_UNDEFINED;
    if (all_in_world) id = ranks_id(global.data(), global.size());
  }
  if (group != MPI_GROUP_NULL) PMPI_Group_free(&group);
  if (world != MPI_GROUP_NULL) PMPI_Group_free(&world);
  return id;
}

}  // namespace

void comm_group_setup() {
  if (g_keyval.load(std::memory_order_relaxed) != MPI_KEYVAL_INVALID) return;
  int kv = MPI_KEYVAL_INVALID;
  if (PMPI_Comm_create_keyval(copy_id, delete_id, &kv, nullptr) == MPI_SUCCESS)
    g_keyval.store(kv, std::memory_order_relaxed);
}

namespace {

// The id cached on `c` (made and attached on its first use), or null.
const char *looked_up(MPI_Comm c) {
  const int kv = g_keyval.load(std::memory_order_relaxed);
  if (kv == MPI_KEYVAL_INVALID || c == MPI_COMM_NULL) return nullptr;
  void *value = nullptr;
  int flag = 0;
  if (PMPI_Comm_get_attr(c, kv, &value, &flag) != MPI_SUCCESS) return nullptr;
  comm_id *id = static_cast<comm_id *>(value);
  if (!flag) {  // first use of this communicator
    try {
      id = new comm_id{members_id(c), 0};
    } catch (...) {
      return nullptr;
    }
    if (PMPI_Comm_set_attr(c, kv, id) != MPI_SUCCESS) {
      delete id;
      return nullptr;
    }
  }
  return id->text.empty() ? nullptr : id->text.c_str();
}

}  // namespace

const char *comm_group_of(MPI_Comm c) {
  const uint64_t frees = g_frees.load(std::memory_order_acquire);
  if (c == t_last.comm && frees == t_last.frees && c != MPI_COMM_NULL) return t_last.id;
  const char *id = looked_up(c);
  if (id) t_last = {c, frees, id};  // (an id only: its communicator's free is then counted)
  return id;
}

}  // namespace dftrace::mpi
