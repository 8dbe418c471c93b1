"""The operator model: functions sampled on a grid of one or two axes in, functions of the domain out.

:class:`OperatorModel` is configured by its constructor's arguments (the axes, the channels in and out, the series
lengths and sizes, the reader's :class:`Reading`), and built from small parts that can be replaced one at a time:
the :class:`GridReader` (samples in any layout onto the model's series; on periodic axes the exact
:class:`FourierReader` instead), :class:`AlongAxes` (a Funcformer along each axis), an optional :class:`GridPath`
(a pointwise nonlinearity at the input grid's samples) and the :class:`SeriesHead` (the output channels' series,
the boundaries imposed) or the :class:`PointDecoder` (an MLP of the functions at each point); the output is evaluated
anywhere by :func:`at_grid` and :func:`at_points`, and :func:`roughness` measures it. The axes are
:class:`instances.axes.Axis` values: a layout (:mod:`instances.layouts`), an extent and a boundary.
"""

from ._along import AlongAxes as AlongAxes
from ._decoder import DECODER_WIDTH as DECODER_WIDTH
from ._decoder import PointDecoder as PointDecoder
from ._decoder import decoder_width as decoder_width
from ._fourier_reader import FourierReader as FourierReader
from ._fourier_reader import fourier_coefficients as fourier_coefficients
from ._grid_path import GridPath as GridPath
from ._head import SeriesHead as SeriesHead
from ._model import OperatorModel as OperatorModel
from ._reader import GridReader as GridReader
from ._reader import Reading as Reading
from ._reader import features as features
from ._reader import tokens as tokens
from ._series import at_grid as at_grid
from ._series import at_points as at_points
from ._series import domain_mean as domain_mean
from ._series import roughness as roughness
from ._series import sizes as sizes

__all__ = [
    "DECODER_WIDTH",
    "AlongAxes",
    "FourierReader",
    "GridPath",
    "GridReader",
    "OperatorModel",
    "PointDecoder",
    "Reading",
    "SeriesHead",
    "at_grid",
    "at_points",
    "decoder_width",
    "domain_mean",
    "features",
    "fourier_coefficients",
    "roughness",
    "sizes",
    "tokens",
]
