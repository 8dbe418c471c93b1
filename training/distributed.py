"""Data-parallel training under ``torchrun`` (the nanoGPT convention): plain DDP, ``RANK``/``WORLD_SIZE``.

``torchrun --standalone --nproc_per_node=N -m examples.poisson ...`` starts ``N`` processes; each
calls :func:`setup`, which joins the process group (NCCL on CUDA, gloo on the CPU) and, on CUDA, picks
the device ``LOCAL_RANK``. Every rank draws the same global batch from the same seeded sampler and
trains on its slice of it; DDP averages the gradients, so ``N`` processes with ``B / N`` examples each
take exactly the steps one process takes with ``B``. Rank 0 alone writes checkpoints, reports and
progress. A checkpoint holds the global state, so a run resumes with any number of processes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch import Tensor

from .errors import UserError


@dataclass(frozen=True)
class Ranks:
    """This process's place: ``rank`` of ``world`` processes (``world == 1``: not distributed)."""

    rank: int = 0
    world: int = 1
    local: int = 0

    @property
    def main(self) -> bool:
        """Whether this process writes checkpoints, reports and progress."""
        return self.rank == 0

    def shard(self, batch: Tensor) -> Tensor:
        """This rank's slice of a global batch (its leading axis divides evenly: checked by :func:`check_batch`)."""
        return batch if self.world == 1 else batch.chunk(self.world)[self.rank]

    def all_mean(self, x: Tensor) -> Tensor:
        """The mean of ``x`` over the processes (``x`` itself when not distributed)."""
        if self.world == 1:
            return x
        y = x.detach().clone()
        dist.all_reduce(y)
        return y / self.world

    def barrier(self) -> None:
        """Wait until every process gets here (so that none leaves the group while another still works)."""
        if self.world > 1:
            dist.barrier()

    def any(self, flag: bool, device: torch.device) -> bool:
        """Whether ``flag`` is set on any process (so that every rank stops at the same step)."""
        if self.world == 1:
            return flag
        t = torch.tensor([float(flag)], device=device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return bool(t.item())


#: one process: not distributed
SINGLE = Ranks()


def setup(device: torch.device) -> tuple[Ranks, torch.device]:
    """Join the process group if ``torchrun`` started this process; returns the ranks and the device to use."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world == 1:
        return SINGLE, device
    rank, local = int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", "0"))
    if device.type == "cuda":
        if local >= torch.cuda.device_count():  # torchrun started more processes here than there are GPUs
            raise UserError(
                f"--device {device}: process {local} of this node has no GPU of its own "
                f"({torch.cuda.device_count()} CUDA device(s)); start at most that many processes per node "
                "(--nproc_per_node) or use --device cpu"
            )
        device = torch.device("cuda", local)
        torch.cuda.set_device(device)
    if not dist.is_initialized():
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return Ranks(rank, world, local), device


def check_batch(batch: int, ranks: Ranks) -> None:
    """A global batch must split evenly over the processes."""
    if batch % ranks.world:
        raise UserError(
            f"config field batch={batch}: must be divisible by the {ranks.world} processes torchrun started"
        )


def teardown() -> bool:
    """Leave the process group; whether this process had joined one (a rank of ``torchrun``).

    The process should then end without the interpreter's teardown (:func:`training.cli.run_cli` does). Once DDP
    has wrapped a model, torch (2.13) keeps references to the group that outlive the wrapper, so leaving it does not
    stop gloo's worker threads. A thread still freeing the tensors of a finished collective when the interpreter
    finalises cannot take the GIL, and the process aborts (``terminate called without an active exception``, exit
    -6, after every file was written): in 7 of 182 two-process runs at a load of 4.
    """
    if not dist.is_initialized():
        return False
    dist.destroy_process_group()
    return True


def device_of(name: str, what: str = "--device") -> torch.device:
    """``--device`` (or another ``what``), checked: it must parse and exist on this machine (a :class:`UserError`)."""
    try:
        device = torch.device(name)
    except (RuntimeError, TypeError, ValueError):
        raise UserError(f"{what} {name!r}: not a device; use cpu, cuda or cuda:N") from None
    if device.type not in ("cpu", "cuda"):
        raise UserError(f"{what} {name}: only cpu and cuda are supported")
    if device.type == "cuda" and not torch.cuda.is_available():
        raise UserError(f"{what} {name}: no CUDA device on this machine; use cpu")
    if device.type == "cuda" and device.index is not None and device.index >= torch.cuda.device_count():
        raise UserError(f"{what} {name}: this machine has {torch.cuda.device_count()} CUDA device(s)")
    return device
