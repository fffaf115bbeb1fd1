"""MACE on D_Product: our fits and crowd-kit 1.4.2's, scored under one objective.

crowd-kit's paper gives MACE .929 on D_Product; ours gives about 84 %. This script asks which
solution MACE itself prefers. Every solution is a set of parameters, competence ``theta_j``
and answer distribution ``xi_j`` per worker, and is scored by

- the data log-likelihood ``log P(labels | theta, xi)`` under MACE's uniform class prior
  (:func:`marketsim.aggregation.mace.log_likelihood`), and
- the log-posterior: that plus the log-density of the VB mode's priors, Beta(0.5, 0.5) on
  ``theta_j`` and Dirichlet(10) on ``xi_j`` (what MAP with those priors maximises),

together with the accuracy of the class each task is most probably under those parameters.
Every solution is scored at the parameters its own E-step uses (under VB, crowd-kit's and ours,
the exp-digamma values, normalised to probabilities).

Solutions: crowd-kit's fit (VB, its defaults) on the file as read, after a random renaming of
the workers, and after renumbering them in order of first appearance, each read as its own
E-step reads its parameters (row j of ``spamming_``/``thetas_`` for the j-th worker to appear;
its M-step stores ``thetas_`` in sorted-id order, so on the file as read each worker is scored
with another worker's ``xi``); ours at the defaults (VB and EM); and ours started from the true
classes and from crowd-kit's answers (one run each, to convergence).

crowd-kit runs in its own venv (``python -m venv /work/ckvenv && /work/ckvenv/bin/pip install
crowd-kit==1.4.2 "pandas<3" "scikit-learn<1.6"``; ``--crowdkit-python``), about a minute a fit.

Run: ``python benchmarks/d_product_mace.py [--data DIR] [--crowdkit-python PY]``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
from scipy.special import betaln, gammaln

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import d_product  # noqa: E402

from marketsim.aggregation import MACE  # noqa: E402
from marketsim.aggregation.mace import e_step, log_likelihood  # noqa: E402
from marketsim.data.labels import LabelSet  # noqa: E402

CROWDKIT = r"""
import sys, warnings
import numpy as np, pandas as pd
from crowdkit.aggregation import MACE
answers, how, out = sys.argv[1:4]
df = pd.read_csv(answers).rename(columns={"question": "task", "answer": "label"})
codes, names = pd.factorize(df["worker"])
if how == "random":
    perm = np.random.default_rng(1).permutation(len(names))
    df["worker"] = [f"w{perm[c]:04d}" for c in codes]
elif how == "renumbered":
    df["worker"] = codes
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    mace = MACE()
    pred = mace.fit_predict(df)
assert list(pd.factorize(df["label"])[1]) == [0, 1]
# rows of spamming_/thetas_ as the E-step reads them: the j-th worker to appear in the file
np.savez(out, spamming=mace.spamming_, thetas=mace.thetas_,
         tasks=pred.index.to_numpy().astype(str), pred=pred.to_numpy().astype(int))
"""


def log_prior(theta: np.ndarray, xi: np.ndarray, a: float = 0.5, b: float = 0.5,
              s: float = 10.0) -> float:
    """Log-density of Beta(a, b) on each ``theta_j`` and Dirichlet(s) on each ``xi_j``."""
    k = xi.shape[1]
    beta = (a - 1) * np.log1p(-theta) + (b - 1) * np.log(theta) - betaln(a, b)
    dirichlet = ((s - 1) * np.log(xi)).sum(axis=1) + gammaln(k * s) - k * gammaln(s)
    return float(beta.sum() + dirichlet.sum())


def score(data: LabelSet, truth: np.ndarray, theta: np.ndarray,
          xi: np.ndarray) -> tuple[float, float, float]:
    """Log-likelihood, log-posterior and accuracy (%) of the parameters ``theta``, ``xi``."""
    proba, ll = e_step(data, {"spam": 1.0 - theta, "know": theta, "strategy": xi})
    assert np.isclose(ll, log_likelihood(data, theta, xi))
    return ll, ll + log_prior(theta, xi), d_product.accuracy(proba.argmax(axis=1), truth)


def crowdkit(python: str, answers: Path, how: str) -> dict[str, np.ndarray]:
    """crowd-kit's fitted parameters and answers (``how``: asread, random, renumbered)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "fit.npz"
        subprocess.run([python, "-c", CROWDKIT, str(answers), how, str(out)], check=True)
        with np.load(out) as z:
            return {key: z[key] for key in z.files}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("--crowdkit-python", default="/work/ckvenv/bin/python")
    args = parser.parse_args(argv)
    folder = d_product.find_folder(args.data)
    if folder is None:
        print("D_Product data not found: pass --data DIR (see benchmarks/d_product.py)",
              file=sys.stderr)
        return 2
    data, truth = d_product.load(folder)
    rows: list[tuple[str, np.ndarray, np.ndarray]] = []
    ck_answers = None
    if Path(args.crowdkit_python).exists():
        for how in ("asread", "random", "renumbered"):
            fit = crowdkit(args.crowdkit_python, folder / d_product.ANSWERS, how)
            spam, xi = fit["spamming"], fit["thetas"]
            rows.append((f"crowd-kit 1.4.2, workers {how}", spam[:, 1] / spam.sum(axis=1),
                         xi / xi.sum(axis=1, keepdims=True)))
            if how == "asread":
                where = {t: i for i, t in enumerate(data.task_ids.astype(str))}
                ck_answers = np.zeros((data.n_tasks, 2))
                ck_answers[[where[t] for t in fit["tasks"]], fit["pred"]] = 1.0
    else:
        print(f"({args.crowdkit_python} not found: crowd-kit's rows left out)")
    starts: list[tuple[str, dict, np.ndarray | None]] = [
        ("ours, defaults (VB)", {}, None), ("ours, EM", {"mode": "em"}, None)]
    one_hot = np.eye(2)[truth]
    starts.append(("ours, VB started from the truth", {}, one_hot))
    if ck_answers is not None:
        starts.append(("ours, VB started from crowd-kit's answers", {}, ck_answers))
    for name, params, init in starts:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est = MACE(**params).fit(data, init_proba=init)
        note = " (did not converge)" if any("converge" in str(w.message) for w in caught) \
            else ""
        # scored at the parameters its E-step uses (under VB the exp-digamma values,
        # normalised), as crowd-kit's rows are
        params = est.params_
        theta = params["know"] / (params["know"] + params["spam"])
        rows.append((name + note, theta,
                     params["strategy"] / params["strategy"].sum(axis=1, keepdims=True)))
    print(f"{'solution':50} {'log-lik':>10} {'log-post':>10} {'acc %':>7}")
    for name, theta, xi in rows:
        ll, lp, acc = score(data, truth, theta, xi)
        print(f"{name:50} {ll:>10.1f} {lp:>10.1f} {acc:>7.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
