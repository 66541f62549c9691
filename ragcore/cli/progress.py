"""tqdm progress bars on stderr for the ingest callback `(stage, done, total)`: one bar per stage."""

from __future__ import annotations

import sys
from types import TracebackType

from tqdm import tqdm

from ragcore.jobs import JobKind


class StageBars:
    """The progress callback for a command run in the foreground; a context manager that
    closes the last bar. Disabled (no output at all) when `enabled` is false."""

    def __init__(self, kind: JobKind, *, enabled: bool) -> None:
        self.kind = kind
        self.enabled = enabled
        self._stage: str | None = None
        self._bar: tqdm | None = None

    def __call__(self, stage: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        if stage != self._stage:
            self._close()
            info = self.kind.stages.get(stage)
            self._bar = tqdm(total=total, desc=info.label if info else stage, unit=(info.unit if info else "") or "it",
                             file=sys.stderr, leave=True, dynamic_ncols=True)
            self._stage = stage
        assert self._bar is not None
        if self._bar.total != total:
            self._bar.total = total
        self._bar.n = done
        self._bar.refresh()

    def _close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> StageBars:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._close()
