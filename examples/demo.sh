#!/usr/bin/env bash
# The README's `make demo`: start a master with a throwaway home, run a 4-trial random search
# on the digits example, show its trials and the best validation accuracy, stop the master.
# Set SHIPYARD_DEMO_KEEP=1 to keep the home (database, logs, checkpoints) afterwards.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Run from the repo's venv when the script is started directly rather than through make.
if [ -x .venv/bin/shipyard ]; then
    PATH="$PWD/.venv/bin:$PATH"
fi

demo_home=$(mktemp -d -t shipyard-demo-XXXXXX)
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export SHIPYARD_HOME="$demo_home"
export SHIPYARD_MASTER="http://127.0.0.1:$port"

stop_master() {
    shipyard down --home "$demo_home" >/dev/null 2>&1 || true
    if [ "${SHIPYARD_DEMO_KEEP:-0}" = 1 ]; then
        echo "Kept the demo's home: $demo_home"
    else
        rm -rf "$demo_home"
    fi
}
# Whatever happens (failure, Ctrl-C), the master is stopped.
trap stop_master EXIT

# It prints the web UI's link, which logs the browser in (once, within 2 minutes).
shipyard up --port "$port" --home "$demo_home"
echo

follow_status=0
shipyard experiment create examples/digits_pytorch/random.yaml examples/digits_pytorch --follow \
    || follow_status=$?

# The home is new, so the only experiment in it is ours.
experiment_id=$(shipyard experiment list --json | python3 -c 'import json, sys; print(max(e["id"] for e in json.load(sys.stdin)))')
echo
shipyard experiment describe "$experiment_id"
echo
shipyard experiment describe "$experiment_id" --json | python3 -c '
import json, sys
best = json.load(sys.stdin)["best_validation"]
print("Best validation accuracy:", "none reported" if best is None else f"{best:.4f}")
'
exit "$follow_status"
