"""Progress of a command run in the foreground, for the ingest callback `(stage, done, total)`:
tqdm bars on a terminal (one per stage), one line every PROGRESS_LINE_SECONDS otherwise.

A log or a pipe cannot redraw a bar (tqdm would write a line per refresh, or nothing until the
end), and Law 5510 takes minutes: an operator tailing the log of `python -m ragcore ingest` must
see that it works and how far it is, without a line per embedding batch.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from types import TracebackType
from typing import TextIO

from tqdm import tqdm

from ragcore.core import format_integer, format_percent
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


class ProgressLines:
    """The progress callback where no bar can be drawn: a line such as
    "[40 sn] Parçalar aramaya hazırlanıyor: 320/999 parça (%32)" at most once per `interval`
    seconds (the first report included), and the last state when closed if it was not printed."""

    def __init__(self, kind: JobKind, *, interval: float, stream: TextIO | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.kind = kind
        self.interval = interval
        self.stream = stream
        self.clock = clock
        self._started = clock()
        self._printed_at: float | None = None
        self._pending: tuple[str, int, int] | None = None

    def __call__(self, stage: str, done: int, total: int) -> None:
        now = self.clock()
        self._pending = (stage, done, total)
        if self._printed_at is None or now - self._printed_at >= self.interval:
            self._print(now)

    def line(self, stage: str, done: int, total: int, elapsed: float) -> str:
        info = self.kind.stages.get(stage)
        label = info.label if info else stage
        unit = f" {info.unit}" if info and info.unit else ""
        share = f" ({format_percent(done / total, 0)})" if total else ""
        return (f"[{format_integer(elapsed)} sn] {label}: {format_integer(done)}/"
                f"{format_integer(total)}{unit}{share}")

    def _print(self, now: float) -> None:
        assert self._pending is not None
        print(self.line(*self._pending, now - self._started), file=self.stream or sys.stderr, flush=True)
        self._printed_at = now
        self._pending = None

    def __enter__(self) -> ProgressLines:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._pending is not None and exc_type is None:
            self._print(self.clock())


def foreground_progress(kind: JobKind, settings_interval: float, *, quiet: bool) -> StageBars | ProgressLines:
    """Bars when stderr is a terminal, lines every `settings_interval` seconds when it is not
    (a log, a pipe); nothing at all when `quiet` (--json on a terminal: the bars would mix with it)."""
    if sys.stderr.isatty():
        return StageBars(kind, enabled=not quiet)
    return ProgressLines(kind, interval=settings_interval)
