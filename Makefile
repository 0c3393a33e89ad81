# Shipyard's developer commands. On a fresh machine (Python 3.11, pip, npm; apt for the tests)
# `make demo` and `make test` are all you need. `make demo` installs only what the demo runs
# (the package's demo extra and the web UI's chart library); `make test` runs `setup` first,
# which installs everything the tests use. Both are quick once they have run.

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c

PYTHON ?= python3
VENV := .venv
BIN := $(abspath $(VENV))/bin
SETUP_STAMP := $(VENV)/.setup-done
DEMO_STAMP := $(VENV)/.demo-done
# The web UI's front-end libraries: pinned in web/package-lock.json, installed from the npm
# registry and copied into the package (git-ignored), so the UI works offline.
WEB_VENDOR := src/shipyard/server/web/static/vendor
WEB_VENDOR_STAMP := $(WEB_VENDOR)/.copied
PY_DIRS := src tests bench examples tools
# pytest-xdist workers for `make test`: a test mostly waits for its trials and master, so one
# worker leaves a core idle; a third worker was slower than two on a 2-core machine.
TEST_WORKERS ?= 2

# Everything below (tests that start `shipyard` or `python3` in a subprocess, the demo)
# runs with the venv first on PATH, as if it were activated.
export PATH := $(BIN):$(PATH)
export VIRTUAL_ENV := $(abspath $(VENV))
# Python writes each module's bytecode the first time it is imported, even where the
# environment says not to: otherwise every trial would compile torch anew, or setup would
# compile all 25,000 files of the venv ahead (137 CPU-seconds) when the tests import a
# fraction of them.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: setup _setup-parts _venv demo-setup system-packages web-check test static-checks suite \
	lint demo bench clean

# The venv, once. A Debian without python3-venv gets it from apt: the one apt call that must
# come before pip, and the only one `make demo` can make (never on a Python that has venv).
_venv:
	@if ! "$(BIN)/python" -m pip --version >/dev/null 2>&1; then \
		echo "creating $(VENV)"; \
		rm -rf $(VENV); \
		$(PYTHON) -m venv $(VENV) || { \
			echo "python3 -m venv failed: installing Debian's python3-venv"; \
			$(MAKE) --no-print-directory _apt PACKAGES=python3-venv; \
			rm -rf $(VENV); $(PYTHON) -m venv $(VENV); }; \
	fi

# The venv first, then the pip step, the Debian packages and the web UI's libraries side by
# side: each mostly waits on downloads and disks, and one after the other they took minutes
# of a CI run.
setup:
	@$(MAKE) --no-print-directory _venv
	@$(MAKE) --no-print-directory -j3 _setup-parts
	@# Shipyard's own bytecode ahead of time, for a pytest or trial run outside make where
	@# PYTHONDONTWRITEBYTECODE is set: every trial imports shipyard.core.
	@$(BIN)/python -m compileall -q src >/dev/null

_setup-parts: $(SETUP_STAMP) $(WEB_VENDOR_STAMP) system-packages

# Re-run the pip step only when pyproject.toml, constraints.txt or requirements-test.txt
# changes (or the venv is new): every extra a user can ask for, and what only the tests use.
# constraints.txt pins the torch this installs (pyproject's extra asks only for a range);
# pip finds the CPU wheel through the machine's pip configuration, so nothing here names an
# index. mpi4py comes as a wheel that finds Open MPI when it runs, so the pip step does not
# wait for Debian's packages. Every extra holds the demo's, so the demo's stamp is set too.
# tools/pip_install.py has uv do the install with pip's settings (14-31 s instead of pip's
# 167 s for this set, the same files), and falls back to pip.
$(SETUP_STAMP): pyproject.toml constraints.txt requirements-test.txt tools/pip_install.py
	$(BIN)/python tools/pip_install.py -c constraints.txt -r requirements-test.txt \
		-e '.[server,postgres,s3,torch,optuna,mpi,lightning,huggingface,ray,kubernetes,pandas]'
	touch $@ $(DEMO_STAMP)

# The demo's own pip step: the master and the digits example's torch and scikit-learn (the
# demo extra, torch pinned as above), nothing from Debian. A later `make test` adds the rest
# to the same venv.
$(DEMO_STAMP): pyproject.toml constraints.txt tools/pip_install.py
	$(BIN)/python tools/pip_install.py -c constraints.txt -e '.[demo]'
	touch $@

$(WEB_VENDOR_STAMP): web/package.json web/package-lock.json
	npm ci --prefix web --no-audit --no-fund --silent
	mkdir -p $(WEB_VENDOR)
	cp web/node_modules/uplot/dist/uPlot.iife.min.js web/node_modules/uplot/dist/uPlot.min.css \
		web/node_modules/uplot/LICENSE $(WEB_VENDOR)/
	touch $@

# Debian's packages for the tests' real servers and tools, in one apt call for all that are
# missing (each line: a command that tells the package is there, then the packages):
# - PostgreSQL's server binaries (initdb, pg_ctl) for the throwaway cluster;
# - Open MPI (mpirun; mpicc and headers in case pip builds mpi4py from source) for
#   shipyard.launch.mpi;
# - Slurm's daemons and clients and munge: a one-node cluster on 127.0.0.1
#   (tests/fixtures/slurm.py);
# - Docker's and Podman's engines (the fixtures start them by hand, no systemd), tini and
#   catatonit as the containers' init, and mmdebstrap to build the tests' image from
#   Debian's packages (no registry is used); aardvark-dns, Podman's DNS on a network of its
#   own (a gang's Pods find each other by name there);
# - Chromium's headless shell (its engine without the browser's UI) for the web UI's browser
#   tests and bench/ui_scale.py: Playwright drives it and downloads no browser.
system-packages:
	@missing=""; \
	need() { command -v "$$1" >/dev/null || missing="$$missing $${*:2}"; }; \
	command -v initdb >/dev/null || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 \
		|| missing="$$missing postgresql"; \
	need mpicc openmpi-bin libopenmpi-dev; need mpirun openmpi-bin libopenmpi-dev; \
	need slurmctld slurmctld; need slurmd slurmd; need sbatch slurm-client; need munged munge; \
	need dockerd docker.io; need podman podman; need catatonit catatonit; need tini tini; \
	need mmdebstrap mmdebstrap; \
	[ -x /usr/lib/podman/aardvark-dns ] || missing="$$missing aardvark-dns"; \
	[ -x /usr/bin/chromium-headless-shell ] || missing="$$missing chromium-headless-shell"; \
	missing=$$(tr ' ' '\n' <<<"$$missing" | sort -u | xargs); \
	if [ -n "$$missing" ]; then \
		echo "installing Debian's $$missing"; \
		$(MAKE) --no-print-directory _apt PACKAGES="$$missing"; \
	fi

# apt-get as root (no sudo); a non-root user is told what to run.
_apt:
	@if [ "$$(id -u)" != 0 ]; then \
		echo "need root to run: apt-get install -y $(PACKAGES)" >&2; exit 1; \
	fi
	DEBIAN_FRONTEND=noninteractive apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq $(PACKAGES) \
		>/dev/null

# The web UI's modules: tsc on their JSDoc types, eslint, and node's tests of their pure
# functions (web/package.json's scripts; npm ci ran in setup).
web-check: $(WEB_VENDOR_STAMP)
	npm run --prefix web --silent typecheck
	npm run --prefix web --silent lint
	npm run --prefix web --silent test

# The static checks run beside the suite: they need one core for a few minutes, and the
# suite's workers leave part of the second idle while trials start and masters answer. The
# checks' output comes as one block when they end; either failing fails `make test`.
# The last line says how long setup and the rest took: CI shows only the output's tail.
test:
	@began=$$SECONDS; $(MAKE) --no-print-directory setup; set_up=$$SECONDS; \
	checks_log=$$(mktemp); \
	{ status=0; $(MAKE) --no-print-directory static-checks >"$$checks_log" 2>&1 || status=$$?; \
	  printf '\n'; cat "$$checks_log"; rm -f "$$checks_log"; exit $$status; } & checks=$$!; \
	suite=0; $(MAKE) --no-print-directory suite || suite=$$?; \
	checked=0; wait $$checks || checked=$$?; \
	if [ $$checked != 0 ]; then echo "make test: the static checks failed (see above)" >&2; fi; \
	echo "make test: setup $$((set_up - began)) s, tests and checks $$((SECONDS - set_up)) s"; \
	exit $$(( suite != 0 || checked != 0 ))

static-checks: setup
	ruff check $(PY_DIRS)
	lint-imports
	mypy
	$(MAKE) --no-print-directory web-check

suite: setup
	@# A marker whose engine or extra is missing fails, saying why (tests/fixtures/require.py).
	@# On TEST_WORKERS processes; a test's group (its engine, else its module) stays on one
	@# worker, so each engine starts once (tests/fixtures/parallel.py).
	SHIPYARD_REQUIRE_ENGINES=1 pytest -q -p no:cacheprovider --durations=20 \
		-n $(TEST_WORKERS) --dist loadgroup

lint: setup
	ruff check $(PY_DIRS)
	ruff format --check $(PY_DIRS)
	lint-imports
	mypy
	npm run --prefix web --silent typecheck
	npm run --prefix web --silent lint

# The web UI is part of the demo (`shipyard up` prints its link): its chart library too.
demo-setup:
	@$(MAKE) --no-print-directory _venv
	@$(MAKE) --no-print-directory -j2 $(DEMO_STAMP) $(WEB_VENDOR_STAMP)

demo: demo-setup
	examples/demo.sh

# The Ray Tune comparison needs ray; without it the throughput bench reports the peer absent.
bench: setup
	python bench/launch_latency.py
	python bench/trial_throughput.py
	python bench/step_overhead.py
	python bench/hpo_quality.py
	python bench/searcher_decision_time.py
	python bench/stop_latency.py
	python bench/hpo_throughput.py
	python bench/preempt_latency.py
	python bench/recovery.py
	python bench/ddp_overhead.py
	python bench/trainer_overhead.py
	python bench/pytorch_trial_overhead.py
	python bench/engine_overhead.py
	python bench/ui_scale.py
	python bench/ui_scale.py --database postgres --experiments 100
	python bench/auth_overhead.py
	python bench/checkpoint_upload.py
	python bench/share_nothing_start.py
	python bench/environment_capture.py
	python bench/code_capture.py
	python bench/metric_ingest.py
	python bench/metric_ingest.py --database postgres
	python bench/tensorboard_scalars.py
	@# Determined's configs come from a checkout of its repository, which nothing here may
	@# download: `make bench DETERMINED_REPO=/path/to/determined` (a work tree or a bare clone).
	@if [ -n "$(DETERMINED_REPO)" ]; then python bench/determined_configs.py "$(DETERMINED_REPO)"; \
	else echo "bench/determined_configs.py skipped: set DETERMINED_REPO to a Determined checkout"; fi

clean:
	rm -rf $(SETUP_STAMP) $(DEMO_STAMP) $(WEB_VENDOR) web/node_modules .mypy_cache .ruff_cache .import_linter_cache
