"""How a trial's slots become a Ray placement group: how many bundles, each of the same
number of slots. One bundle is one actor running the trial's command: with several, each
is a "node" of the launchers' multi-node contract (launch/_nodes.py), and every node must
have the same number of slots. No Ray here: pure, so it is tested alone."""

from __future__ import annotations

STRATEGIES = ("STRICT_PACK", "PACK", "SPREAD", "STRICT_SPREAD")


class DoesNotFit(ValueError):
    """No placement of this trial can work on this cluster with this strategy."""


def bundle_count(count: int, strategy: str, node_sizes: list[int]) -> int:
    """The number of bundles of ``count // n`` slots each, given the slots of each node.

    - STRICT_PACK: one bundle (one node), as a single-node trial always was.
    - PACK: one bundle when a node can hold the trial, else the fewest equal bundles that
      the nodes can hold between them (Ray packs them on as few nodes as it can).
    - SPREAD, STRICT_SPREAD: one bundle per slot, one rank per actor, spread over nodes.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown placement_strategy {strategy!r}; one of {STRATEGIES}")
    largest, total = max(node_sizes, default=0), sum(node_sizes)
    if count > total:
        raise DoesNotFit(f"a trial of {count} slots asks for more than the cluster has ({total})")
    if count <= 1:
        return 1
    if strategy in ("SPREAD", "STRICT_SPREAD"):
        if strategy == "STRICT_SPREAD" and count > len(node_sizes):
            raise DoesNotFit(
                f"placement_strategy STRICT_SPREAD puts each of the trial's {count} slots on a "
                f"node of its own, and the cluster has {len(node_sizes)} nodes"
            )
        return count
    if count <= largest:
        return 1
    if strategy == "STRICT_PACK":
        raise DoesNotFit(
            f"a trial of {count} slots does not fit on one node of the Ray cluster (its largest "
            f"node has {largest}); with placement_strategy PACK or SPREAD it runs on several"
        )
    # n bundles of count // n fit when the nodes hold n of them between them (1 slot each
    # always fits, count <= total).
    return next(
        n
        for n in range(2, count + 1)
        if count % n == 0 and sum(size // (count // n) for size in node_sizes) >= n
    )
