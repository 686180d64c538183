# Mirrorline: everything a newcomer needs is `make demo` and `make test`.
# Both set up what is missing first (virtualenv, Python packages, JVM artifacts,
# Java 17+, Chromium) and are idempotent: a second run downloads nothing.

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
JVM_LIB := $(CURDIR)/.cache/jvm
# The checkout's jar cache (instead of ~/.cache/mirrorline/jvm) for everything make runs.
export MIRRORLINE_JVM_LIB := $(JVM_LIB)
PY_STAMP := $(VENV)/.installed
BENCH_STAMP := $(VENV)/.installed-bench
JVM_STAMP := $(JVM_LIB)/.resolved
JVM_INPUTS := jvm/pom.xml $(wildcard jvm/*/pom.xml) jvm/settings.xml $(shell find jvm/writer/src -type f) src/mirrorline/jar_fetch.py
PYTEST_ARGS ?=
# The suite runs in this many processes (pytest-xdist), whole test modules each; the
# slowest modules share one of them (tests/conftest.py); 0 runs it in one process.
PYTEST_WORKERS ?= 2
# Where the suite's stacks go if pytest dies of a signal (tests/support/fatal_report.py).
FATAL_DIR := $(CURDIR)/.cache/pytest-fatal

.PHONY: help setup jdk chromium python jvm demo test bench chaos soak failover-drill screenshot lint clean

help:
	@echo "make demo   set up everything, start local Kafka clusters and show live traffic"
	@echo "make test   set up everything and run the whole test suite"
	@echo "make bench  set up everything and compare Mirrorline, MirrorMaker 2 and a copy loop (about 45 min here)"
	@echo "make chaos  set up everything and replicate between 3-node clusters through restarts, kills and an outage (15+ min)"
	@echo "make soak   set up everything and run the hour soak (65+ min)"
	@echo "make failover-drill  fail consumer groups over with Mirrorline and with MirrorMaker 2 (3-5 min)"
	@echo "make screenshot  run the demo and save the web UI's picture as docs/ui.png (4 min)"
	@echo "make clean  stop local clusters and remove the virtualenv and caches"

setup: jdk chromium python jvm

jdk:
	@scripts/ensure-jdk.sh

# The web UI's browser test drives Debian's Chromium.
chromium:
	@scripts/ensure-chromium.sh

python: $(PY_STAMP)

$(PY_STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $@

# `setup` is idempotent (it fetches and builds only what is missing, such as the
# driver's class archive after a Java upgrade), so it runs every time.
jvm: $(JVM_STAMP)
	@$(BIN)/mirrorline setup --java-plugins --wan-link

# The connector must match PySpark exactly, so the check needs the virtualenv.
$(JVM_STAMP): $(JVM_INPUTS) $(PY_STAMP) | jdk
	@want=$$(sed -nE 's:.*<spark.version>(.*)</spark.version>.*:\1:p' jvm/pom.xml); \
	 have=$$($(BIN)/python -c 'import pyspark; print(pyspark.__version__)'); \
	 if [ "$$want" != "$$have" ]; then \
	   echo "error: jvm/pom.xml wants Spark $$want but PySpark $$have is installed"; exit 1; fi
	@echo ">> building the writer into src/mirrorline/jars and resolving MirrorMaker 2 into $(JVM_LIB)"
	mvn --quiet --batch-mode -s jvm/settings.xml -f jvm/pom.xml -Djvm.lib=$(JVM_LIB) package
	@touch $@

demo: setup
	$(BIN)/mirrorline demo

test: setup
	$(BIN)/ruff check src tests
	$(BIN)/mypy src
	@rm -rf $(FATAL_DIR)
	MIRRORLINE_FATAL_DIR=$(FATAL_DIR) $(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadscope $(PYTEST_ARGS) \
	  || { status=$$?; $(BIN)/python tests/support/fatal_report.py $(FATAL_DIR); exit $$status; }

# The benchmark's own packages (matplotlib for its chart), on top of the dev ones.
$(BENCH_STAMP): pyproject.toml $(PY_STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	@touch $@

# Full scale by default; BENCH_ARGS="--records 100000 --latency-seconds 20" for a quick run.
BENCH_ARGS ?=
bench: setup $(BENCH_STAMP)
	$(BIN)/python benchmarks/replication_benchmark.py $(BENCH_ARGS)

# The full schedule by default; CHAOS_ARGS="--schedule leader-kill:east,driver-kill" for a quick check.
CHAOS_ARGS ?=
chaos: setup
	$(BIN)/python benchmarks/chaos.py $(CHAOS_ARGS)

# 60 minutes by default; SOAK_MINUTES=20 for a shorter one. Writes benchmarks/results/soak-*.json.
SOAK_MINUTES ?= 60
soak: setup
	$(BIN)/python benchmarks/chaos.py --soak $(SOAK_MINUTES)

# Full scale by default; DRILL_ARGS="--records 6000 --groups 2 --no-save" for a quick check.
DRILL_ARGS ?=
failover-drill: setup
	$(BIN)/python benchmarks/failover_drill.py $(DRILL_ARGS)

# The README's picture of the web UI: the demo runs, and Chromium saves docs/ui.png.
screenshot: setup
	@mkdir -p .mirrorline
	$(BIN)/mirrorline demo --duration 240 > .mirrorline/screenshot-demo.log 2>&1 & \
	  $(BIN)/python scripts/ui_screenshot.py --settle 90 --out docs/ui.png; code=$$?; \
	  wait; exit $$code

lint: python
	$(BIN)/ruff check src tests
	$(BIN)/mypy src

clean:
	-@test -x $(BIN)/mirrorline && $(BIN)/mirrorline dev down --dir .mirrorline/dev >/dev/null 2>&1
	-@test -x $(BIN)/mirrorline && $(BIN)/mirrorline dev down --dir .mirrorline/demo >/dev/null 2>&1
	rm -rf $(VENV) .cache .mirrorline .pytest_cache .ruff_cache .hypothesis src/*.egg-info \
	  src/mirrorline/jars build dist
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
