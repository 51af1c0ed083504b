# MRC lab. Every target that needs the environment runs scripts/setup.sh first (idempotent).
PY      := .venv/bin/python
MRCLAB  := .venv/bin/mrclab
PLANES  ?= 2
GROUPS  ?= 2
SPINES  ?= 2
HOSTS   ?= 2
ROUTING ?= srv6
EXP     ?= nic-link-down
RUN     ?= latest
ARGS    ?=

.PHONY: setup venv-ready demo paper test unit integration integration-loaded mutation fabric experiment analyze notebook bench clean distclean

setup:
	@bash scripts/setup.sh

demo: setup
	$(MRCLAB) run experiments/demo.toml --transport all
	$(MRCLAB) analyze latest --brief

# Every shipped sweep in full (hours; resumes where it stopped), then docs/results/paper.md.
# ARGS="--only random-loss" runs one sweep; ARGS=--page-only only rewrites the page.
paper: setup
	$(MRCLAB) paper $(ARGS)

# The transport core runs compiled when `make setup` built it; its own unit tests (marked `core`)
# run a second time on the interpreted modules (the one source both builds come from).
UNIT_TESTS := tests --ignore=tests/integration

test: setup
	$(PY) -m pytest -q -p no:cacheprovider $(UNIT_TESTS)
	MRCLAB_PURE_PYTHON=1 $(PY) -m pytest -q -p no:cacheprovider -m core $(UNIT_TESTS)
	$(PY) -m pytest -q -p no:cacheprovider tests/integration

# unit and integration need root only to build .venv: as root they run setup first; a normal
# user reuses the .venv of one earlier `sudo make setup` (integration tests then skip, saying why).
unit:
	@$(MAKE) -s venv-ready
	$(PY) -m pytest -q -rs -p no:cacheprovider $(UNIT_TESTS)
	MRCLAB_PURE_PYTHON=1 $(PY) -m pytest -q -p no:cacheprovider -m core $(UNIT_TESTS)

integration:
	@$(MAKE) -s venv-ready
	$(PY) -m pytest -q -rs -p no:cacheprovider tests/integration

# The integration suite RUNS times in a row (default 3) while a spinning process keeps one core busy.
RUNS    ?= 3
integration-loaded:
	@$(MAKE) -s venv-ready
	$(PY) scripts/integration_under_load.py --runs $(RUNS) $(ARGS)

venv-ready:
	@if [ "$$(id -u)" -eq 0 ]; then bash scripts/setup.sh; \
	elif [ ! -x $(PY) ]; then \
	  echo "make: no .venv yet; run 'sudo make setup' once, then 'make unit' works as any user" >&2; \
	  exit 1; \
	elif ! ls .venv/.installed-$$(sha1sum pyproject.toml | cut -c1-12) >/dev/null 2>&1; then \
	  echo "make: pyproject.toml changed since the last setup; run 'sudo make setup' to update .venv" >&2; \
	fi

# Mutation score of the pure core (mutmut, niced, 2 workers; hours on a loaded 2-core machine): per-module
# table, last line `mutation score: N%`. Reviewed equivalent mutants: tests/mutation_equivalents.toml.
# ARGS=--changed (or "--changed REF"): only the functions changed against main (REF), in minutes.
# docs/testing.md says how the sampled estimate (ARGS="--sample N") is drawn.
mutation: setup
	$(PY) scripts/mutation.py $(ARGS)

fabric: setup
	$(MRCLAB) fabric --planes $(PLANES) --groups $(GROUPS) --spines $(SPINES) --hosts $(HOSTS) --routing $(ROUTING) $(ARGS)

experiment: setup
	$(MRCLAB) run experiments/$(EXP).toml $(ARGS)

analyze: setup
	$(MRCLAB) analyze $(RUN)

notebook: setup
	$(MRCLAB) notebook $(RUN)

bench: setup
	$(MRCLAB) bench all

# clean: the fabric's leftovers only (bridges, namespaces, nft tables; root). distclean: also
# everything a build made (.venv, the compiled core in build/), after which `make setup` rebuilds.
clean:
	@if [ -x $(MRCLAB) ]; then $(MRCLAB) clean; fi

distclean: clean
	rm -rf .venv build .pytest_cache
