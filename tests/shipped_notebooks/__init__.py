"""The shipped notebooks, executed headless with the tchbook kernel, and the outputs a reader relies on.

Each notebook in notebooks/ is executed once per test session by notebooks/run.py, the code
`scripts/run-notebooks` (the README's main command) runs: on the kernel its metadata names, from
notebooks/ as working directory (where its `data/` is), failing on any cell error except in cells
tagged `raises-exception`. scripts/test runs scripts/run-notebooks itself with `--out DIR` and
names DIR in TCHBOOK_EXECUTED_NOTEBOOKS; the checks then read the notebooks that run wrote,
instead of executing them a second time (by hand, without that variable, these tests run them
themselves). The checks read this run's outputs, found by the cell tags the notebook sources carry
(notebooks/src/*.md), and prefer the machine-readable `application/vnd.tchbook.<kind>+json` parts
the prelude puts beside its HTML and images over the printed prose. Static checks read the
committed .ipynb files: metadata, and that they were committed with the outputs of a real run.

- `runs.py`: the notebooks' names, and one notebook's run (`Run`, `execute`), read or executed;
- `outputs.py`: what the checks read in outputs: PNG and SVG images, plots' numbers, the device;
- `conftest.py`: a fixture per notebook, its run;
- `test_every_notebook.py`: what holds for every notebook, committed and executed;
- `test_00_tour.py` … `test_05_bootcamp_using_gpu.py`: each notebook's own outputs.

Needs the `tchbook` kernelspec installed (scripts/test installs it first; by hand:
`cargo build --release -p tchbook && target/release/tchbook install --sys-prefix`).
"""
