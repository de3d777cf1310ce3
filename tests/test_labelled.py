"""Which queries count as human-labelled (whole queries only), and several --human files read
as one: the library functions and every command that reads human labels for PPI or a plan."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from labeler import io
from labeler.cli import main
from labeler.errors import InputError
from labeler.reconciliation.labelled import combine_human, labelled_queries, query_coverage

DATA = Path(__file__).parent / "data" / "dl19"
RUNS = sorted((DATA / "runs").glob("*.run"))


def frame(rows: list[tuple[str, str, int]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["query_id", "chunk_id", "grade"])


def test_a_query_counts_only_when_every_llm_pair_has_a_human_label() -> None:
    llm = frame([("q1", "a", 1), ("q1", "b", 0), ("q2", "c", 2), ("q2", "d", 1), ("q3", "e", 0)])
    whole = frame([("q1", "a", 1), ("q1", "b", 1), ("q1", "zz", 3)])  # extra pairs are fine
    assert labelled_queries(whole, llm) == frozenset({"q1"})
    part = frame([*whole.itertuples(index=False), ("q2", "c", 2)])
    cov = query_coverage(part, llm)
    assert cov.whole == frozenset({"q1"}) and dict(cov.partial) == {"q2": (1, 2)}
    with pytest.raises(InputError) as err:
        labelled_queries(part, llm, what="`labeler plan`")
    msg = str(err.value)
    assert "1 query is only partly labelled" in msg and "'q2': 1 of its 2" in msg
    assert "`labeler sample --unit query` draws whole queries" in msg
    assert "`labeler plan`" in msg


def test_several_human_files_are_read_together_and_a_conflict_names_both() -> None:
    a = frame([("q1", "a", 1), ("q1", "b", 0)]).assign()
    b = frame([("q1", "b", 0), ("q2", "c", 3)])
    both = combine_human({"one.csv": a, "two.csv": b})
    assert sorted(map(tuple, both[["query_id", "chunk_id", "grade"]].to_numpy().tolist())) == [
        ("q1", "a", 1), ("q1", "b", 0), ("q2", "c", 3)]
    with pytest.raises(InputError, match=r"'q1', chunk 'b' has grade 0 in one.csv and 2 in "
                                         r"two.csv"):
        combine_human({"one.csv": a, "two.csv": frame([("q1", "b", 2)])})


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """NIST labels of 7 whole queries split into two sheets; LLM labels of every pair."""
    tmp = tmp_path_factory.mktemp("labelled")
    nist = io.read_qrels(DATA / "qrels-pass.qrels")
    rng = np.random.default_rng(1)
    g = nist["grade"].to_numpy(float) + 0.3 + rng.normal(0, 0.4, len(nist))
    io.write_qrels(nist.assign(grade=np.clip(np.rint(g), 0, 3).astype(int)), tmp / "llm.qrels")
    queries = sorted(nist["query_id"].unique())
    io.write_qrels(nist.loc[nist["query_id"].isin(queries[:4])], tmp / "one.qrels")
    io.write_qrels(nist.loc[nist["query_id"].isin(queries[4:7])], tmp / "two.qrels")
    io.write_qrels(nist.loc[nist["query_id"].isin(queries[:7])], tmp / "seven.qrels")
    clash = nist.loc[nist["query_id"] == queries[0]].head(1)
    io.write_qrels(clash.assign(grade=(clash["grade"] + 1) % 4), tmp / "clash.qrels")
    # a sample of pairs, as `labeler sample` (--unit pair) draws: some pairs of every query
    io.write_qrels(nist.groupby("query_id").head(5), tmp / "pairs.qrels")
    return {"dir": tmp, "llm": tmp / "llm.qrels", "one": tmp / "one.qrels",
            "two": tmp / "two.qrels", "seven": tmp / "seven.qrels", "clash": tmp / "clash.qrels",
            "pairs": tmp / "pairs.qrels"}


def invoke(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(main, list(args))
    return r.exit_code, r.output


RUN_ARGS = [a for p in RUNS for a in ("--run", str(p))]


@pytest.mark.parametrize("command", [["compare", "--ppi"], ["plan", "--half-width", "0.05"]])
def test_a_sample_of_pairs_is_refused_with_the_reason(files: dict[str, Path],
                                                       command: list[str]) -> None:
    code, out = invoke(*command, "--human", str(files["pairs"]), "--llm", str(files["llm"]),
                       *RUN_ARGS)
    assert code == 2, out
    assert "10 queries are only partly labelled" in out
    assert "`labeler sample --unit query` draws whole queries" in out


def test_human_given_twice_is_read_together(files: dict[str, Path]) -> None:
    two = ["--human", str(files["one"]), "--human", str(files["two"])]
    code, out = invoke("plan", *two, "--llm", str(files["llm"]), *RUN_ARGS,
                       "--half-width", "0.05", "--json")
    assert code == 0, out
    code, ref = invoke("plan", "--human", str(files["seven"]), "--llm", str(files["llm"]),
                       *RUN_ARGS, "--half-width", "0.05", "--json")
    assert json.loads(out)["now"] == 7 and json.loads(out) == json.loads(ref)
    import labeler  # the Python way: a list of label sets

    p = labeler.plan(human=[files["one"], files["two"]], llm=files["llm"], runs=RUNS,
                     half_width=0.05)
    assert p.to_dict()["per_run"] == json.loads(ref)["per_run"]
    code, out = invoke("compare", "--ppi", *two, "--llm", str(files["llm"]), *RUN_ARGS,
                       "--json")
    assert code == 0, out
    runs = json.loads(out)["runs"]
    assert all(r["ppi"]["n_labelled"] == 7 for r in runs.values())


@pytest.mark.parametrize("command", [["compare"], ["plan", "--half-width", "0.05"],
                                     ["judges"], ["reconcile", "--out", "OUT"]])
def test_two_grades_of_one_pair_in_two_files_is_an_error_naming_both(
        files: dict[str, Path], command: list[str]) -> None:
    command = [str(files["dir"] / "merged.jsonl") if c == "OUT" else c for c in command]
    runs = RUN_ARGS if command[0] in ("compare", "plan") else []
    code, out = invoke(*command, "--human", str(files["one"]), "--human", str(files["clash"]),
                       "--llm", str(files["llm"]), *runs)
    assert code == 2, out
    assert str(files["one"].name) in out and str(files["clash"].name) in out
    assert "the human label files disagree" in out
