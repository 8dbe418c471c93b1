"""Regression with uncertainty: a Transformer whose output per query is a distribution, trained by NLL.

``python -m examples.uncertainty`` (:func:`.program.compare`) trains two models on one seeded synthetic task with
heteroscedastic, skewed noise and reports test negative log-likelihood and calibration
(coverage of the central 50% and 90% predictive intervals):

* a *mixture Transformer* (:class:`~.model.MixtureTransformer`): the query ``x`` is copied
  onto ``K`` tokens, one per mixture component; an encoder from :mod:`models.transformer`
  attends across the components, and a linear head reads each component's weight, location
  and scale: a mixture of ``K`` Gaussians;
* a *Gaussian MLP* baseline (:class:`~.model.GaussianMLP`) with the same number of
  parameters (within 5%): a mean and a scale per query.

Predictive means come from each output distribution as Gauss–Hermite points
(:func:`instances.quadrature`) and the :class:`~instances.Distribution` counit.
"""

from .config import PRESETS, Config
from .model import GaussianMLP, MixtureTransformer

__all__ = ["PRESETS", "Config", "GaussianMLP", "MixtureTransformer"]
