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

.PHONY: setup demo test unit integration mutation fabric experiment analyze notebook bench clean

setup:
	@bash scripts/setup.sh

demo: setup
	$(MRCLAB) run experiments/demo.toml --transport all
	$(MRCLAB) analyze latest

test: setup
	$(PY) -m pytest -q -p no:cacheprovider tests/unit
	$(PY) -m pytest -q -p no:cacheprovider tests/integration

unit: setup
	$(PY) -m pytest -q -p no:cacheprovider tests/unit

integration: setup
	$(PY) -m pytest -q -p no:cacheprovider tests/integration

# Mutation score of the pure core (mutmut, niced, 2 workers; about an hour here): per-module
# table, last line `mutation score: N%`. Reviewed equivalent mutants: tests/mutation_equivalents.toml.
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

clean:
	@if [ -x $(MRCLAB) ]; then $(MRCLAB) clean; fi
	rm -rf build .pytest_cache
