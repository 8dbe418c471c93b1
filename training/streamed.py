"""Training on batches read from a file as the steps need them: :class:`Batches` and :class:`StreamTask`.

:class:`Batches` is this process's slice of each step's seeded global batch of an
:class:`~operators.streams.PairStream` (:class:`~operators.streams.GlobalBatches`), read ahead by a
:class:`~torch.utils.data.DataLoader`'s worker processes within a memory budget, pinned and copied to the device
without blocking on CUDA. Its state is the step it has reached and its seed: a checkpoint resumes it at that step,
under any number of processes (the global batch is a function of the seed and the step alone). An evaluation
pass split over the ranks is put together by :func:`gathered`.

:class:`StreamTask` is a :class:`~training.Task` for :func:`training.fit` over such batches: a model, its loss on a
batch, an optimiser and a schedule. Under ``torchrun`` the model runs inside DDP, which averages the gradients of
the ranks' slices: the steps of one process with the whole batch. With ``amp`` (CUDA only: :mod:`.speed`) the
model's forward pass runs under bf16 autocast and its output returns to the model's dtype, so the loss, its
reductions and the optimiser's update are computed in full precision.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from torch import Tensor, nn
from torch.nn.parallel import DistributedDataParallel

from operators.streams import GlobalBatches, PairStream, loader

from .checkpoint import StateError, check_like
from .distributed import SINGLE, Ranks, check_batch
from .loop import Optimised
from .speed import autocast, check_amp

#: a loss on a batch: the model's forward pass (through DDP under torchrun), the inputs and the outputs ``(b, *grid,
#: C)`` in the model's dtype on its device -> a scalar
Loss = Callable[[Callable[[Tensor], Tensor], Tensor, Tensor], Tensor]


class Batches:
    """This rank's slice of each step's global batch of ``size`` pairs of ``stream``, on ``device``.

    Args:
        stream: the training pairs.
        size: the global batch (divisible by the processes: :func:`~.distributed.check_batch`).
        seed: the order's seed.
        memory: bytes the batches in flight may take (:func:`~operators.streams.loader`).
        workers, prefetch: reading processes, and batches each reads ahead.
    """

    def __init__(
        self,
        stream: PairStream,
        size: int,
        seed: int,
        *,
        device: torch.device,
        memory: int,
        ranks: Ranks = SINGLE,
        workers: int = 2,
        prefetch: int = 2,
    ) -> None:
        check_batch(size, ranks)
        self.stream, self.size, self.seed, self.ranks, self.device = stream, size, seed, ranks, device
        self.memory, self.workers, self.prefetch = memory, workers, prefetch
        self.step = 0
        self._batches: Iterator[tuple[Tensor, Tensor]] | None = None

    def _start(self) -> Iterator[tuple[Tensor, Tensor]]:
        sampler = GlobalBatches(
            len(self.stream), self.size, self.seed, rank=self.ranks.rank, world=self.ranks.world, start=self.step
        )
        rows = self.size // self.ranks.world
        cuda = self.device.type == "cuda"
        batches = loader(
            self.stream,
            sampler,
            rows,
            memory=self.memory,
            workers=self.workers,
            prefetch=self.prefetch,
            pin_memory=cuda,
        )
        return iter(batches)

    def next(self) -> tuple[Tensor, Tensor]:
        """The next step's inputs and outputs ``(b, *grid, C)``, in the file's dtypes, on the device."""
        if self._batches is None:
            self._batches = self._start()
        x, y = next(self._batches)
        self.step += 1
        blocking = self.device.type != "cuda"  # from pinned memory, a copy to the GPU overlaps the step
        return x.to(self.device, non_blocking=not blocking), y.to(self.device, non_blocking=not blocking)

    def state_dict(self) -> dict[str, int]:
        """``{"seed", "size", "step"}``: where the batches resume."""
        return {"seed": self.seed, "size": self.size, "step": self.step}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume at ``state``'s step (the same seed and global batch, or a :class:`~.checkpoint.StateError`)."""
        check_like(self.state_dict(), state, "task.batches")
        if (state["seed"], state["size"]) != (self.seed, self.size):
            raise StateError(
                f"task.batches: drawn with seed {state['seed']} and batch {state['size']}, not {self.seed} and "
                f"{self.size}"
            )
        self.close()
        self.step = int(state["step"])

    def close(self) -> None:
        """Stop the reading processes (a later :meth:`next` starts them again)."""
        self._batches = None


def gathered(values: Tensor, positions: np.ndarray, n: int, ranks: Ranks = SINGLE) -> Tensor:
    """Every rank's ``values`` at their ``positions`` of ``n`` (each position evaluated by one rank:
    :class:`~operators.streams.Evaluation`), on every rank: ``(n,)`` float64 on the CPU."""
    out = torch.zeros(n, dtype=torch.float64)
    out[torch.from_numpy(positions)] = values.to("cpu", torch.float64)
    if ranks.world == 1:
        return out
    device = torch.device("cuda", ranks.local) if dist.get_backend() == "nccl" else torch.device("cpu")
    total = out.to(device)
    dist.all_reduce(total)  # the positions are disjoint: the sum places each value once
    return total.cpu()


class StreamTask(Optimised):
    """A training run over :class:`Batches`: ``loss`` of ``model`` on each batch, minimised by ``optimiser``
    along ``schedule`` (gradient norms clipped to ``clip``; ``0``: not clipped).

    ``evaluate`` gives the held-out metrics (none by default), ``watch`` why the model stopped depending on its input
    (a clause, or ``None``; asked at each evaluation as :class:`~.loop.Watched`'s :meth:`collapsed`; by default
    nothing is watched). The checkpointed state is
    :class:`~.loop.Optimised`'s and the batches' position; ``sampler`` (seeded by ``seed``) is for any other draw a
    step makes, the same on every rank (a symmetry applied to the batch, say).
    """

    def __init__(
        self,
        model: nn.Module,
        loss: Loss,
        batches: Batches,
        optimiser: torch.optim.Optimizer,
        schedule: torch.optim.lr_scheduler.LRScheduler,
        *,
        seed: int = 0,
        amp: bool = False,
        clip: float = 0.0,
        evaluate: Callable[[], dict[str, float]] | None = None,
        watch: Callable[[], str | None] | None = None,
    ) -> None:
        self.device = batches.device
        check_amp(amp, self.device)
        self.model, self.loss, self.batches = model, loss, batches
        self.optimiser, self.schedule, self.amp, self.clip = optimiser, schedule, amp, clip
        self.sampler = torch.Generator().manual_seed(seed)
        self.dtype = next(p.dtype for p in model.parameters() if p.is_floating_point())
        self.net: nn.Module = model if batches.ranks.world == 1 else DistributedDataParallel(model)
        self._evaluate, self._watch = evaluate, watch

    def forward(self, x: Tensor) -> Tensor:
        """The model on ``x`` (through DDP under torchrun); under ``amp``, in bf16 and returned in its dtype."""
        with autocast(self.amp, self.device):
            out: Tensor = self.net(x)
        return out.to(self.dtype)

    def train_step(self) -> Tensor:
        x, y = self.batches.next()
        loss = self.loss(self.forward, x.to(self.dtype), y.to(self.dtype))
        self.optimise(loss, clip=self.clip)
        return loss.detach()

    def evaluate(self) -> dict[str, float]:
        return self._evaluate() if self._evaluate is not None else {}

    def collapsed(self) -> str | None:
        """Why the model no longer depends on its input, or ``None`` (always, with nothing watched)."""
        return self._watch() if self._watch is not None else None

    def state_dict(self) -> dict[str, Any]:
        """:class:`~.loop.Optimised`'s state and the batches' position."""
        return {**super().state_dict(), "batches": self.batches.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` (a :class:`~.checkpoint.StateError` when a part does not fit)."""
        if "batches" not in state:
            raise StateError("task state has no 'batches' (the position of a streamed run's batches)")
        super().load_state_dict(state)
        self.batches.load_state_dict(state["batches"])

    def close(self) -> None:
        """Stop the batches' reading processes."""
        self.batches.close()
