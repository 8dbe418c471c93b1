"""Cached constant tensors (transform matrices, weights) that ``torch.compile`` can still trace."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec

import torch
from torch import Tensor

P = ParamSpec("P")


def constant(build: Callable[P, Tensor]) -> Callable[P, Tensor]:
    """Cache a builder of constant tensors; under ``torch.compile`` trace the builder itself.

    Dynamo ignores ``lru_cache`` wrappers (with a warning); tracing the cheap
    builder instead keeps ``fullgraph=True`` working and lets the compiler fold it.
    """
    cached: Callable[..., Tensor] = functools.lru_cache(maxsize=256)(build)

    @functools.wraps(build)
    def get(*args: P.args, **kwargs: P.kwargs) -> Tensor:
        if torch.compiler.is_compiling():
            return build(*args, **kwargs)
        return cached(*args, **kwargs)

    return get
