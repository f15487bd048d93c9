# make bench: see bench/bench.c
bench: deps
	@echo "bench: not built yet"
