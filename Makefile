# Two commands: `make run` and `make test`. Everything else is a helper.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
PORT   ?= 8501

.PHONY: run test lint bench doctor worker api download-data clean-venv mutation-check train-deps train-test

$(VENV)/bin/activate:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

# Re-install only when a requirements file changed.
$(VENV)/.runtime-installed: requirements.txt | $(VENV)/bin/activate
	$(PIP) install --quiet -r requirements.txt
	touch $@

$(VENV)/.dev-installed: requirements.txt requirements-dev.txt | $(VENV)/bin/activate
	$(PIP) install --quiet -r requirements-dev.txt
	touch $(VENV)/.runtime-installed $@

# Streamlit's uvicorn believes X-Forwarded-For from FORWARDED_ALLOW_IPS (its default: 127.0.0.1);
# it gets TRUSTED_PROXIES instead, none unless set (SECURITY.md, "The client address").
run: $(VENV)/.runtime-installed
	$(PY) -m ragcore init
	FORWARDED_ALLOW_IPS="$${FORWARDED_ALLOW_IPS-$${TRUSTED_PROXIES-}}" $(VENV)/bin/streamlit run app.py --server.port $(PORT)

doctor: $(VENV)/.runtime-installed
	$(PY) -m ragcore doctor

# A separate background-job worker (`make run` already runs one inside the app).
worker: $(VENV)/.runtime-installed
	$(PY) -m ragcore worker

# The REST API on API_HOST:API_PORT (127.0.0.1:8502); see the README's REST API section. Like the app,
# it runs a job worker inside it unless WORKER_IN_APP=false (ragcore.jobs.runs_jobs_here decides).
api: $(VENV)/.runtime-installed
	$(PY) -m ragcore api

lint: $(VENV)/.dev-installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports --no-cache

test: $(VENV)/.dev-installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports --no-cache
	$(PY) -m pytest

# Break each role filter in a throwaway copy and check the permission suites catch it (slow:
# the two suites once per mutation; exits non-zero if a mutation survives).
mutation-check: $(VENV)/.dev-installed
	nice -n 10 $(PY) scripts/mutation_check.py

# The reader's training and export dependencies (torch CPU, onnx): dev-only, never at run time.
train-deps: $(VENV)/.dev-installed
	$(PIP) install --quiet -r requirements-train.txt

# The training side's tests (torch, onnx): not in `make test`, whose run time never needs them.
train-test: train-deps
	$(PY) -m pytest tests_train

bench: $(VENV)/.dev-installed
	$(PY) -m bench.run_all

download-data: $(VENV)/.runtime-installed
	$(PY) scripts/download_data.py

clean-venv:
	rm -rf $(VENV)
