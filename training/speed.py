"""Options of the loop that trade nothing but time: ``torch.compile`` of the model, bf16 autocast on CUDA."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from .errors import UserError


def check_amp(amp: bool, device: torch.device) -> None:
    """bf16 autocast is offered on CUDA only (on the CPU it is slower, and the tests compare float32)."""
    if amp and device.type != "cuda":
        raise UserError(f"--amp (bf16 autocast) needs a CUDA device, not {device}; drop --amp on the CPU")


def compiled(module: nn.Module, enabled: bool) -> Callable[..., Any]:
    """``torch.compile(module)`` if ``enabled`` (the parameters stay the module's: checkpoints are unchanged)."""
    return torch.compile(module) if enabled else module


def autocast(amp: bool, device: torch.device) -> contextlib.AbstractContextManager[Any]:
    """bf16 autocast on CUDA when ``amp``, otherwise nothing."""
    return torch.autocast("cuda", dtype=torch.bfloat16) if amp and device.type == "cuda" else contextlib.nullcontext()
