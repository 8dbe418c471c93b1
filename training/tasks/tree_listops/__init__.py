"""ListOps on trees: the Treeformer, a flat Transformer and a learned fold, built from the generic parts."""

from .config import PRESETS, Config
from .model import SPEC, ListOpsModel, load

__all__ = ["PRESETS", "SPEC", "Config", "ListOpsModel", "load"]
