"""Reading log pages from a cursor, once or following new lines until the end."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from shipyard.common.api import LogLine, LogPage, log_prefix

# A page reader: (after, wait_s) -> LogPage.
PageReader = Callable[[int, float], LogPage]

FOLLOW_WAIT_S = 10.0


def iter_log_lines(
    read_page: PageReader, *, follow: bool = False, after: int = 0
) -> Iterator[LogLine]:
    """Every line after the cursor. Without follow: stop once caught up (a page with no line
    whose cursor stays put; a filtered page may hold none and still move it on). With follow:
    long-poll for new lines until the master says the trial (or experiment) has ended and
    all is read."""
    while True:
        page = read_page(after, FOLLOW_WAIT_S if follow else 0.0)
        yield from page.lines
        moved = page.next_after > after
        after = max(after, page.next_after)
        if page.done or (not follow and not page.lines and not moved):
            return


def format_log_line(line: LogLine, *, show_trial: bool) -> str:
    prefix = f"[trial {line.trial_id}] " if show_trial else ""
    return prefix + log_prefix(line.rank, line.stream) + line.text
