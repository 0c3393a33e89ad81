"""The `searcher` section: Determined's searchers by name, plus Shipyard's hyperband and
optuna, one module per family. adaptive, adaptive_simple and custom are parsed and
validated, then refused as not supported yet. docs/searchers.md describes every field.

Every rule of the section lives here, with its field path; the search package receives
the validated model and checks nothing again."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Tag

from shipyard.common.config._base import tag_discriminator
from shipyard.common.config.searcher._common import (
    PARSED_ONLY_SEARCHERS,
    RUNNABLE_SEARCHERS,
    SEARCHER_NAMES,
    BaseSearcher,
    name_among,
)
from shipyard.common.config.searcher.halving import (
    AshaSearcher,
    AsyncHalvingSearcher,
    HyperbandSearcher,
)
from shipyard.common.config.searcher.not_supported import (
    AdaptiveSimpleSearcher,
    CustomSearcher,
    LegacyAdaptiveSearcher,
)
from shipyard.common.config.searcher.optuna import (
    MULTI_OBJECTIVE_SAMPLERS,
    OPTUNA_SAMPLERS,
    PRUNER_NAMES,
    OptunaSearcher,
)
from shipyard.common.config.searcher.pbt import PbtSearcher
from shipyard.common.config.searcher.population import (
    GridSearcher,
    RandomSearcher,
    SingleSearcher,
)

SearcherConfig = Annotated[
    Annotated[SingleSearcher, Tag("single")]
    | Annotated[RandomSearcher, Tag("random")]
    | Annotated[GridSearcher, Tag("grid")]
    | Annotated[AshaSearcher, Tag("adaptive_asha")]
    | Annotated[AsyncHalvingSearcher, Tag("async_halving")]
    | Annotated[HyperbandSearcher, Tag("hyperband")]
    | Annotated[PbtSearcher, Tag("pbt")]
    | Annotated[OptunaSearcher, Tag("optuna")]
    | Annotated[LegacyAdaptiveSearcher, Tag("adaptive")]
    | Annotated[AdaptiveSimpleSearcher, Tag("adaptive_simple")]
    | Annotated[CustomSearcher, Tag("custom")],
    tag_discriminator("unknown searcher", "name", SEARCHER_NAMES, name_among(SEARCHER_NAMES)),
]

# The searchers that run: what make_searcher and the server receive.
RunnableSearcher = (
    SingleSearcher
    | RandomSearcher
    | GridSearcher
    | AshaSearcher
    | AsyncHalvingSearcher
    | HyperbandSearcher
    | PbtSearcher
    | OptunaSearcher
)

# Fields to_dict adds that the section itself does not have, by searcher.
_ADDED_FIELDS = {"single": ("max_trials",), "grid": ("max_trials",)}


def _length_form(value: Any, unit: Any) -> Any:
    return {unit: value} if unit is not None and value is not None else value


def section_of(stored: dict) -> dict:
    """The section as written in a config, from its to_dict() form (what the master
    stores): lengths back to {unit: N}, the fields to_dict added removed, and unset (None)
    fields left out, as a config leaves them."""
    if not isinstance(stored, dict):
        return stored
    section = {key: value for key, value in stored.items() if value is not None}
    for field in ("max_length", "length_per_round"):
        unit = section.pop(f"{field}_unit", None)
        section[field] = _length_form(section.get(field), unit)
        if section[field] is None:
            del section[field]
    for field in _ADDED_FIELDS.get(section.get("name"), ()):  # type: ignore[arg-type]
        section.pop(field, None)
    return section


__all__ = [
    "MULTI_OBJECTIVE_SAMPLERS",
    "OPTUNA_SAMPLERS",
    "PARSED_ONLY_SEARCHERS",
    "PRUNER_NAMES",
    "RUNNABLE_SEARCHERS",
    "SEARCHER_NAMES",
    "AdaptiveSimpleSearcher",
    "AshaSearcher",
    "AsyncHalvingSearcher",
    "BaseSearcher",
    "CustomSearcher",
    "GridSearcher",
    "HyperbandSearcher",
    "LegacyAdaptiveSearcher",
    "OptunaSearcher",
    "PbtSearcher",
    "RandomSearcher",
    "RunnableSearcher",
    "SearcherConfig",
    "SingleSearcher",
    "section_of",
]
