"""labeler inside PyTerrier: :class:`LLMJudge`, a ``pt.Transformer`` that labels the rows of
a result frame (``qid, query, docno, text``) and adds ``label`` (the grade, 0-3) and
``label_status`` (``ok``/``failed``), through the same judge, retries and cache as
``labeler.label``. No Java is needed: it never starts Terrier. Extra ``labeler[pyterrier]``.

Usage::

    import pyterrier as pt
    from labeler.pyterrier import LLMJudge

    judge = LLMJudge(model="gpt-4o-mini", concurrency=16)   # or model="lexical" offline
    judged = (bm25 % 10 >> pt.text.get_text(dataset, "text") >> judge)(topics)
    llm_qrels = judged[judged.label_status == "ok"][["qid", "docno", "label"]]
    pt.Experiment([bm25, dense], topics, llm_qrels, ["nDCG@10"])
"""

from __future__ import annotations

from typing import Any

import pandas as pd

try:
    import pyterrier as pt
except ImportError as exc:  # pragma: no cover - exercised where pyterrier is missing
    raise ImportError("labeler.pyterrier needs PyTerrier: pip install 'labeler[pyterrier]'"
                      ) from exc

__all__ = ["PT_COLUMNS", "LLMJudge"]

PT_COLUMNS = ("qid", "query", "docno", "text")
"""The columns :class:`LLMJudge` reads."""


class LLMJudge(pt.Transformer):
    """Label each row's (query, text) with an LLM judge: the frame comes back row for row,
    in its order, with ``label`` (nullable integer grade; missing where the judge failed)
    and ``label_status``; ``label_rationale`` too with ``rationale=True``.

    ``model`` and any judge setting (``base_url``, ``prompt``, ``samples``, ``concurrency``,
    ...) are those of ``labeler.label``; so are ``cache_dir``, ``no_cache`` and ``api_key``
    (handed to the client only). Frames with ``description``/``narrative`` columns feed the
    prompts that use them.

    Usage: ``(bm25 % 10 >> get_text >> LLMJudge(model="lexical"))(topics)``
    """

    def __init__(self, model: str, *, rationale: bool = False, **options: Any) -> None:
        from labeler.settings import JudgeConfig

        super().__init__()
        self.model = model
        self.rationale = rationale
        runtime = {"api_key", "cache_dir", "no_cache", "prices", "max_retries", "progress"}
        unknown = set(options) - set(JudgeConfig.model_fields) - runtime
        if unknown:
            from labeler.errors import ConfigError

            raise ConfigError(f"LLMJudge: unknown option(s) {', '.join(sorted(unknown))}",
                              setting=sorted(unknown)[0])
        self.options = options

    def __repr__(self) -> str:
        return f"LLMJudge(model={self.model!r})"

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        """The input rows with ``label`` and ``label_status`` (and ``label_rationale``)."""
        from labeler.errors import InputError
        from labeler.labelling.stage import label

        missing = [c for c in PT_COLUMNS if c not in inp.columns]
        if missing:
            raise InputError(f"LLMJudge needs the column(s) {', '.join(missing)}; found "
                             f"{', '.join(map(str, inp.columns)) or '(none)'} (add the texts "
                             "first, e.g. pt.text.get_text(dataset, 'text'))",
                             path="<PyTerrier frame>")
        out = inp.copy()
        if out.empty:
            return out.assign(label=pd.Series(dtype="Int64"),
                              label_status=pd.Series(dtype=object))
        extra = [c for c in ("description", "narrative") if c in inp.columns]
        pairs = pd.DataFrame({"query_id": inp["qid"].astype(str).to_numpy(),
                              "query": inp["query"].to_numpy(),
                              "chunk_id": inp["docno"].astype(str).to_numpy(),
                              "chunk": inp["text"].to_numpy(),
                              **{c: inp[c].to_numpy() for c in extra}})
        result = label(pairs, model=self.model, **self.options)
        rec = result.records.set_index(["query_id", "chunk_id"])
        keys = pd.MultiIndex.from_arrays([pairs["query_id"], pairs["chunk_id"]])
        found = rec.reindex(keys)
        out["label"] = found["grade"].astype("Int64").to_numpy()
        out["label_status"] = found["status"].astype(str).to_numpy()
        if self.rationale:
            out["label_rationale"] = found["rationale"].astype(str).to_numpy()
        return out
