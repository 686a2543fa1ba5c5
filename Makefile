# Two commands do all the set-up on a fresh machine:  make demo  /  make test
PY      ?= python3.11
VENV    := .venv
VPY     := $(VENV)/bin/python
STAMP   := $(VENV)/.installed
export MUJOCO_GL ?= egl

.PHONY: demo test test-steps test-random test-fast test-min test-lerobot test-wheel lint venv clean bench bench-quick

# The known-good set (constraints.txt): pyproject.toml declares ranges for users, our runs install exact versions.
$(STAMP): pyproject.toml constraints.txt
	@test -x $(VPY) || $(PY) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	# torch first and pinned: a looser spec pulls a multi-GB CUDA build.
	$(VPY) -m pip install -q torch==2.13.0
	$(VPY) -m pip install -q -c constraints.txt -e '.[dev]'
	$(VPY) -m pip check
	@touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	@mkdir -p demo
	$(VPY) -m torchrl_render --ckpt examples/half_cheetah/policy.pt \
		--policy examples/half_cheetah/policy.py:make_policy \
		--env examples/half_cheetah/policy.py:make_env \
		--num-trajs 2 --max-steps 250 --render-quality balanced \
		--out demo/half_cheetah.mp4 --overwrite
	$(VPY) -m torchrl_render --ckpt examples/half_cheetah/policy.pt \
		--policy examples/half_cheetah/policy.py:make_policy \
		--env examples/half_cheetah/policy.py:make_env \
		--num-trajs 2 --max-steps 250 --out demo/half_cheetah.html --overwrite  # the 3-D replay

# pytest on both cores: tests sharing one thing (the Ray instance, a document's blocks) carry an xdist_group mark and
# run in one worker; -p no:randomly keeps the collection order (make test-random shuffles it).
JOBS    ?= 2
PYTEST  := $(VPY) -m pytest -q -n $(JOBS) --dist loadgroup

# The whole suite, what CI runs: the lint and the layers contract first, then every test; it ends with the 20
# slowest tests and its own wall time.
test:
	@start=$$(date +%s); $(MAKE) --no-print-directory test-steps; rc=$$?; \
	echo "make test: exit $$rc after $$(( $$(date +%s) - start )) s wall (set-up, lint and tests)"; exit $$rc

# mypy runs beside the tests, at the lowest priority: it takes the CPU they leave idle (they wait on subprocesses,
# servers and sleeps) instead of its ~25 s of wall time before them; the target fails if either does.
test-steps: $(STAMP)
	bash tools/test_setup.sh $(VPY)
	$(RUFF_AND_LAYERS)
	@out=$$(mktemp); nice -n 19 $(VPY) -m mypy > $$out 2>&1 & mypy=$$!; \
	$(PYTEST) -p no:randomly --durations=20; rc=$$?; \
	wait $$mypy; typed=$$?; echo "mypy (beside the tests):"; cat $$out; rm -f $$out; \
	test $$rc -eq 0 && test $$typed -eq 0

# The whole suite in a shuffled order (pytest-randomly): make test-random SEED=N replays the order of seed N.
SEED    ?= $(shell date +%s)
test-random: $(STAMP)
	bash tools/test_setup.sh $(VPY)
	@echo "make test-random: seed $(SEED) (make test-random SEED=$(SEED) runs this order again)"
	$(PYTEST) --randomly-seed=$(SEED) --durations=20

# The edit loop: the tests not marked slow (no simulator start-ups, encoders, browsers, kernels), in under a minute.
test-fast: $(STAMP)
	$(VPY) -m pytest -q -m "not slow" -p no:randomly

# The lowest supported versions (constraints-min.txt) in a venv of their own, with the tests not marked slow.
test-min:
	bash tools/test_min.sh $(PY)

# Beside lerobot[pusht]==0.4.4 and its torch 2.10 (constraints-lerobot.txt) in a venv of their own (.venv-lerobot):
# --policy lerobot against lerobot-eval's own eval_policy on gym-pusht (tests/lerobot; they skip in the main venv).
test-lerobot:
	bash tools/test_lerobot.sh $(PY)

# The wheel as users get it: built, installed (not editable) into a fresh venv with constraints.txt, and run
# from a folder outside the checkout (the demo render, an html replay from the wheel's assets, every --help).
test-wheel:
	bash tools/test_wheel.sh $(PY)

# ruff with the house's rules, the import-linter layers contract and mypy over the package (all configured in
# pyproject.toml).
define RUFF_AND_LAYERS
$(VENV)/bin/ruff check torchrl_render tests tools benchmarks examples
$(VENV)/bin/lint-imports --no-cache
endef

lint: $(STAMP)
	$(RUFF_AND_LAYERS)
	$(VPY) -m mypy

# The benchmarks (docs/benchmarks.md): rendering side by side with torchrl.render (run.py), evaluation throughput
# without frames (eval_throughput.py), and for `bench` the whole command against torchrl.render's (whole_command.py).
# The set-up installs Debian's ffmpeg and torchcodec==0.13.0, which torchrl.render's mp4 writer needs.
bench-quick: $(STAMP)
	bash benchmarks/setup.sh $(VPY)
	$(VPY) benchmarks/run.py --quick
	$(VPY) benchmarks/eval_throughput.py --quick

bench: $(STAMP)
	bash benchmarks/setup.sh $(VPY)
	$(VPY) benchmarks/run.py --full
	$(VPY) benchmarks/eval_throughput.py --full
	$(VPY) benchmarks/eval_throughput.py --profile --full
	$(VPY) benchmarks/whole_command.py

clean:
	rm -rf $(VENV) .venv-min .venv-lerobot .venv-wheel demo build dist *.egg-info
