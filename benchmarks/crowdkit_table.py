"""Every method marketsim and crowd-kit 1.4.2 both have, side by side, in one run: accuracy and
fit time on the shared data sets, D_Product, and any other Zheng et al. data sets at hand.

Methods (ours by registry name, crowd-kit's class), each at both libraries' defaults: ``mv``
MajorityVote, ``ds`` DawidSkene, ``one-coin`` OneCoinDawidSkene, ``glad`` GLAD, ``mace`` MACE,
``wawa`` Wawa, ``zbs`` ZeroBasedSkill, and on two-class data only ``mmsr`` MMSR and ``kos`` KOS
(crowd-kit's are binary; ours refuses K > 2 for M-MSR). Where ours is random (``mv``'s ties,
``mace``'s starts, ``mmsr``) it runs at seed 0, crowd-kit at its defaults.

Data sets:

- shipped: RTE, Bird, Dog, Web (``$MARKETSIM_DATA/zhang2014``, read as
  ``agree_crowdkit.read_frames`` reads them) and D_Product (``benchmarks/d_product.py``'s
  folder: ``--d-product DIR``, ``$MARKETSIM_D_PRODUCT`` or under ``$MARKETSIM_DATA``);
- not shipped (``--extra DIR``, e.g. ``/tmp/cti/datasets`` of Zheng et al.'s repository, see
  ``d_product.py`` for the fetch): every sub-folder with ``answer.csv`` (``question,worker,
  answer``) and ``truth.csv`` (``question,truth``) whose answers are classes (Zheng et al.'s
  ``f``-prefixed numeric sets are left out), except ``d_jn-product`` (D_Product above).

Both sides read the same files with the same pandas calls (integer ids stay integers, string
ids strings) and call ``fit_predict(df)``; accuracy is on the tasks with a known true class.
Ours runs in this process; crowd-kit in its own interpreter (``--crowdkit-python``, default
``$CROWDKIT_PYTHON`` or ``/tmp/ck-dproduct/bin/python``: a venv with ``crowd-kit==1.4.2``,
``pandas<3`` and ``scikit-learn<1.6``, since its Wawa and ZeroBasedSkill fail on pandas 3 and
all of it on scikit-learn >= 1.6), started per data set right after ours on that set. Fit time:
the best of ``--repeat`` (default 3) calls for ours, of ``--crowdkit-repeat`` (default 1) for
crowd-kit (its GLAD takes up to a minute a fit); a crowd-kit fit still running after
``--timeout`` seconds (default 300) is stopped and reported as such.

Writes ``--json FILE`` (the raw figures) and, with ``--doc FILE``, replaces the text between
``<!-- BEGIN crowdkit_table -->`` and ``<!-- END crowdkit_table -->`` in it with the tables.
Run: ``python benchmarks/crowdkit_table.py --extra /tmp/cti/datasets --doc
docs/explanation/infer/crowdkit-comparison.md --json docs/crowdkit_table.json`` (:data:`DOC`,
the page of the tables); ``--from-json FILE --doc DOC`` rewrites the tables
from a saved run without running anything; ``--ours-from-json FILE`` re-runs marketsim's side
only and keeps crowd-kit's figures from the saved run (when only marketsim changed).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
import warnings
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import d_product  # noqa: E402

from marketsim.aggregation import make_estimator  # noqa: E402
from marketsim.data.datasets import find_data_dir  # noqa: E402

#: ours (registry name) -> crowd-kit's class
PAIRS = {"mv": "MajorityVote", "ds": "DawidSkene", "one-coin": "OneCoinDawidSkene",
         "glad": "GLAD", "mace": "MACE", "wawa": "Wawa", "zbs": "ZeroBasedSkill",
         "mmsr": "MMSR", "kos": "KOS"}
BINARY_ONLY = ("mmsr", "kos")
SHIPPED = {"RTE": "rte", "Bird": "bluebird", "Dog": "dog", "Web": "web"}
BEGIN, END = "<!-- BEGIN crowdkit_table -->", "<!-- END crowdkit_table -->"
#: The documentation page whose markers hold the tables (give it as ``--doc``).
ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "explanation" / "infer" / "crowdkit-comparison.md"
#: Margin (points) beyond which a difference is called out (issue #27's 0.5 points).
MARGIN = 0.5

#: The loader both sides run (the same pandas calls): kind "zhang" (whitespace ``task worker
#: label`` and ``task truth`` files) or "csv" (Zheng et al.'s answer.csv / truth.csv).
LOADER = r'''
import numpy as np, pandas as pd

def load(kind, labels, truth):
    if kind == "zhang":
        crowd = np.loadtxt(labels, dtype=np.int64, ndmin=2)
        gold = np.loadtxt(truth, dtype=np.int64, ndmin=2)
        df = pd.DataFrame({"task": crowd[:, 0], "worker": crowd[:, 1], "label": crowd[:, 2]})
        return df, pd.Series(gold[:, 1], index=gold[:, 0]).groupby(level=0).first()
    answers = pd.read_csv(labels)
    gold = pd.read_csv(truth)
    df = pd.DataFrame({"task": answers["question"].to_numpy(),
                       "worker": answers["worker"].to_numpy(),
                       "label": answers["answer"].to_numpy()})
    return df, pd.Series(gold["truth"].to_numpy(),
                         index=gold["question"].to_numpy()).groupby(level=0).first()

def accuracy(pred, gold):
    common = gold.index.intersection(pred.index)
    return 100.0 * float((pred.loc[common].to_numpy() == gold.loc[common].to_numpy()).mean())
'''

#: Run by crowd-kit's interpreter: argv = kind, labels, truth, repeat, timeout, methods...;
#: prints one JSON object {method: [accuracy %, best fit s] or an error string}.
CROWDKIT = LOADER + r'''
import json, signal, sys, time, warnings
import crowdkit.aggregation as ck
kind, labels, truth, repeat, timeout = sys.argv[1:6]
df, gold = load(kind, labels, truth)

class Timeout(Exception):
    pass

def alarm(signum, frame):
    raise Timeout()

signal.signal(signal.SIGALRM, alarm)
out = {}
for method in sys.argv[6:]:
    best = float("inf")
    try:
        signal.alarm(int(float(timeout)))
        for _ in range(int(repeat)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                start = time.perf_counter()
                pred = getattr(ck, method)().fit_predict(df)
                best = min(best, time.perf_counter() - start)
        signal.alarm(0)
        out[method] = [accuracy(pred, gold), best]
    except Timeout:
        out[method] = f"stopped after {timeout} s"
    except Exception as exc:  # reported in the table, not hidden
        signal.alarm(0)
        out[method] = f"{type(exc).__name__}: {str(exc)[:80]}"
print(json.dumps(out))
'''

namespace: dict[str, Any] = {}
exec(LOADER, namespace)  # noqa: S102 - our own loader, the one crowd-kit's side runs
load, accuracy = namespace["load"], namespace["accuracy"]


def ours(name: str, df: Any, gold: Any, repeat: int) -> list[float] | str:
    """[accuracy %, best fit s] of our ``name`` at its defaults (seed 0 where random)."""
    best = float("inf")
    try:
        for _ in range(repeat):
            est = make_estimator(name)
            if "random_state" in est.get_params() and est.get_params()["random_state"] is None:
                est.set_params(random_state=0)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                start = time.perf_counter()
                pred = est.fit_predict(df)
                best = min(best, time.perf_counter() - start)
    except Exception as exc:  # reported in the table, not hidden
        return f"{type(exc).__name__}: {str(exc)[:80]}"
    return [accuracy(pred, gold), best]


def theirs(python: str, kind: str, labels: Path, truth: Path, methods: list[str],
           repeat: int, timeout: float) -> dict[str, Any]:
    """crowd-kit's figures for ``methods`` (our names) on one data set."""
    done = subprocess.run(
        [python, "-c", CROWDKIT, kind, str(labels), str(truth), str(repeat), str(timeout),
         *(PAIRS[m] for m in methods)], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"crowd-kit side failed:\n{done.stderr[-3000:]}")
    raw = json.loads(done.stdout.strip().splitlines()[-1])
    return {m: raw[PAIRS[m]] for m in methods}


def data_sets(args: argparse.Namespace) -> list[tuple[str, str, str, Path, Path]]:
    """(group, name, kind, labels file, truth file) of every data set found."""
    found: list[tuple[str, str, str, Path, Path]] = []
    zhang = (args.data or find_data_dir()) / "zhang2014"
    for name, stem in SHIPPED.items():
        labels, truth = zhang / f"{stem}_crowd.txt", zhang / f"{stem}_truth.txt"
        if labels.is_file() and truth.is_file():
            found.append(("shipped", name, "zhang", labels, truth))
    folder = d_product.find_folder(args.d_product)
    if folder is not None:
        found.append(("shipped", "D_Product", "csv", folder / d_product.ANSWERS,
                      folder / d_product.TRUTH))
    if args.extra is not None:
        for sub in sorted(args.extra.iterdir()):
            answers, truth = sub / "answer.csv", sub / "truth.csv"
            if (sub.name == d_product.FOLDER or sub.name.startswith("f")
                    or not (answers.is_file() and truth.is_file())):
                continue
            found.append(("extra", sub.name, "csv", answers, truth))
    return found


def markdown(rows: list[dict[str, Any]], group: str) -> list[str]:
    """One Markdown table of the rows of ``group``."""
    out = ["| data | method (ours / crowd-kit) | marketsim % | crowd-kit % | difference "
           "(points) | marketsim fit s | crowd-kit fit s |",
           "|---|---|---:|---:|---:|---:|---:|"]
    for row in (r for r in rows if r["group"] == group):
        o, t = row["ours"], row["crowdkit"]
        o_acc, o_s = (f"{o[0]:.2f}", f"{o[1]:.4f}") if isinstance(o, list) else (o, "")
        t_acc, t_s = (f"{t[0]:.2f}", f"{t[1]:.3f}") if isinstance(t, list) else (t, "")
        diff = ""
        if isinstance(o, list) and isinstance(t, list):
            d = o[0] - t[0]
            diff = f"**{d:+.2f}**" if abs(d) > MARGIN else f"{d:+.2f}"
        out.append(f"| {row['data']} | `{row['method']}` / {PAIRS[row['method']]} | {o_acc} "
                   f"| {t_acc} | {diff} | {o_s} | {t_s} |")
    return out


def write_doc(path: Path, text: str) -> None:
    """Replace the text between :data:`BEGIN` and :data:`END` in ``path`` with ``text``."""
    doc = path.read_text()
    a, b = doc.find(BEGIN), doc.find(END)
    if a < 0 or b < a:
        raise SystemExit(f"{path}: no {BEGIN} ... {END} markers")
    path.write_text(doc[:a + len(BEGIN)] + "\n" + text + "\n" + doc[b:])


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=None, help="reference data folder")
    p.add_argument("--d-product", type=Path, default=None, help="D_Product folder")
    p.add_argument("--extra", type=Path, default=None, help="folder of Zheng et al. data sets")
    p.add_argument("--crowdkit-python", default=os.environ.get(
        "CROWDKIT_PYTHON", "/tmp/ck-dproduct/bin/python"))
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--crowdkit-repeat", type=int, default=1)
    p.add_argument("--timeout", type=float, default=300.0)
    p.add_argument("--only", nargs="*", default=None, help="data set names to run")
    p.add_argument("--json", type=Path, default=None)
    p.add_argument("--doc", type=Path, default=None,
                   help=f"write the tables between the markers of this page (the project's: "
                        f"{DOC.relative_to(ROOT)})")
    p.add_argument("--from-json", type=Path, default=None,
                   help="write the tables from a earlier run's --json file, running nothing")
    p.add_argument("--ours-from-json", type=Path, default=None,
                   help="re-run marketsim's side only, keeping crowd-kit's figures from an "
                   "earlier run's --json file (crowd-kit 1.4.2 does not change)")
    args = p.parse_args(argv)
    if args.from_json is not None:
        saved = json.loads(args.from_json.read_text())
        return report(args, saved["meta"], saved["rows"])
    if args.ours_from_json is not None:
        return rerun_ours(args, json.loads(args.ours_from_json.read_text()))
    versions = subprocess.run(
        [args.crowdkit_python, "-c", "import crowdkit, pandas, sklearn; print(crowdkit.__version__,"
         " pandas.__version__, sklearn.__version__)"], capture_output=True, text=True
    ).stdout.split()
    rows: list[dict[str, Any]] = []
    for group, name, kind, labels, truth in data_sets(args):
        if args.only and name not in args.only:
            continue
        df, gold = load(kind, labels, truth)
        methods = [m for m in PAIRS if df["label"].nunique() == 2 or m not in BINARY_ONLY]
        mine = {m: ours(m, df, gold, args.repeat) for m in methods}
        other = theirs(args.crowdkit_python, kind, labels, truth, methods,
                       args.crowdkit_repeat, args.timeout)
        for m in methods:
            rows.append({"group": group, "data": name, "method": m, "n_labels": len(df),
                         "n_classes": int(df["label"].nunique()), "ours": mine[m],
                         "crowdkit": other[m]})
            print(f"{name:35} {m:9} ours {mine[m]}  crowd-kit {other[m]}", flush=True)
    meta = {"date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": f"{os.cpu_count()} CPUs, {platform.machine()}",
            "load_average_at_end": round(os.getloadavg()[0], 2),
            "crowdkit_pandas_sklearn": versions, "repeat": args.repeat,
            "crowdkit_repeat": args.crowdkit_repeat, "timeout_s": args.timeout}
    if args.json:
        args.json.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    return report(args, meta, rows)


def rerun_ours(args: argparse.Namespace, saved: dict[str, Any]) -> int:
    """Re-run our side of every row of ``saved`` on the data sets found, keep crowd-kit's."""
    files = {name: (kind, labels, truth) for _, name, kind, labels, truth in data_sets(args)}
    missing = sorted({r["data"] for r in saved["rows"]} - set(files))
    if missing:
        raise SystemExit(f"data sets of the saved run not found: {', '.join(missing)}")
    for name in dict.fromkeys(r["data"] for r in saved["rows"]):
        df, gold = load(*files[name])
        for row in (r for r in saved["rows"] if r["data"] == name):
            row["ours"] = ours(row["method"], df, gold, args.repeat)
            print(f"{name:35} {row['method']:9} ours {row['ours']}", flush=True)
    meta = dict(saved["meta"])
    meta["date"] = (f"{datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')} (marketsim's side; "
                    f"crowd-kit's figures from the run of {saved['meta']['date']})")
    meta["load_average_at_end"] = round(os.getloadavg()[0], 2)
    meta["repeat"] = args.repeat
    if args.json:
        args.json.write_text(json.dumps({"meta": meta, "rows": saved["rows"]}, indent=1) + "\n")
    return report(args, meta, saved["rows"])


def report(args: argparse.Namespace, meta: dict[str, Any], rows: list[dict[str, Any]]) -> int:
    """Print the tables (and write them into ``args.doc``)."""
    versions = meta["crowdkit_pandas_sklearn"]
    text = [f"Generated by `python benchmarks/crowdkit_table.py` on {meta['date']} "
            f"({meta['machine']}, load average {meta['load_average_at_end']} at the end; "
            f"crowd-kit, pandas, scikit-learn: {', '.join(versions)}; fit time: ours best of "
            f"{meta['repeat']}, crowd-kit best of {meta['crowdkit_repeat']}; a crowd-kit fit "
            f"is stopped after {meta['timeout_s']:.0f} s). Bold: a difference "
            f"over {MARGIN} points.", ""]
    text += markdown(rows, "shipped")
    if any(r["group"] == "extra" for r in rows):
        text += ["", "Data sets not shipped (Zheng et al.'s repository, `--extra`):", ""]
        text += markdown(rows, "extra")
    print("\n".join(text))
    if args.doc:
        write_doc(args.doc, "\n".join(text))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
