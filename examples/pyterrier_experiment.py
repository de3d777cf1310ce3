"""Score two PyTerrier pipelines on LLM qrels next to the human qrels, with pt.Experiment.

Runs offline on the TREC DL 2019 sample that ships with labeler: the pipelines are two
submitted runs (BM25 and a BERT re-ranker) replayed as PyTerrier transformers, the LLM
judge labels what they retrieve in their top 10 (no Java needed anywhere).

    pip install 'labeler[pyterrier]'
    python examples/pyterrier_experiment.py                      # the offline lexical judge
    python examples/pyterrier_experiment.py gpt-4o-mini          # a real model (OPENAI_API_KEY)
"""

from __future__ import annotations

import sys

import pandas as pd
import pyterrier as pt
from pyterrier.measures import AP, P, nDCG

from labeler import io
from labeler.demo import copy_sample
from labeler.pyterrier import LLMJudge


def main(model: str = "lexical") -> pd.DataFrame:
    """The two pipelines' nDCG@10, AP and P(rel=2)@10 on the human and on the LLM qrels."""
    data = copy_sample("labeler-sample")
    topics = io.read_queries(data / "queries.tsv").rename(columns={"query_id": "qid"})
    docs = io.read_corpus(data / "corpus.jsonl").rename(columns={"chunk_id": "docno",
                                                                 "chunk": "text"})
    human = io.to_pyterrier(io.read_qrels(data / "human.qrels"))          # qid, docno, label

    def replay(name: str) -> pt.Transformer:
        return pt.Transformer.from_df(io.to_pyterrier(io.read_run(data / "runs" /
                                                                  f"{name}.run")))

    pipelines = {"BM25": replay("bm25tuned_p"), "BERT": replay("p_exp_bert")}
    add_text = pt.apply.generic(lambda res: res.merge(docs, on="docno"))
    judge = LLMJudge(model=model)

    # the LLM judges every pipeline's top 10 (pairs seen twice are judged once: the cache)
    judged = pd.concat([(p % 10 >> add_text >> judge)(topics) for p in pipelines.values()])
    ok = judged[judged["label_status"] == "ok"].drop_duplicates(["qid", "docno"])
    llm = ok[["qid", "docno", "label"]].astype({"label": "int64"})

    measures = [nDCG @ 10, AP(rel=2), P(rel=2) @ 10]
    names, systems = list(pipelines), list(pipelines.values())
    return pd.concat({
        "human": pt.Experiment(systems, topics, human, measures, names=names),
        "LLM": pt.Experiment(systems, topics, llm, measures, names=names),
    })


if __name__ == "__main__":
    print(main(*sys.argv[1:2]).to_string())
