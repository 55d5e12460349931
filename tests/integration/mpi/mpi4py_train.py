"""mpi4py_train.py: a 2-rank Python training loop whose MPI calls libdftrace_mpi traces when
preloaded (mpi_test.py's "python" scenario recomputes the expected events)."""
import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
peer = 1 - rank

config = np.zeros(16, dtype=np.int32)  # 64 bytes from rank 0
if rank == 0:
    config[:] = 5
comm.Bcast(config, root=0)
steps = int(config[0])

weights = np.ones(1000, dtype=np.float64)
for step in range(steps):
    grad = weights * (rank + 1)
    total = np.empty_like(grad)
    comm.Allreduce(grad, total, op=MPI.SUM)  # 8000 bytes
    weights -= 0.001 * total
    # rank 0 sends 10 doubles, rank 1 sends 11: each side receives what the other sent
    out = np.full(10 + rank, float(step))
    inbox = np.empty(11 - rank)
    if rank == 0:
        comm.Send(out, dest=peer, tag=7)
        comm.Recv(inbox, source=peer, tag=7)
    else:
        comm.Recv(inbox, source=peer, tag=7)
        comm.Send(out, dest=peer, tag=7)
    assert inbox[0] == float(step)
comm.Barrier()
print("rank %d: weights[0] = %.4f" % (rank, weights[0]))
