"""The local process pool of `sfcheck survey -j N`: packages go to workers in chunks; each
package's record comes back exactly once and equals the inline run's."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from sfcheck.inputs.limits import Limits
from sfcheck.survey import run
from sfcheck.survey.repo import packages
from sfcheck.survey.work import CONSUMERS, survey_package

from survey_repo import big_repo


@given(st.integers(1, 5000), st.integers(1, 16))
def test_chunks_cover_every_task_and_shrink_at_the_end(n: int, jobs: int) -> None:
    sizes = []
    left = n
    while left:
        size = run.chunk_size(left, jobs)
        assert 1 <= size <= min(run._CHUNK, left)
        # Near the end every worker can still take ~4 tasks: no long last chunk.
        assert size == 1 or size * 4 * jobs <= left
        sizes.append(size)
        left -= size
    assert sum(sizes) == n
    if n >= 4 * jobs * run._CHUNK:
        assert sizes[0] == run._CHUNK  # a long run is chunked


def _plain(rec: dict) -> dict:
    return {k: v for k, v in rec.items() if k != "seconds"}


def test_pool_returns_each_package_once_as_inline(tmp_path: Path) -> None:
    repo = big_repo(tmp_path / "repo", 40)  # chunks of 5 at two workers, then smaller
    tasks = [(ref.abspath, ref.digest, Limits(), CONSUMERS) for ref in packages(repo)]
    got = list(run._run_pool(tasks, 2))
    assert sorted(k for k, _ in got) == list(range(len(tasks)))
    inline = [_plain(survey_package(*t)) for t in tasks]
    assert [_plain(rec) for _, rec in sorted(got, key=lambda kr: kr[0])] == inline
