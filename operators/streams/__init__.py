"""Operator data larger than memory: pairs of functions read from a file as training needs them.

* :mod:`.rows` -- one array of a file read by rows (samples) in its own dtype: positioned reads of ``.npy``, stored
  ``.npz`` members and ``.pt`` tensors, HDF5 hyperslabs; :mod:`.formats` -- which reader a file's array gets (what
  cannot be read by rows, whole if it fits the budget);
* :mod:`.pairs` -- :class:`PairStream`, a :class:`torch.utils.data.Dataset` of ``(input, output)`` pairs channels
  last, over a subset of a file's samples (:func:`open_pairs`, :func:`held_out`);
* :mod:`.batches` -- each step's seeded global batch and each rank's slice of it (:class:`GlobalBatches`), and the
  :class:`~torch.utils.data.DataLoader` that reads them within a memory budget (:func:`loader`);
* :mod:`.statistics` -- normalisation statistics and the data's checks in one streaming pass (:func:`summarise`);
* :mod:`.evaluate` -- a metric per sample over a stream, a batch at a time (:class:`Evaluation`).

A memory budget here bounds what is resident -- the batches in flight, a pass's block, arrays read whole, chunk
caches -- never the size of the file.
"""

from .batches import GlobalBatches as GlobalBatches
from .batches import Sequential as Sequential
from .batches import global_batch as global_batch
from .batches import loader as loader
from .evaluate import Evaluation as Evaluation
from .evaluate import per_sample as per_sample
from .formats import open_rows as open_rows
from .pairs import PairStream as PairStream
from .pairs import held_out as held_out
from .pairs import open_pairs as open_pairs
from .rows import Rows as Rows
from .statistics import Moments as Moments
from .statistics import Summary as Summary
from .statistics import summarise as summarise
