# Each target sets itself up on a fresh machine: python3 (>= 3.10), make and the package index.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test lint format bench clean

$(STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,browser,notebook,dask,plot,import,zoo,tflite,scalesim,regex,trees,umap,tsne,inpaint]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/xai demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

test: lint
	$(BIN)/pytest -q

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test,browser,notebook,bench,plot,import,tflite,scalesim,regex]'
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) build dist .pytest_cache .ruff_cache
