"""ctx.searcher: what the hyperparameter searcher wants from this trial.

Adaptive searchers (ASHA, Hyperband, PBT) give a trial a target length — its next rung or
the end of its round — and then either a further target or a stop. A trial can follow
them two ways:

- read `ctx.searcher.target` and check `ctx.searcher.should_stop()` in its own loop, or
- iterate `ctx.searcher.operations()`: each operation says how far to train; the trial
  trains to `op.length`, reports validation metrics (with the time_metric, if the config
  names one) and checkpoints. The iterator then waits for the searcher's answer; if none
  comes within a few seconds (a synchronous searcher waits for other trials), it ends, the
  trial exits, and the master launches it again from its checkpoint when the answer comes,
  so a waiting trial holds no slot.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from shipyard.common.errors import InvalidRequest
from shipyard.core._env import env_int, env_str
from shipyard.core._retry import request_with_retry

if TYPE_CHECKING:
    from shipyard.core._http import JsonHttp
    from shipyard.core._signals import SignalPoller  # imports http.client: master mode only
    from shipyard.core.train import TrainContext

# How long operations() waits for the searcher's next target before the trial exits to
# wait without its slot. Decisions of asynchronous searchers arrive in milliseconds.
DEFAULT_WAIT_S = 5.0


@dataclass(frozen=True)
class SearcherOperation:
    length: int
    """Train until the searcher's time (steps, or the time_metric) reaches this."""


class SearcherContext(Protocol):
    max_length: int | None
    """How long the searcher lets the trial train at most (its time unit), or None."""
    metric: str | None
    """The validation metric the searcher decides on, or None."""
    time_metric: str | None
    """The validation metric that tells the searcher how far the trial is (e.g. "batches"),
    or None: then it is steps_completed."""

    @property
    def target(self) -> int | None:
        """The length the searcher lets the trial train to now (its next rung or the end
        of its round), or max_length when the searcher sets no targets."""
        ...

    def should_stop(self) -> bool:
        """True when the searcher has no more use for this trial; cheap to call every step."""
        ...

    def operations(
        self, *, default_length: int | None = None, wait_s: float = DEFAULT_WAIT_S
    ) -> Iterator[SearcherOperation]:
        """The lengths to train to, one after another (see the module docstring).
        default_length: the one operation's length when no searcher sets any (local mode,
        or a search without max_length)."""
        ...


def _require_length(length: int | None) -> int:
    if length is None:
        raise InvalidRequest(
            "ctx.searcher.operations() needs a length: set searcher.max_length, or "
            "searcher.time_metric with max_time, in the experiment config, or pass "
            "default_length"
        )
    return length


class LocalSearcher:
    """No master: one operation to the full length; the searcher never stops the trial."""

    def __init__(self) -> None:
        self.max_length = env_int("SHIPYARD_SEARCHER_MAX_LENGTH")
        self.metric = env_str("SHIPYARD_SEARCHER_METRIC")
        self.time_metric = env_str("SHIPYARD_SEARCHER_TIME_METRIC")

    @property
    def target(self) -> int | None:
        return self.max_length

    def should_stop(self) -> bool:
        return False

    def operations(
        self, *, default_length: int | None = None, wait_s: float = DEFAULT_WAIT_S
    ) -> Iterator[SearcherOperation]:
        yield SearcherOperation(_require_length(self.max_length or default_length))


class MasterSearcher:
    def __init__(
        self, signals: SignalPoller, http: JsonHttp, trial_id: int, run_id: int, train: TrainContext
    ) -> None:
        self._signals = signals
        self._http = http
        self._wait_path = f"/api/v1/trials/{trial_id}/searcher/wait"
        self._run_id = run_id
        self._train = train
        self.max_length = env_int("SHIPYARD_SEARCHER_MAX_LENGTH")
        self.metric = env_str("SHIPYARD_SEARCHER_METRIC")
        self.time_metric = env_str("SHIPYARD_SEARCHER_TIME_METRIC")

    @property
    def target(self) -> int | None:
        self._signals.ensure_started()
        target = self._signals.target
        return self.max_length if target is None else target

    def should_stop(self) -> bool:
        self._signals.ensure_started()
        return self._signals.stop

    def operations(
        self, *, default_length: int | None = None, wait_s: float = DEFAULT_WAIT_S
    ) -> Iterator[SearcherOperation]:
        length = _require_length(self.target or default_length)
        while True:
            yield SearcherOperation(length)
            no_targets = self._signals.target is None  # the searcher sets no targets
            done = no_targets or (self.max_length is not None and length >= self.max_length)
            if done or self.should_stop():
                return
            next_length = self._next_target(length, wait_s)
            if next_length is None:
                return
            length = next_length

    def _next_target(self, done: int, wait_s: float) -> int | None:
        """The searcher's next target after `done`, or None: stop, or wait without a slot."""
        self._train.flush()  # the searcher decides on the validation just reported

        def answered() -> bool:
            target = self._signals.target
            return self._signals.stop or (target is not None and target > done)

        if not self._signals.wait_for(answered, wait_s):
            # Idempotent on the master, so safe to resend while it restarts.
            answer = request_with_retry(
                self._http, "POST", self._wait_path, {"run_id": self._run_id}
            )
            self._signals.update(answer)
            if answer.get("wait"):
                return None  # exit now; the master relaunches the trial at its next target
        if self._signals.stop:
            return None
        target = self._signals.target
        if target is None or target <= done:
            # The master has no validation at `done`: it will never answer this operation.
            raise InvalidRequest(
                f"the searcher has no validation at the end of this operation ({done}): "
                "report validation metrics (with the searcher's time_metric, if the config "
                "names one) when the trial reaches op.length"
            )
        return target
