"""labeler: LLM-as-judge relevance labels, agreement with human labels, trec_eval-exact NDCG.

The whole job from Python, one stage per function (each takes paths, ``irds:<id>`` or
ir_datasets datasets, DataFrames in the field's column conventions, records, ir_measures
tuples, pytrec_eval dicts or ranx objects, and returns a result object that renders as a
table in a notebook and converts with ``to_ir_measures()``/``to_ranx()``/``to_pyterrier()``)::

    import labeler

    runs = labeler.read_runs(["bm25.run", "dense.run"])
    pairs = labeler.pool("queries.tsv", "corpus.jsonl", runs, depth=10)
    llm = labeler.label(pairs, model="gpt-4o-mini").records      # or model="lexical" offline
    rec = labeler.reconcile(llm=llm, human="human.qrels")        # agreement, merged labels
    labeler.score("human.qrels", runs, k=[5, 10]).summary        # NDCG@k, trec_eval-exact
    labeler.compare(human="human.qrels", llm=llm, runs=runs)     # do the labels change the winner?
    labeler.sample_queries(llm, n=10, out="sheets/todo.csv")    # random queries for people;
    labeler.plan(human="sheets/todo.csv", llm=llm, runs=runs, half_width=0.05)  # how many more?
    labeler.more_queries("sheets/todo.csv", m=15)               # ... the next of the same order
    #   ... stats=labeler.StatsOptions(test="randomization", ppi=True): which differences are real

Functions that take both label sets take them by keyword only (``human=``, ``llm=``).
Readers: ``read_pairs``, ``read_queries``, ``read_corpus``, ``read_qrels``, ``read_run``,
``read_runs``, ``read_labels``. The judge's settings: :class:`labeler.settings.JudgeConfig`.
Everything is imported on first use, so ``import labeler`` (and ``labeler --help``) stays
instant.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from labeler.errors import (ConfigError as ConfigError, EndpointError as EndpointError,
                            InputError as InputError, JudgeError as JudgeError,
                            LabelerError as LabelerError)

if TYPE_CHECKING:
    from labeler.reconciliation.agreement import AgreementReport as AgreementReport
    from labeler.reconciliation.comparison import (Comparison as Comparison, compare as compare)
    from labeler.reconciliation.plan import (Plan as Plan, plan as plan)
    from labeler.reconciliation.sheets import (more_queries as more_queries,
                                               sample_queries as sample_queries)
    from labeler.reconciliation.certification import (Certification as Certification,
                                                      certify as certify)
    from labeler.io import (read_corpus as read_corpus, read_labels as read_labels,
                            read_pairs as read_pairs, read_qrels as read_qrels,
                            read_queries as read_queries, read_run as read_run,
                            read_runs as read_runs)
    from labeler.labelling.result import LabelResult as LabelResult
    from labeler.labelling.stage import label as label
    from labeler.labelling.pooling import pool as pool
    from labeler.reconciliation.stage import (Reconciliation as Reconciliation,
                                              reconcile as reconcile)
    from labeler.scoring.results import (ScoreResult as ScoreResult, score as score)
    from labeler.settings import JudgeConfig as JudgeConfig
    from labeler.statistics.options import StatsOptions as StatsOptions
    from labeler.statistics.verdicts import Significance as Significance

_LAZY: dict[str, str] = {
    "label": "labelling.stage", "LabelResult": "labelling.result",
    "pool": "labelling.pooling",
    "reconcile": "reconciliation.stage", "Reconciliation": "reconciliation.stage",
    "AgreementReport": "reconciliation.agreement",
    "score": "scoring.results", "ScoreResult": "scoring.results",
    "compare": "reconciliation.comparison", "Comparison": "reconciliation.comparison",
    "plan": "reconciliation.plan", "Plan": "reconciliation.plan",
    "sample_queries": "reconciliation.sheets", "more_queries": "reconciliation.sheets",
    "certify": "reconciliation.certification", "Certification": "reconciliation.certification",
    "JudgeConfig": "settings",
    "StatsOptions": "statistics.options", "Significance": "statistics.verdicts",
    **{name: "io" for name in ("read_pairs", "read_queries", "read_corpus", "read_qrels",
                               "read_run", "read_runs", "read_labels")},
}

_EAGER = ("ConfigError", "EndpointError", "InputError", "JudgeError", "LabelerError",
          "__version__")
_PUBLIC = {**_LAZY, **dict.fromkeys(_EAGER, "")}
# the imports above re-export each name (``x as x``), so ruff and mypy need no written-out
# list: the public names are the lazy table's, the errors and the version
__all__ = list(_PUBLIC)


def __getattr__(name: str) -> Any:
    """Import a public function or class on first use (PEP 562); ``__version__`` too (reading
    the installed metadata costs a command's start-up ~15 ms)."""
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            value = version("labeler")
        except PackageNotFoundError:  # running from a source tree
            value = "0.0.0"
        globals()[name] = value
        return value
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'labeler' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
