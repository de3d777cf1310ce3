"""ir_datasets without a network: a dataset that must be downloaded first fails with exit 2 and
one sentence saying so (not "unexpected error" and a raw tuple), and a dataset whose files are
bad (a grade that is not a number, a missing file) fails with exit 2 naming the dataset.

No test reaches the internet: downloads go to a loopback port that nothing listens on (a
connection refused at once, not a timeout), with ``IR_DATASETS_HOME`` in a temporary folder.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from labeler.cli import main

RUN = Path(__file__).parent / "data" / "dl19_irds" / "runs" / "bm25tuned_p.run"
OFFLINE = ("could not download ir_datasets '{}' (no network?): download it once or give a "
           "local file")


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_msmarco_dataset_without_a_network_exits_2_with_one_sentence(tmp_path: Path
                                                                        ) -> None:
    pytest.importorskip("ir_datasets")
    proxy = f"http://127.0.0.1:{_closed_port()}"
    env = {k: v for k, v in os.environ.items()
           if k.lower() not in ("no_proxy", "http_proxy", "https_proxy", "all_proxy")}
    env.update(IR_DATASETS_HOME=str(tmp_path / "irds"), IR_DATASETS_DL_TRIES="1",
               HTTP_PROXY=proxy, HTTPS_PROXY=proxy)
    ident = "msmarco-passage/trec-dl-2019/judged"
    done = subprocess.run([sys.executable, "-m", "labeler", "score", "--qrels",
                           f"irds:{ident}", "--run", str(RUN)], capture_output=True,
                          text=True, env=env, timeout=120, check=False)
    assert done.returncode == 2, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last == "labeler: error: " + OFFLINE.format(ident)
    assert "unexpected error" not in done.stderr and "Traceback" not in done.stderr
    assert done.stdout == ""


def _register(ident: str, qrels: object) -> None:
    import ir_datasets
    from ir_datasets.datasets.base import Dataset
    from ir_datasets.formats import TrecQrels

    if ident not in ir_datasets.registry:
        ir_datasets.registry.register(ident, Dataset(TrecQrels(qrels, {0: "no", 1: "yes"})))


def _score(ident: str) -> tuple[int, str]:
    res = CliRunner().invoke(main, ["score", "--qrels", f"irds:{ident}", "--run", str(RUN)])
    return res.exit_code, res.output


def test_a_dataset_whose_download_fails_exits_2(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("ir_datasets")
    from ir_datasets.util import Download, RequestsDownload

    monkeypatch.setenv("IR_DATASETS_DL_TRIES", "1")
    url = f"http://127.0.0.1:{_closed_port()}/qrels.txt"
    for ident, mirrors in (("labeler-test/offline-one", [RequestsDownload(url)]),
                           ("labeler-test/offline-two", [RequestsDownload(url),
                                                         RequestsDownload(url + "?mirror")])):
        _register(ident, Download(mirrors, cache_path=str(tmp_path / ident / "qrels")))
        code, out = _score(ident)
        assert code == 2, out
        assert OFFLINE.format(ident) in out and "unexpected" not in out


def test_a_bad_local_file_names_the_dataset(tmp_path: Path) -> None:
    pytest.importorskip("ir_datasets")
    from ir_datasets.util import LocalDownload

    bad = tmp_path / "bad.qrels"
    bad.write_text("19335 0 8412684 1\n19335 0 1729 two\n")
    _register("labeler-test/bad-grade", LocalDownload(bad))
    code, out = _score("labeler-test/bad-grade")
    assert code == 2, out
    assert "could not read the qrels of ir_datasets 'labeler-test/bad-grade'" in out
    assert "'two'" in out                       # the value that is not a grade
    _register("labeler-test/missing-file", LocalDownload(tmp_path / "gone.qrels"))
    code, out = _score("labeler-test/missing-file")
    assert code == 2, out
    assert "could not read the qrels of ir_datasets 'labeler-test/missing-file'" in out
    assert "gone.qrels" in out
