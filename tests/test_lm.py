"""Character-level language models: the corpus, causality checked on each model, memorising a batch,
the job on the shared loop (report, samples, load)."""

from __future__ import annotations

import collections
import hashlib
import json
import math
from pathlib import Path

import pytest
import torch

from examples.lm.__main__ import main
from training.tasks import lm
from training.tasks.lm import data
from training.tasks.lm.config import PRESETS
from training.tasks.lm.model import CharLM

TINY = PRESETS["tiny"]
KINDS = ["gpt", "ipa", "relu", "softplus", "triangular", "rnn"]


def test_corpus_provenance_split_and_unigram_baseline() -> None:
    c = data.corpus(20000)
    full = data.text()
    assert c.sha256 == hashlib.sha256(full.encode()).hexdigest()
    assert len(c.train) == 18000 and len(c.valid) == 2000
    assert c.decode(torch.cat([c.train, c.valid])) == full[:20000]
    counts = collections.Counter(full[:18000])
    total = sum(counts.values()) + len(c.vocab)
    want = -sum(math.log2((counts[ch] + 1) / total) for ch in full[18000:20000]) / 2000
    assert c.unigram_bits() == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("kind", KINDS)
def test_changing_a_future_token_never_changes_an_earlier_output(kind: str) -> None:
    torch.manual_seed(0)
    model = CharLM(TINY.replace(model=kind), "abcdefgh").double()
    x = torch.randint(0, 8, (3, 12))
    y = x.clone()
    y[:, 7] = (y[:, 7] + 1) % 8
    a, b = model(x), model(y)
    torch.testing.assert_close(a[:, :7], b[:, :7], rtol=0, atol=0)
    assert float((a[:, 7:] - b[:, 7:]).abs().max().detach()) > 1e-6  # and the change is seen from there on


@pytest.mark.parametrize("kind", KINDS)
def test_a_batch_is_memorised(kind: str) -> None:
    torch.manual_seed(0)
    model = CharLM(TINY.replace(model=kind, width=32, hidden=64), "abcdefgh")
    x = torch.randint(0, 8, (4, 16))
    y = torch.randint(0, 8, (4, 16))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(300):
        loss = torch.nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert float(loss.detach()) < 0.05


def test_job_reports_samples_and_loads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    assert main(["--preset", "tiny", "--out", str(out), "--no-progress", "--sample", "50"]) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["text_sha256"] == hashlib.sha256(data.text().encode()).hexdigest()
    assert report["unigram_bits_per_char"] > 0 and math.isfinite(report["valid_bits_per_char"])
    assert [r["step"] for r in report["history"]] == [10, 20]
    assert len((out / "samples.txt").read_text()) >= 50
    model = lm.load(out)
    assert sum(p.numel() for p in model.parameters()) == report["parameters"]
    code = main(["--preset", "tiny", "--out", str(out), "--config", "model=bogus"])
    err = capsys.readouterr().err
    assert code == 2 and "model='bogus': must be one of" in err and len(err.strip().splitlines()) == 1


def test_triangular_mixing_is_a_masked_running_average_per_head() -> None:
    from applicative import Field, StructureError, Vector
    from instances import Chebyshev
    from models import TriangularMixing

    torch.manual_seed(0)
    mix = TriangularMixing(Vector(6), context=5, heads=2, gamma=0.5, dtype=torch.float64)
    x = torch.randn(3, 4, 6, dtype=torch.float64)
    got = mix(Field(x, (Vector(4), Vector(6)))).tensor
    for h in range(2):  # the initial weights: discounted running averages, head by head, explicitly
        for i in range(4):
            w = torch.tensor([0.5 ** (i - j) for j in range(i + 1)], dtype=torch.float64)
            want = (w[:, None] * x[:, : i + 1, 3 * h : 3 * h + 3]).sum(1) / w.sum()
            torch.testing.assert_close(got[:, i, 3 * h : 3 * h + 3], want)
    with torch.no_grad():  # learned weights above the diagonal never act
        mix.weight.add_(torch.randn_like(mix.weight))
    y = x.clone()
    y[:, 2:] = 0.0
    torch.testing.assert_close(
        mix(Field(y, (Vector(4), Vector(6)))).tensor[:, :2], mix(Field(x, (Vector(4), Vector(6)))).tensor[:, :2]
    )
    with pytest.raises(StructureError, match="no order"):
        mix(Field(torch.randn(2, 4, 6, dtype=torch.float64), (Chebyshev(4), Vector(6))))


def test_models_have_matched_parameter_counts() -> None:
    vocab = "".join(chr(33 + i) for i in range(100))
    default = PRESETS["default"]
    counts = {k: sum(p.numel() for p in CharLM(default.replace(model=k), vocab).parameters()) for k in KINDS}
    for k, n in counts.items():
        assert abs(n - counts["gpt"]) <= 0.05 * counts["gpt"], (k, counts)
    # the GPT's count by hand: embed + positions + per layer (2 norms, q/k/v/out with biases, the MLP) + norm + head
    d, h, v, t, layers = default.width, default.hidden, 100, default.context, default.depth
    per_layer = 4 * d + (4 * d * d + 4 * d) + (2 * d * h + h + d)
    assert counts["gpt"] == v * d + t * d + layers * per_layer + 2 * d + d * v
    # the RNN's by hand at its matched state size: input map and bias, recurrent map, norm, head
    s = CharLM(default.replace(model="rnn"), vocab).size
    assert counts["rnn"] == v * s + s + s * s + 2 * s + s * v


@pytest.mark.parametrize("kind", ["gpt", "relu", "softplus", "triangular", "ipa"])
def test_each_block_runs_on_functions_over_ragged_sequences(kind: str) -> None:
    """Every block on a Chebyshev model structure (features are functions) over a Padded sequence: a sequence
    padded to 6 gives, at its own positions, what it gives alone, and the future never reaches the past."""
    from applicative import Field, Vector
    from instances import Chebyshev, Padded
    from models import EncoderLayer, IPALayer, TriangularLayer
    from training.tasks.lm.model import normalisation

    torch.manual_seed(0)
    d, hidden = Chebyshev(8), Chebyshev(16)
    block: torch.nn.Module
    if kind == "triangular":
        block = TriangularLayer(d, hidden, context=6, heads=2, dtype=torch.float64)
    elif kind == "ipa":
        block = IPALayer(d, d.split(2), column_centres=2, row_centres=2, dtype=torch.float64)
    else:
        norm = normalisation(kind, d.split(2).size)  # type: ignore[arg-type]
        block = EncoderLayer(d, hidden, 2, normalise=norm, norm_first=True, dtype=torch.float64)
    lengths = [6, 2, 4]
    x = torch.randn(3, 6, 8, dtype=torch.float64)
    got = block(Field(x, (Padded(6, lengths), d))).tensor
    for b, n in enumerate(lengths):
        torch.testing.assert_close(got[b, :n], block(Field(x[b : b + 1, :n], (Vector(n), d))).tensor[0])
    y = x.clone()
    y[:, 3:] += 1.0
    torch.testing.assert_close(
        block(Field(y, (Vector(6), d))).tensor[:, :3], block(Field(x, (Vector(6), d))).tensor[:, :3]
    )
