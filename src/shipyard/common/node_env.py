"""The variables by which the master tells shipyard.launch.entry, on a node that does not
share its disk, what to fetch and where to keep it (docs/share-nothing.md)."""

CONTEXT_ENV = "SHIPYARD_CONTEXT_ID"  # the code snapshot to fetch ("" for none)
SHIP_LOGS_ENV = "SHIPYARD_SHIP_LOGS"  # "1": send the output to the master
CACHE_ENV = "SHIPYARD_CACHE_DIR"  # where fetched code is kept on the node
CACHE_KEEP_DAYS_ENV = "SHIPYARD_CACHE_KEEP_DAYS"  # what no run used this long is removed
CA_PEM_ENV = "SHIPYARD_CA_CERT_PEM"  # the master's certificate itself, not a path to it
# The run's secret files, {path relative to the secrets directory: content} as JSON: the
# entry writes them on the node (a private directory, removed when the run ends).
SECRET_FILES_ENV = "SHIPYARD_SECRET_FILES"
