"""An RNN whose state is a function: estimating a temperature profile from two point sensors.

The heat equation ``u_t = ν u_xx + f`` on ``[-1, 1]`` with ``u(±1) = 0`` evolves an unknown profile
``u_t = Σ_{k<=K} a_k(t) sin(kπ(x+1)/2)`` from ``a_k(0) ~ N(0, k^-2)``: per step, mode ``k`` decays by
``exp(-ν (kπ/2)² Δt)`` (exactly) and random heat sources stir it, ``a_k += q w``, ``w ~ N(0, k^-2)``. At
each step two sensors read ``y_t = (u_t(s_1), u_t(s_2)) + noise``.
The task is to know the *whole* profile ``u_t`` at every step from the readings so far -- a state
observer, and a natural recurrence over a function-valued state:

    h_t = σ(W h_{t-1} + U y_t + b),   h_t ∈ Chebyshev(n)  (the estimate of u_t, evaluable anywhere)

with ``W : Chebyshev(n) -> Chebyshev(n)`` the learned propagator-and-correction and ``U`` the learned
gain (``models.RNNCell`` and ``models.scan``; ``σ`` the identity by default, so the model is a linear
observer; ``--activation tanh`` also works at these amplitudes). The loss is ``∫ (h_t - u_t)²`` through
the Chebyshev structure's own measure (``applicative.dot``).

The reference is the best possible estimate: the posterior mean of the modal amplitudes given all
readings so far (a linear-Gaussian model, so this is what a Kalman filter computes), in closed form. With
the sources stirring, the optimal filter settles to a fixed gain -- exactly of the RNN's form, ``W h + U y``
-- so at late times the learned observer can match it.

* :mod:`.config` -- the run's hyper-parameters; :mod:`.data` -- the trajectories, the sensors' readings and the
  posterior mean (the reference); :mod:`.train` -- the observer and its training task; :mod:`.program` -- what
  ``python -m examples.observer`` does.
"""

from .config import PRESETS, Config

__all__ = ["PRESETS", "Config"]
