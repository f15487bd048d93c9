# ---- bench: generated kernels of one x86 target (BENCH_TARGET: this
# machine's best, avx512 or avx2) timed against the reference, against
# attention composed from OpenBLAS, and against this machine's FMA peak and
# read bandwidth (bench/bench.c).  Writes $(BENCH)/bench.csv.  Never a test.
BENCH := $(BUILD)/bench

# One kernel per shape, batch 1, fixed lengths; named bench_<shape>.
# BENCH_SHAPES: the shapes timed, all unless set (make bench
# BENCH_SHAPES='k1 k2' for a quick run on a busy host).
BENCH_ALL_SHAPES := k1 k2 k3 k4 k5 k6 k7 k8 k9 k10 k11 k12 k13 k14 k15 k16 \
                    k17 k18 k19 k20 k21 k22 k23 k24 k25 k26 k27 k28 k29 k30
BENCH_SHAPES ?= $(BENCH_ALL_SHAPES)
BENCH_k1 := --h 8 --dk 64 --seq 128
BENCH_k2 := --h 12 --dk 64 --seq 197
BENCH_k3 := --h 8 --dk 64 --seq 512 --mask causal
BENCH_k4 := --h 16 --dk 128 --seq 1024 --mask causal
BENCH_k5 := --h 32 --dk 128 --seq 1 --seq-kv 2048
# variants of a plain shape above (BENCH_PLAIN_x), compared with it:
# grouped-query decode and prefill, causal prefill with an additive bias,
# with a bias and a boolean mask per head (and batch item), a key mask with
# holes; decode with them; variable-length batches (--varlen padded and
# packed) with every sequence full, the plain kernel's work
BENCH_k6 := --h 32 --kv-heads 8 --dk 128 --seq 1 --seq-kv 2048
BENCH_k7 := --h 16 --kv-heads 4 --dk 128 --seq 1024 --mask causal
BENCH_k8 := --h 8 --dk 64 --seq 512 --mask causal,bias
BENCH_k9 := --h 8 --dk 64 --seq 512 --mask causal,bias --mask-dims b,h
BENCH_k10 := --h 8 --dk 64 --seq 512 --mask causal,bool --mask-dims b,h
BENCH_k11 := --h 8 --dk 64 --seq 512 --mask causal,keys
BENCH_k12 := --h 32 --dk 128 --seq 1 --seq-kv 2048 --mask bias --mask-dims b,h
BENCH_k13 := --h 32 --dk 128 --seq 1 --seq-kv 2048 --mask bool,keys --mask-dims h
BENCH_k14 := --h 8 --dk 64 --seq 512 --mask causal --varlen padded
BENCH_k15 := --h 8 --dk 64 --seq 512 --mask causal --varlen packed
BENCH_k16 := --h 32 --dk 128 --seq 1 --seq-kv 2048 --varlen padded
BENCH_k17 := --h 32 --dk 128 --seq 1 --seq-kv 2048 --varlen packed
# keys and values stored as f16 or bf16 (--kv-dtype): decode reading half
# the bytes, plain and grouped-query; causal prefill with a bf16 cache
BENCH_k18 := --h 32 --dk 128 --seq 1 --seq-kv 2048 --kv-dtype f16
BENCH_k19 := --h 32 --dk 128 --seq 1 --seq-kv 2048 --kv-dtype bf16
BENCH_k20 := --h 32 --kv-heads 8 --dk 128 --seq 1 --seq-kv 2048 --kv-dtype f16
BENCH_k21 := --h 8 --dk 64 --seq 512 --mask causal --kv-dtype bf16
BENCH_k22 := --h 8 --dk 64 --seq 512 --mask causal --kv-dtype f16
# encoders run in batches (BENCH_BATCH_x items in one call);
# a long causal prefill
BENCH_k23 := --h 8 --dk 64 --seq 128
BENCH_k24 := --h 12 --dk 64 --seq 197
BENCH_k25 := --h 32 --dk 128 --seq 2048 --mask causal
# keys and values in ggml's q8_0 blocks: decode reading 34 bytes per 32
# elements, plain and grouped-query
BENCH_k26 := --h 32 --dk 128 --seq 1 --seq-kv 2048 --kv-dtype q8
BENCH_k27 := --h 32 --kv-heads 8 --dk 128 --seq 1 --seq-kv 2048 --kv-dtype q8
# q, k, v and out all f16 or bf16 (--dtype): prefill, and decode
BENCH_k28 := --h 8 --dk 64 --seq 512 --mask causal --dtype f16
BENCH_k29 := --h 12 --dk 64 --seq 197 --dtype bf16
BENCH_k30 := --h 32 --dk 128 --seq 1 --seq-kv 2048 --dtype f16
BENCH_BATCH_k23 := 8
BENCH_BATCH_k24 := 4
BENCH_PLAIN_k6 := k5
BENCH_PLAIN_k7 := k4
BENCH_PLAIN_k8 := k3
BENCH_PLAIN_k9 := k3
BENCH_PLAIN_k10 := k3
BENCH_PLAIN_k11 := k3
BENCH_PLAIN_k12 := k5
BENCH_PLAIN_k13 := k5
BENCH_PLAIN_k14 := k3
BENCH_PLAIN_k15 := k3
BENCH_PLAIN_k16 := k5
BENCH_PLAIN_k17 := k5
BENCH_PLAIN_k18 := k5
BENCH_PLAIN_k19 := k5
BENCH_PLAIN_k20 := k6
BENCH_PLAIN_k21 := k3
BENCH_PLAIN_k22 := k3
BENCH_PLAIN_k26 := k5
BENCH_PLAIN_k27 := k6
BENCH_PLAIN_k28 := k3
BENCH_PLAIN_k29 := k2
BENCH_PLAIN_k30 := k5

BENCH_KSRCS := $(BENCH_SHAPES:%=$(BENCH)/bench_%.c)
BENCH_KOBJS := $(BENCH_SHAPES:%=$(BENCH)/bench_%.o)
BENCH_OBJS := $(BENCH)/bench.o $(BENCH)/job.o $(BENCH)/peak.o $(BENCH)/peak512.o $(BENCH)/blas_attn.o

# Threaded kernels only when mhagen has --threads and $(CC) builds and links
# OpenMP.  Expanded once, in a recipe run after $(MHAGEN) is built (so a
# fresh tree and other make targets never run the probes).
bench_probe_threads = $(shell $(MHAGEN) --help 2>/dev/null | \
	grep -q -e --threads && \
	echo 'int main(void) { return omp_get_max_threads() < 1; }' | \
	$(CC) -fopenmp -include omp.h -x c - -o /dev/null 2>/dev/null && echo 1)
BENCH_OMP = $(eval BENCH_OMP := $(if $(bench_probe_threads),1))$(BENCH_OMP)
# this machine's best target (the target tables' MHA_NATIVE) unless set
BENCH_TARGET ?= $(MHA_NATIVE)
BENCH_KFLAGS = $(MHA_CFLAGS_$(BENCH_TARGET))
BENCH_GENFLAGS = --target $(BENCH_TARGET) $(if $(BENCH_OMP),--threads openmp)
BENCH_CFLAGS = $(BENCH_KFLAGS) $(if $(BENCH_OMP),-fopenmp)
BENCH_FLAGS = $(BENCH_GENFLAGS) | $(CC) $(KFLAGS) $(BENCH_CFLAGS)

.PHONY: bench-run bench-kv FORCE
FORCE:

bench: deps
	@$(MAKE) --no-print-directory bench-target-check
	@$(MAKE) --no-print-directory -j2 bench-run

# OpenBLAS picks its kernels by CPU model and falls back to its oldest x86
# ones (Prescott, SSE3) for a model it does not know, as happens under
# virtual machines; the baseline then runs far below what OpenBLAS can do.
# Name the core from the CPU's features instead, unless the caller did.
BENCH_BLAS_CORE := $(shell grep -qw avx512vl /proc/cpuinfo 2>/dev/null && echo SkylakeX || \
	{ grep -qw avx2 /proc/cpuinfo 2>/dev/null && echo Haswell; })
OPENBLAS_CORETYPE ?= $(BENCH_BLAS_CORE)

# Whether this CPU runs BENCH_TARGET's kernels, checked once by each bench
# goal a user runs, before its kernels are built or timed: a target it
# lacks stops with its name and the features it needs, not an illegal
# instruction
$(BENCH)/cpu_has: bench/cpu_has.c $(BUILD)/runtime/mha_cpu.o | $(BENCH)
	@echo "  CC      $@"
	@$(CC) $(ALL_CFLAGS) $^ -o $@
.PHONY: bench-target-check
bench-target-check: $(BENCH)/cpu_has
	@$(BENCH)/cpu_has '$(MHA_CPU_$(BENCH_TARGET))' || { echo "bench: BENCH_TARGET=$(BENCH_TARGET)" \
		"does not run on this CPU (it needs: $(MHA_CPU_$(BENCH_TARGET))); BENCH_TARGET=$(MHA_NATIVE)" \
		"does" >&2; exit 2; }

bench-run: $(BENCH)/bench $(BENCH)/layer_bench $(BENCH)/kvdecode
	@echo "  BENCH   $(BENCH)/bench $(BENCH)/bench.csv  (a minute or so)"
	@OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_CORETYPE=$(OPENBLAS_CORETYPE) \
		$(BENCH)/bench $(BENCH)/bench.csv
	@echo "  BENCH   $(BENCH)/kvdecode  (KV-cache decode, each call reading its cache from memory)"
	@$(KVDECODE_RUN)
	@echo "  BENCH   $(BENCH)/layer_bench  (the layer against OpenBLAS)"
	@OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_CORETYPE=$(OPENBLAS_CORETYPE) \
		$(BENCH)/layer_bench

# The generator and compiler flags of the kernels; rewritten only when they
# change, so a change regenerates and recompiles every kernel.
$(BENCH)/flags: $(MHAGEN) FORCE | $(BENCH)
	@echo '$(BENCH_FLAGS)' | cmp -s - $@ || echo '$(BENCH_FLAGS)' > $@

# A kernel and its registry line (for the bench's table of kernels).
$(BENCH)/bench_%.c: $(MHAGEN) $(BENCH)/flags | $(BENCH)/shapes
	@echo "  GEN     $@  (mhagen $(BENCH_$*) $(BENCH_GENFLAGS))"
	@$(MHAGEN) $(BENCH_$*) $(BENCH_GENFLAGS) --name bench_$* \
		--emit registry > $(@:.c=.reg)
	@$(MHAGEN) $(BENCH_$*) $(BENCH_GENFLAGS) --name bench_$* -o $@

# Compiled three times for the median compile time; one at a time (each
# waits for the previous one) so two timed compiles never share the CPU.
$(BENCH)/bench_%.o: $(BENCH)/bench_%.c tools/time-cc.sh
	@echo "  CC      $< (x3, timed: -O2 $(BENCH_CFLAGS))"
	@tools/time-cc.sh bench_$* $@ $(@:.o=.build) \
		$(CC) $(KFLAGS) $(BENCH_CFLAGS) $<
bench_chain = $(if $(word 2,$1),$(eval $(word 2,$1): | $(word 1,$1))$(call bench_chain,$(wordlist 2,99,$1)))
$(call bench_chain,$(BENCH_KOBJS))

# A recipe line that fails, naming the target ($1), where the list $2 names
# a shape bench/bench.mk does not have (make bench, bench-where, bench-mca)
bench_known = $(if $(filter-out $(BENCH_ALL_SHAPES),$2),echo "$1: no shape" \
	"$(filter-out $(BENCH_ALL_SHAPES),$2) in bench/bench.mk (its shapes:" \
	"$(firstword $(BENCH_ALL_SHAPES))...$(lastword $(BENCH_ALL_SHAPES)))" >&2; exit 2;)

# The list of shapes, rewritten only when BENCH_SHAPES changes, so that the
# tables below follow a shorter or longer list.
$(BENCH)/shapes: FORCE | $(BENCH)
	@$(if $(strip $(BENCH_SHAPES)),,echo "bench: BENCH_SHAPES is empty" >&2; exit 2;)
	@$(call bench_known,bench,$(BENCH_SHAPES))
	@$(if $(filter-out $(words $(BENCH_SHAPES)),$(words $(sort $(BENCH_SHAPES)))),echo "bench:" \
		"BENCH_SHAPES names a shape twice: $(BENCH_SHAPES)" >&2; exit 2;)
	@echo '$(BENCH_SHAPES)' | cmp -s - $@ || echo '$(BENCH_SHAPES)' > $@
$(BENCH)/kernels.inc: $(BENCH_KSRCS) $(BENCH)/shapes
	@cat $(BENCH_KSRCS:.c=.reg) > $@
# a variant against its plain shape where both are timed
$(BENCH)/pairs.inc: bench/bench.mk $(BENCH)/shapes | $(BENCH)
	@: > $@
	@$(foreach s,$(BENCH_SHAPES),$(if $(filter $(BENCH_PLAIN_$(s)),$(BENCH_SHAPES)),echo 'BENCH_PAIR(bench_$(s), bench_$(BENCH_PLAIN_$(s)))' >> $@;))
$(BENCH)/batches.inc: bench/bench.mk $(BENCH)/shapes | $(BENCH)
	@: > $@
	@$(foreach s,$(BENCH_SHAPES),$(if $(BENCH_BATCH_$(s)),echo 'BENCH_BATCH(bench_$(s), $(BENCH_BATCH_$(s)))' >> $@;))
$(BENCH)/compile.inc: $(BENCH_KOBJS) $(BENCH)/shapes
	@cat $(BENCH_KOBJS:.o=.build) > $@

$(BENCH)/bench.o: bench/bench.c bench/job.h $(BENCH)/kernels.inc $(BENCH)/compile.inc $(BENCH)/pairs.inc \
		$(BENCH)/batches.inc \
		$(BENCH)/flags
	@echo "  CC      $<"
	@$(CC) $(ALL_CFLAGS) $(if $(BENCH_OMP),-fopenmp) -I$(BENCH) \
		-DBENCH_TARGET='"$(BENCH_TARGET)"' -DBENCH_KFLAGS='"$(BENCH_KFLAGS)"' \
		-DBENCH_WIDTH=$(MHA_WIDTH_$(BENCH_TARGET)) -c $< -o $@
# the FMA loops of 256-bit and 512-bit vectors (bench.c picks by BENCH_WIDTH)
$(BENCH)/peak.o: bench/peak.c | $(BENCH)
	@echo "  CC      $< (-O2 -mavx2 -mfma)"
	@$(CC) $(ALL_CFLAGS) -O2 -mavx2 -mfma -c $< -o $@
$(BENCH)/peak512.o: bench/peak512.c | $(BENCH)
	@echo "  CC      $< (-O2 -mavx512f)"
	@$(CC) $(ALL_CFLAGS) -O2 -mavx512f -c $< -o $@
$(BENCH)/blas_attn.o: bench/blas_attn.c | $(BENCH)
	@echo "  CC      $<"
	@$(CC) $(ALL_CFLAGS) -O2 -c $< -o $@
# a shape's inputs and calls (bench/job.h)
$(BENCH)/job.o: bench/job.c bench/job.h bench/bench.h | $(BENCH)
	@echo "  CC      $<"
	@$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BENCH)/bench: $(BENCH_OBJS) $(BENCH_KOBJS) $(RT_OBJS)
	@echo "  LD      $@"
	@$(CC) $(if $(BENCH_OMP),-fopenmp) $^ -lopenblas -lm -o $@

# f16, bf16 and q8 KV-cache decode against f32 and a plain read of twice the
# last-level cache (64 MiB at least), that read also before each call,
# calls alternating (bench/kvdecode.c)
$(BENCH)/kvdecode: bench/kvdecode.c $(BENCH)/bench_k5.o $(BENCH)/bench_k6.o \
		$(BENCH)/bench_k18.o $(BENCH)/bench_k19.o $(BENCH)/bench_k20.o \
		$(BENCH)/bench_k26.o $(BENCH)/bench_k27.o $(RT_OBJS)
	@echo "  CC      $@"
	@$(CC) $(ALL_CFLAGS) $(if $(BENCH_OMP),-fopenmp) $(filter %.c %.o,$^) -lm -o $@
KVDECODE_RUN = OMP_NUM_THREADS=1 taskset -c 0 $(BENCH)/kvdecode 31
bench-kv: bench-target-check $(BENCH)/kvdecode
	@$(KVDECODE_RUN)

# ---- the layer (mhagen --embed 768 --h 12 and --embed 1024 --h 16, s 128
# and 512): its projection GEMMs against cblas_sgemm and its forward against
# sgemm + its attention + sgemm, one pinned thread, and the forward on two
# OpenMP threads (bench/layer_bench.c); part of make bench, or alone with
# make bench-layer.  Never a test.
# l5, l6: a decoder step (--kv-cache) of an 8B-class GQA block, one token
# over 4095 cached positions, f32 and f16 caches
BENCH_LAYERS := l1 l2 l3 l4 l5 l6
BENCH_LAYER_l1 := --embed 768 --h 12 --seq 128
BENCH_LAYER_l2 := --embed 768 --h 12 --seq 512
BENCH_LAYER_l3 := --embed 1024 --h 16 --seq 128
BENCH_LAYER_l4 := --embed 1024 --h 16 --seq 512
BENCH_LAYER_l5 := --embed 4096 --h 32 --kv-heads 8 --kv-cache 4096 --seq 1
BENCH_LAYER_l6 := --embed 4096 --h 32 --kv-heads 8 --kv-cache 4096 --seq 1 --kv-dtype f16
.PHONY: bench-layer
$(BENCH)/layer_%.c: $(MHAGEN) $(BENCH)/flags | $(BENCH)
	@echo "  GEN     $@  (mhagen $(BENCH_LAYER_$*) $(BENCH_GENFLAGS))"
	@$(MHAGEN) $(BENCH_LAYER_$*) $(BENCH_GENFLAGS) --name layer_$* -o $@
$(BENCH)/layer_bench: bench/layer_bench.c $(BENCH_LAYERS:%=$(BENCH)/layer_%.c) \
		$(BENCH)/peak.o $(BENCH)/peak512.o $(RT_OBJS) $(TARGETS_MK)
	@echo "  CC      $< ($(BENCH_CFLAGS))"
	@$(CC) $(KFLAGS) $(BENCH_CFLAGS) -D_POSIX_C_SOURCE=200809L -I$(BENCH) \
		-DBENCH_TARGET='"$(BENCH_TARGET)"' -DBENCH_WIDTH=$(MHA_WIDTH_$(BENCH_TARGET)) $< \
		$(BENCH)/peak.o $(BENCH)/peak512.o $(RT_OBJS) -lopenblas -lm -o $@
bench-layer: bench-target-check $(BENCH)/layer_bench
	@OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_CORETYPE=$(OPENBLAS_CORETYPE) \
		$(BENCH)/layer_bench

# ---- bench-ab: two kernels of one spec called in turn, to measure a
# change (bench/ab.c).  AB_SPEC: the spec's flags (required); AB_A, AB_B:
# more flags for A and for B (knobs, --exp; not flags AB_SPEC or make
# bench's --target and --threads give, which mhagen takes once); AB_TEMPLATES_A,
# AB_TEMPLATES_B: a --template-dir for A and for B (a template change
# against the built-in one); AB_FILE_A, AB_FILE_B: a kernel file of the spec
# to take instead (generated with --name ab_a or ab_b, then edited: a part
# taken out to see its cost, with AB_CHECK=0).  AB_ROUNDS calls of each,
# alternating (51), AB_BATCH items per call (1), one thread on CPU AB_CPU
# (0); AB_ONE_OUT=1: both write one output buffer (A's) in the timed
# rounds, as make bench's calls of one kernel do.  The generator flags of
# make bench (--target $(BENCH_TARGET) and OpenMP) come before AB_A and
# AB_B.  Never a test.
BENCH_AB := $(BUILD)/bench-ab
AB_ROUNDS ?= 51
AB_BATCH ?= 1
AB_CPU ?= 0
AB_CHECK ?= 1
AB_ONE_OUT ?= 0
# more compiler flags for the two kernels (make bench-where: -g)
AB_CFLAGS ?=
AB_X_a := A
AB_X_b := B
# mhagen's flags for kernel $1 (a or b)
ab_flags = $(AB_SPEC) $(BENCH_GENFLAGS) $(AB_$(AB_X_$1)) \
	$(if $(AB_TEMPLATES_$(AB_X_$1)),--template-dir $(AB_TEMPLATES_$(AB_X_$1))) --name ab_$1
.PHONY: bench-ab bench-ab-run

bench-ab: deps
	@$(MAKE) --no-print-directory bench-target-check
	@$(MAKE) --no-print-directory bench-ab-run

$(BENCH_AB):
	@mkdir -p $@

# Rewritten only when their bytes change, so an unchanged kernel is not
# compiled again.  A kernel file (AB_FILE_x) must export ab_a or ab_b.
$(BENCH_AB)/ab_%.c: $(MHAGEN) FORCE | $(BENCH_AB)
	@test -n '$(AB_SPEC)' || { echo "bench-ab: set AB_SPEC to the spec's flags," \
		"e.g. make bench-ab AB_SPEC='--h 8 --dk 64 --seq 128' AB_B='--block-kv 128'" >&2; exit 2; }
	@$(MHAGEN) $(call ab_flags,$*) --emit registry > $(@:.c=.reg).tmp
	@cmp -s $(@:.c=.reg).tmp $(@:.c=.reg) || mv $(@:.c=.reg).tmp $(@:.c=.reg)
	@rm -f $(@:.c=.reg).tmp
	@f='$(AB_FILE_$(AB_X_$*))'; if [ -n "$$f" ]; then \
		grep -q 'ab_$*_args' "$$f" || { echo "bench-ab: AB_FILE_$(AB_X_$*) $$f" \
			"exports no ab_$*_args: generate it with --name ab_$*" >&2; exit 2; }; \
		$(if $(BENCH_OMP),grep -q '^ \* mhagen .* --threads openmp' "$$f" || { \
			echo "bench-ab: AB_FILE_$(AB_X_$*) $$f was not generated with" \
			"--threads openmp as the kernel it is timed against is (one" \
			"without OpenMP skips a team's cost: h8 dk64 s128 1.03x)" >&2; exit 2; };) \
		cmp -s "$$f" $@ || cp "$$f" $@; \
	else $(MHAGEN) $(call ab_flags,$*) -o $@; fi
# The registry follows AB_SPEC even where a kernel file's bytes do not
# (AB_FILE_A, AB_FILE_B of run-time lengths timed at another spec's):
# remade every run, rewritten only when it changes
$(BENCH_AB)/kernels.inc: $(BENCH_AB)/ab_a.c $(BENCH_AB)/ab_b.c FORCE
	@cat $(BENCH_AB)/ab_a.reg $(BENCH_AB)/ab_b.reg > $@.tmp
	@cmp -s $@.tmp $@ || mv $@.tmp $@
	@rm -f $@.tmp
# the compiler and its flags, rewritten when they change (CC=gcc after a
# clang run compiles the kernels again)
$(BENCH_AB)/cflags: FORCE | $(BENCH_AB)
	@echo '$(CC) $(KFLAGS) $(BENCH_CFLAGS) $(AB_CFLAGS)' | cmp -s - $@ || echo '$(CC) $(KFLAGS) $(BENCH_CFLAGS) $(AB_CFLAGS)' > $@
# warnings not errors: an edited kernel may leave a function unused
$(BENCH_AB)/ab_%.o: $(BENCH_AB)/ab_%.c $(BENCH_AB)/cflags
	@echo "  CC      $< ($(CC) -O2 $(BENCH_CFLAGS) $(AB_CFLAGS))"
	@$(CC) $(filter-out -Werror,$(KFLAGS)) $(BENCH_CFLAGS) $(AB_CFLAGS) -c $< -o $@
$(BENCH_AB)/ab.o: bench/ab.c bench/job.h $(BENCH_AB)/kernels.inc $(BENCH_AB)/cflags
	@echo "  CC      $<"
	@$(CC) $(ALL_CFLAGS) -I$(BENCH_AB) -DBENCH_WIDTH=$(MHA_WIDTH_$(BENCH_TARGET)) -c $< -o $@
# ab links A's code first, ab-ba B's: where a kernel's code lies moves its
# time by itself (two copies of one kernel measured 1.006-1.086 in ab and
# 0.970-0.999 in ab-ba on a loaded host), so bench-ab runs both
AB_LIBS := $(BENCH)/job.o $(BENCH)/peak.o $(BENCH)/peak512.o $(BENCH)/blas_attn.o $(RT_OBJS)
ab_link = @echo "  LD      $@"; $(CC) $(if $(BENCH_OMP),-fopenmp) $^ -lopenblas -lm -o $@
$(BENCH_AB)/ab: $(BENCH_AB)/ab.o $(BENCH_AB)/ab_a.o $(BENCH_AB)/ab_b.o $(AB_LIBS)
	$(ab_link)
$(BENCH_AB)/ab-ba: $(BENCH_AB)/ab.o $(BENCH_AB)/ab_b.o $(BENCH_AB)/ab_a.o $(AB_LIBS)
	$(ab_link)
# each binary's report shown as it ends, then the two ratios' geometric
# mean; the second skips the reference (CHECK 2: the first checked the
# same objects)
bench-ab-run: $(BENCH_AB)/ab $(BENCH_AB)/ab-ba
	@echo "  BENCH   A: mhagen $(strip $(call ab_flags,a))$(if $(AB_FILE_A), (as edited in $(AB_FILE_A)))"
	@echo "  BENCH   B: mhagen $(strip $(call ab_flags,b))$(if $(AB_FILE_B), (as edited in $(AB_FILE_B)))"
	@OMP_NUM_THREADS=1 $(BENCH_AB)/ab $(AB_ROUNDS) $(AB_BATCH) $(AB_CPU) $(AB_CHECK) $(AB_ONE_OUT) \
		> $(BENCH_AB)/ab.out; s=$$?; cat $(BENCH_AB)/ab.out; exit $$s
	@OMP_NUM_THREADS=1 $(BENCH_AB)/ab-ba $(AB_ROUNDS) $(AB_BATCH) $(AB_CPU) 2 $(AB_ONE_OUT) \
		> $(BENCH_AB)/ab-ba.out; s=$$?; cat $(BENCH_AB)/ab-ba.out; exit $$s
	@awk '/^  A\/B [0-9.]+ /{ r[n++] = $$2 } END { if (n != 2) exit 1; \
		printf "A/B %.3f over the two link orders (the geometric mean of %s and %s)\n", \
		sqrt(r[0] * r[1]), r[0], r[1] }' $(BENCH_AB)/ab.out $(BENCH_AB)/ab-ba.out

# ---- bench-where: where each prefill shape's time goes, by pass
# (tools/bench-where.sh: perf samples of the kernel built as make bench-ab's,
# grouped by the part of the generated file their line belongs to).  The
# shapes of make bench (WHERE_SHAPES), each WHERE_ROUNDS_x calls (1001 unless
# set: about a second of samples), one thread on CPU WHERE_CPU.  Writes
# $(BUILD)/bench-where/where.csv.  Needs perf (linux-perf).  Never a test.
WHERE_SHAPES ?= k1 k2 k3 k4 k23 k24 k25
WHERE_CPU ?= 0
WHERE_ROUNDS_k3 := 301
WHERE_ROUNDS_k4 := 21
WHERE_ROUNDS_k23 := 201
WHERE_ROUNDS_k24 := 151
WHERE_ROUNDS_k25 := 5
# clang gives the instructions it moves or merges across lines line 0 (an
# AVX2 s197 kernel: 914 of the 1104 samples bench-where counted as "other"
# sat between the micro-kernels' FMAs); this flag has them keep the line
# before them (probed when bench-where runs, not on every make)
WHERE_CFLAGS = $(shell $(CC) -mllvm -use-unknown-locations=Disable -x c -c /dev/null -o /dev/null 2>/dev/null && echo '-mllvm -use-unknown-locations=Disable')
.PHONY: bench-where bench-where-run bench-where-build
bench-where: deps
	@$(MAKE) --no-print-directory bench-target-check
	@$(MAKE) --no-print-directory bench-where-run
bench-where-run: $(MHAGEN)
	@$(call bench_known,bench-where,$(WHERE_SHAPES))
	@echo "  WHERE   $(WHERE_SHAPES) (perf; the reference of each shape first, a minute or more)"
	@BUILD=$(BUILD) tools/bench-where.sh --header
	@$(foreach s,$(WHERE_SHAPES),MAKE="$(MAKE)" BUILD=$(BUILD) WHERE_CPU=$(WHERE_CPU) WHERE_CFLAGS="$(WHERE_CFLAGS)" \
		tools/bench-where.sh $(s) \
		'$(BENCH_$(s))' $(or $(BENCH_BATCH_$(s)),1) $(or $(WHERE_ROUNDS_$(s)),1001) &&) true
	@echo "  WHERE   $(BUILD)/bench-where/where.csv"
# the kernel of AB_SPEC as A and B, for tools/bench-where.sh
bench-where-build: $(BENCH_AB)/ab

# ---- bench-mca: the tiled kernel's inner loops read from the compilers'
# assembly with llvm-mca's CPU models (tools/bench-mca.sh): instructions,
# FMAs and spills per iteration of the score and P.V micro-kernels and of
# the softmax's group of exps, and each model's cycles, for targets this
# machine cannot time.  The shapes MCA_SHAPES (make bench's), the targets
# MCA_TARGETS, each on the models MCA_CPUS_t.  Read, not timed: make test
# runs it on one shape to keep the loops it marks the ones it means.
MCA_SHAPES ?= k1 k4
MCA_TARGETS ?= avx2 avx512 neon
MCA_CPUS_avx2 ?= znver3 skylake
MCA_CPUS_avx512 ?= skylake-avx512
MCA_CPUS_neon ?= neoverse-n1 apple-m1
.PHONY: bench-mca bench-mca-run
bench-mca: deps
	@$(MAKE) --no-print-directory bench-mca-run
bench-mca-run: $(MHAGEN)
	@$(call bench_known,bench-mca,$(MCA_SHAPES))
	@$(foreach t,$(MCA_TARGETS),$(if $(MCA_CPUS_$t),,echo "bench-mca: target $t has no CPU" \
		"models (MCA_CPUS_$t); bench-mca reads avx2, avx512 and neon" >&2; exit 2;))
	@$(foreach s,$(MCA_SHAPES),$(foreach t,$(MCA_TARGETS),BUILD=$(BUILD) MHAGEN=$(MHAGEN) \
		GCC="$(GCC)" CROSS_CLANG="$(CROSS_CLANG)" CROSS_GCC="$(CROSS_GCC)" \
		tools/bench-mca.sh $(t) '$(BENCH_$(s))' $(MCA_CPUS_$(t)) &&)) true
