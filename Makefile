# Two entry points: `make run` (default experiment) and `make test` (whole suite).
# Both create .venv with pinned dependencies (requirements.lock, plus torch: see below) and
# install the core and every plugin under plugins/ in editable mode.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
UV_VERSION := 0.13.9
# PyTorch for plugins/plcore-deep, installed by pip: where a CPU build of this release is
# provided (our machines' wheel directory) pip takes it; uv would download a CUDA build.
# Its own dependencies are pinned in requirements.lock. GPU users: plugins/plcore-deep/README.md.
TORCH_VERSION := 2.13.0
PLUGINS := $(wildcard plugins/*/pyproject.toml)
STAMP  := $(VENV)/.plcore-installed

.PHONY: run test install clean bench

run: $(STAMP)
	$(PY) -m plcore

test: $(STAMP)
	$(PY) -m pytest -n 2 --dist loadgroup -q --durations=40

install: $(STAMP)

$(STAMP): requirements.lock pyproject.toml $(PLUGINS)
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q "uv==$(UV_VERSION)"
	$(VENV)/bin/uv pip install --python $(PY) -q --compile-bytecode -r requirements.lock
	$(PY) -m pip install -q --disable-pip-version-check "torch==$(TORCH_VERSION)"
	$(VENV)/bin/uv pip install --python $(PY) -q --no-deps -e . $(foreach p,$(PLUGINS),-e $(dir $(p)))
	$(VENV)/bin/uv pip check --python $(PY)
	touch $@

bench: $(STAMP)
	$(PY) benchmarks/plknn.py

clean:
	rm -rf $(VENV)
