"""mpi4py_late.py: ranks meet at MPI_Allreduce; the last rank sleeps before each one, so the
others wait for it (mpi_test.py's "late" scenario checks dftrace analyze's collectives)."""
import sys
import time

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
rounds, sleep_s = int(sys.argv[1]), float(sys.argv[2])

grad = np.ones(1000, dtype=np.float64) * (rank + 1)
total = np.empty_like(grad)
for _ in range(rounds):
    if rank == size - 1:
        time.sleep(sleep_s)
    comm.Allreduce(grad, total, op=MPI.SUM)
