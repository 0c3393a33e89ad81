"""Model URIs: `shipyard://models/NAME@ALIAS` and `shipyard://models/NAME/VERSION`, each
optionally with `?workspace=W` (needed only when the name is in several workspaces one
sees); and the short forms the CLI takes, `NAME`, `NAME@ALIAS` and `NAME/VERSION`."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qs, quote

from shipyard.common.api_models import MAX_VERSION, alias_problem, model_name_problem
from shipyard.common.errors import InvalidRequest

SCHEME = "shipyard://models/"
FORMS = (
    "shipyard://models/NAME@ALIAS or shipyard://models/NAME/VERSION "
    "(optionally followed by ?workspace=W)"
)


@dataclass(frozen=True)
class ModelRef:
    """A model and which of its versions: a number, an alias, or None (the latest)."""

    name: str
    ref: str | None = None
    workspace: str | None = None

    @property
    def version(self) -> int | None:
        return int(self.ref) if self.ref is not None and self.ref.isdigit() else None

    @property
    def alias(self) -> str | None:
        return self.ref if self.ref is not None and not self.ref.isdigit() else None

    def uri(self) -> str:
        """The URI that names the same version (NAME alone when no version is named)."""
        where = f"?workspace={quote(self.workspace, safe='')}" if self.workspace else ""
        if self.ref is None:
            return f"{SCHEME}{self.name}{where}"
        separator = "/" if self.version is not None else "@"
        return f"{SCHEME}{self.name}{separator}{self.ref}{where}"


def parse_model_uri(uri: str) -> ModelRef:
    """A `shipyard://models/...` URI of one of the two forms; InvalidRequest otherwise."""
    if not uri.startswith(SCHEME):
        raise _bad(uri, "it does not start with shipyard://models/")
    rest, _, query = uri.removeprefix(SCHEME).partition("?")
    ref = _versioned(rest, uri)
    return ModelRef(ref.name, ref.ref, _workspace(uri, query))


def parse_model_ref(text: str, workspace: str | None = None) -> ModelRef:
    """A model URI, or the CLI's short forms NAME (its latest version), NAME@ALIAS and
    NAME/VERSION; `workspace` for a short form (a URI says its own)."""
    if text.startswith("shipyard:"):
        ref = parse_model_uri(text)
        if workspace is not None and ref.workspace not in (None, workspace):
            raise InvalidRequest(
                f"the URI says workspace {ref.workspace!r} and the option {workspace!r}"
            )
        return ModelRef(ref.name, ref.ref, ref.workspace or workspace)
    if "@" in text or "/" in text:
        ref = _versioned(text, text)
        return ModelRef(ref.name, ref.ref, workspace)
    _check_name(text, text)
    return ModelRef(text, None, workspace)


def _versioned(rest: str, shown: str) -> ModelRef:
    """NAME@ALIAS or NAME/VERSION."""
    if "@" in rest:
        name, _, alias = rest.partition("@")
        _check_name(shown, name)
        problem = alias_problem(alias)
        if problem:
            raise _bad(shown, problem)
        return ModelRef(name, alias)
    name, slash, version = rest.partition("/")
    _check_name(shown, name)
    if not slash:
        raise _bad(shown, "it names no version: add @ALIAS or /VERSION")
    if not (version.isascii() and version.isdigit() and 1 <= int(version) <= MAX_VERSION):
        raise _bad(shown, f"the version must be a number from 1, got {version[:20]!r}")
    return ModelRef(name, str(int(version)))


def _workspace(uri: str, query: str) -> str | None:
    if not query:
        return None
    try:
        fields = parse_qs(query, keep_blank_values=True, strict_parsing=True)
    except ValueError:
        raise _bad(uri, f"its query {query!r} is not a query string") from None
    unknown = sorted(set(fields) - {"workspace"})
    if unknown or len(fields.get("workspace", [])) != 1 or not fields["workspace"][0]:
        raise _bad(uri, "its query may hold one thing: workspace=W")
    return fields["workspace"][0]


def _check_name(uri: str, name: str) -> None:
    problem = model_name_problem(name)
    if problem:
        raise _bad(uri, problem)


def _bad(shown: str, why: str) -> InvalidRequest:
    return InvalidRequest(f"{shown[:300]!r} names no model version ({why}): use {FORMS}")
