"""A test trial that prints a secret in the forms a log masker must catch, each with a
marker line beside it (tests/e2e/test_secrets.py), and says where it found the secret.

hparams: env (the variable holding the secret), file (optional: its file, relative to
$SHIPYARD_SECRETS_DIR), gate (optional: wait for this file, then end run 1 with code 3 so
the trial restarts), fail (optional: end with an exception that quotes the secret).
"""

import base64
import json
import os
import sys
import time
from pathlib import Path
from urllib.parse import quote, quote_plus

import shipyard.core

with shipyard.core.init() as ctx:
    hp = ctx.info.hparams
    value = os.environ.get(hp["env"], "")
    print(f"run {ctx.info.run_id}: the secret has {len(value)} characters", flush=True)
    if hp.get("file"):
        from_file = (Path(os.environ["SHIPYARD_SECRETS_DIR"]) / hp["file"]).read_text()
        print(f"the secret file matches the variable: {from_file == value}", flush=True)
        print(f"marker-file {from_file}", flush=True)
    print(f"marker-raw {value}", flush=True)
    print(f"marker-b64 {base64.b64encode(value.encode()).decode()}", flush=True)
    print(f"marker-b64url x{base64.urlsafe_b64encode(b'ab' + value.encode()).decode()}")
    print(f"marker-url {quote(value, safe='')} {quote_plus(value)}", flush=True)
    print(f"marker-json {json.dumps({'token': value})}", flush=True)
    print(f"marker-split {value[:5]}", end="", flush=True)
    time.sleep(0.3)
    print(value[5:], flush=True)
    print("marker-end", flush=True)
    ctx.train.report_validation_metrics(1, {"val_loss": 0.5})
    if hp.get("fail"):
        raise RuntimeError(f"401 Unauthorized for url: https://api.example/v1?key={value}")
    if hp.get("gate"):
        gate = Path(hp["gate"])
        while not gate.exists():
            time.sleep(0.02)
        if ctx.info.run_id == 1:
            print("run 1 gives up after the gate", flush=True)
            sys.exit(3)
