"""Forward+backward time of a generic Transformer encoder over Vectors vs ``torch.nn.TransformerEncoder``.

Both models hold the same weights (the generic layers load PyTorch's
``state_dict``), run in train mode with dropout 0, batch_first, and are timed
interleaved in one process: each repetition times both, in alternating order,
and the medians are compared. The last line is the ratio generic / torch.

    python benchmarks/attention_vector.py            # batch 8, seq 256, d 256, 8 heads, dff 1024, 4 layers
    python benchmarks/attention_vector.py --quick    # small sizes, seconds
    python benchmarks/attention_vector.py --device cuda
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from applicative import Field
from instances import Vector
from models import EncoderLayer
from training.cli import Parser, run_cli, threads
from training.distributed import device_of


@dataclass(frozen=True)
class Config:
    batch: int = 8
    seq: int = 256
    model: int = 256
    heads: int = 8
    hidden: int = 1024
    layers: int = 4
    reps: int = 10
    warmup: int = 2


QUICK = Config(batch=2, seq=32, model=32, heads=4, hidden=64, layers=2, reps=5, warmup=1)


class GenericEncoder(nn.Module):
    """A stack of generic :class:`models.EncoderLayer` with the submodule names of ``nn.TransformerEncoder``."""

    def __init__(self, cfg: Config, norm_first: bool, device: torch.device) -> None:
        super().__init__()
        self.seq, self.model = Vector(cfg.seq), Vector(cfg.model)
        self.layers = nn.ModuleList(
            EncoderLayer(self.model, Vector(cfg.hidden), cfg.heads, norm_first=norm_first, device=device)
            for _ in range(cfg.layers)
        )

    def forward(self, x: Tensor) -> Tensor:
        h = Field(x, (self.seq, self.model))
        for layer in self.layers:
            h = layer(h)
        return h.tensor


def build(cfg: Config, norm_first: bool, device: torch.device) -> tuple[nn.Module, nn.Module]:
    layer = nn.TransformerEncoderLayer(
        cfg.model, cfg.heads, cfg.hidden, dropout=0.0, batch_first=True, norm_first=norm_first, device=device
    )
    ref = nn.TransformerEncoder(layer, cfg.layers, enable_nested_tensor=False)
    gen = GenericEncoder(cfg, norm_first, device)
    gen.load_state_dict(ref.state_dict())
    return ref.train(), gen.train()


def step(model: nn.Module, x: Tensor, cot: Tensor) -> Callable[[], None]:
    def run() -> None:
        model.zero_grad(set_to_none=True)
        (model(x) * cot).sum().backward()

    return run


def timed(run: Callable[[], None], device: torch.device) -> float:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    t0 = time.perf_counter()
    run()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter() - t0


def main() -> None:
    p = Parser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="small sizes (seconds)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--reps", type=int, default=None)
    p.add_argument("--threads", type=threads, default=None, help="torch CPU threads (default: torch's)")
    p.add_argument("--norm-first", action="store_true", help="pre-norm layers (default post-norm, torch's default)")
    args = p.parse_args()
    cfg = QUICK if args.quick else Config()
    if args.reps is not None:
        cfg = Config(**{**cfg.__dict__, "reps": args.reps})
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    device = device_of(args.device)
    torch.manual_seed(0)

    ref, gen = build(cfg, args.norm_first, device)
    x = torch.randn(cfg.batch, cfg.seq, cfg.model, device=device)
    cot = torch.randn_like(x)
    with torch.no_grad():
        err = float((gen(x) - ref(x)).abs().max() / ref(x).abs().max())
    print(f"config: {cfg}, norm_first={args.norm_first}, device={device}, threads={torch.get_num_threads()}")
    print(f"max relative difference of outputs: {err:.2e}")
    if err > 1e-4:
        raise SystemExit(f"outputs differ by {err:.2e}: the models are not the same")

    runs = {"torch": step(ref, x, cot), "generic": step(gen, x, cot)}
    for _ in range(cfg.warmup):
        for run in runs.values():
            run()
    times: dict[str, list[float]] = {name: [] for name in runs}
    for rep in range(cfg.reps):
        order = list(runs) if rep % 2 == 0 else list(reversed(runs))
        for name in order:
            times[name].append(timed(runs[name], device))
    med = {name: statistics.median(ts) for name, ts in times.items()}
    for name, ts in times.items():
        print(f"{name:8s} median {med[name] * 1e3:9.2f} ms  (min {min(ts) * 1e3:.2f}, max {max(ts) * 1e3:.2f})")
    ratio = med["generic"] / med["torch"]
    print(f"result: generic_over_torch_time_ratio {ratio:.3f} (target <= 1.05)")


if __name__ == "__main__":
    sys.exit(run_cli("attention_vector", main))
