"""Structures and rings: vectors, Chebyshev and Fourier series, trees, DAGs, graphs, distributions, quantum states,
padded sequences; tropical, log and complex semirings.

Each structure module writes only its contract (:class:`applicative.Structure`);
the law checker's arbitraries live in modules of their own beside it, which
import the structure (never the other way round).

A grid's axes are values too: :mod:`instances.layouts` (where the samples sit: structures whose measure is their
quadrature) and :mod:`instances.axes` (the boundary -- a series, its basis and what it imposes -- the
:class:`~instances.axes.Axis` holding both, and the one registry of their names).
"""

from ._chebarbitrary import ChebyshevArbitrary
from ._dag_arbitrary import DAGArbitrary
from ._distribution_arbitrary import DistributionArbitrary
from ._fourier_arbitrary import FourierArbitrary
from ._graph_arbitrary import GraphArbitrary
from ._padded_arbitrary import PaddedArbitrary
from ._product_arbitrary import ProductArbitrary
from ._quantum_arbitrary import QuantumArbitrary
from ._tree_arbitrary import TreeArbitrary
from .chebyshev import Chebyshev, CoefficientSoftmax
from .continuous import gaussian_mixture, normal_points, quadrature
from .dag import DAG, DAGLevel, DAGSchedule
from .distribution import Distribution, Product, product, pushforward
from .expression import Expressions, by_op
from .fourier import Fourier
from .graph import EdgeSoftmax, Graph
from .padded import Padded
from .quantum import Quantum
from .rings import COMPLEX, LOG, MAX_PLUS, MIN_PLUS, Complex, LogSemiring, MaxPlus, MinPlus, RealPartSoftmax
from .tree import NodeAlgebra, Tree, tree_field
from .vector import Vector

__all__ = [
    "COMPLEX",
    "DAG",
    "LOG",
    "MAX_PLUS",
    "MIN_PLUS",
    "Chebyshev",
    "ChebyshevArbitrary",
    "CoefficientSoftmax",
    "Complex",
    "DAGArbitrary",
    "DAGLevel",
    "DAGSchedule",
    "Distribution",
    "DistributionArbitrary",
    "EdgeSoftmax",
    "Expressions",
    "Fourier",
    "FourierArbitrary",
    "Graph",
    "GraphArbitrary",
    "LogSemiring",
    "MaxPlus",
    "MinPlus",
    "NodeAlgebra",
    "Padded",
    "PaddedArbitrary",
    "Product",
    "ProductArbitrary",
    "Quantum",
    "QuantumArbitrary",
    "RealPartSoftmax",
    "Tree",
    "TreeArbitrary",
    "Vector",
    "by_op",
    "gaussian_mixture",
    "normal_points",
    "product",
    "pushforward",
    "quadrature",
    "tree_field",
]
