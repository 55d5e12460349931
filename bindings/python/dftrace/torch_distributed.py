"""dftrace.torch_distributed: the documented name of dftrace.torch.distributed (the same
module object, so its functions and state are one)."""
import sys

from .torch import distributed as _distributed

sys.modules[__name__] = _distributed
