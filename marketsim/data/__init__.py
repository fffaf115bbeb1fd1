"""Label containers and file loaders.

- :mod:`~marketsim.data.labels`: :class:`LabelSet`, the container every estimator reads;
- :mod:`~marketsim.data.load`: :func:`load_labels` (either format, detected), ``FORMATS``;
- :mod:`~marketsim.data.zhang`, :mod:`~marketsim.data.csv_labels`: the two label formats;
- :mod:`~marketsim.data.scores`: continuous scores and true means;
- :mod:`~marketsim.data.features`: binary task features;
- :mod:`~marketsim.data.datasets`: where the reference data sets live (``MARKETSIM_DATA``);
- :mod:`~marketsim.data.parsing`, :mod:`~marketsim.data.assembly`: shared internals.
"""

from marketsim.data.csv_labels import load_csv
from marketsim.data.datasets import DATASETS, dataset_paths, find_data_dir
from marketsim.data.features import FeatureTable, load_features
from marketsim.data.labels import LabelSet
from marketsim.data.load import FORMATS, detect_format, load_labels
from marketsim.data.scores import load_scores
from marketsim.data.zhang import load_zhang

__all__ = [
    "DATASETS",
    "FORMATS",
    "FeatureTable",
    "LabelSet",
    "dataset_paths",
    "detect_format",
    "find_data_dir",
    "load_csv",
    "load_features",
    "load_labels",
    "load_scores",
    "load_zhang",
]
