"""Altair chart builders, one function per paper figure; notebooks and jobs call them."""

import warnings

# Inside Jupyter without ipywidgets, tqdm.auto (imported by dependencies) warns in red on every kernel;
# the warning says nothing about the analysis. Set here: this package is imported before them.
warnings.filterwarnings("ignore", message="IProgress not found")
