"""A trial for the web UI's tests that fails at once (exit code 3): the cluster page lists
it among the recent failures."""

import sys

print("the test asked this trial to fail", flush=True)
sys.exit(3)
