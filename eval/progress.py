"""The lab's command-line progress: one tqdm bar per stage on stderr, for every CLI of the lab
(`python -m eval retrieval|answers|gold`, `python -m eval fit retrieval`)."""

from __future__ import annotations

import sys

from tqdm import tqdm


class TqdmProgress:
    """A progress callback (stage, done, total) drawing one tqdm bar per stage on stderr."""

    def __init__(self, disable: bool = False):
        self.stage: str | None = None
        self.bar: tqdm | None = None
        self.disable = disable

    def __call__(self, stage: str, done: int, total: int) -> None:
        if stage != self.stage:
            self.close()
            self.stage = stage
            self.bar = tqdm(total=total, desc=stage, file=sys.stderr, leave=False, disable=self.disable,
                            dynamic_ncols=True)
        if self.bar is not None:
            if total != self.bar.total:
                self.bar.total = total
            self.bar.n = done
            self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
