# mhagen: build the generator, test kernels against the reference, bench.
# make demo    build mhagen, generate the default kernel, check and time it
# make test    every test (Criterion), including NEON under qemu-aarch64
# make bench-kv  f16, bf16 and q8 KV-cache decode against f32, calls alternating
#               (also the last part of make bench)
# make bench-where  where each prefill shape's time goes, pass by pass (perf)
# make bench-mca  the inner loops read from the assembly with llvm-mca's models

ifeq ($(origin CC),default)
CC = clang
endif
GCC ?= gcc
CROSS_CLANG ?= clang --target=aarch64-linux-gnu
CROSS_GCC ?= aarch64-linux-gnu-gcc
QEMU ?= qemu-aarch64 -L /usr/aarch64-linux-gnu
BUILD ?= build
PKG_CONFIG ?= pkg-config
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
INCLUDEDIR ?= $(PREFIX)/include
LIBDIR ?= $(PREFIX)/lib
DATADIR ?= $(PREFIX)/share
MANDIR ?= $(DATADIR)/man
DOCDIR ?= $(DATADIR)/doc/mhagen
CMAKEDIR ?= $(LIBDIR)/cmake/mhagen
BASHCOMPDIR ?= $(DATADIR)/bash-completion/completions

CFLAGS ?= -O2 -g
WARN := -std=c11 -Wall -Wextra -Wpointer-arith -Werror
ALL_CFLAGS = $(WARN) $(CFLAGS) -D_POSIX_C_SOURCE=200809L -MMD -MP
LUA_CFLAGS = $(shell $(PKG_CONFIG) --cflags lua5.4)
LUA_LIBS = $(shell $(PKG_CONFIG) --libs lua5.4)
CRIT_CFLAGS = $(shell $(PKG_CONFIG) --cflags criterion)
CRIT_LIBS = $(shell $(PKG_CONFIG) --libs criterion)

TEMPLATES := $(sort $(wildcard templates/*.lua templates/*.in templates/targets/*.lua))
# the kernel contract, embedded with the templates: kernels carry its
# struct mha_args (templates/main.lua reads it), and the decoder step's
# stores into a 16-bit cache
CONTRACT := runtime/mha_abi.h runtime/mha_kvstore.h
GEN_OBJS := $(BUILD)/generator/spec.o $(BUILD)/generator/knobs.o \
            $(BUILD)/generator/cli.o $(BUILD)/generator/gen.o \
            $(BUILD)/generator/fail.o $(BUILD)/generator/templates_embed.o \
            $(BUILD)/runtime/mha_cpu.o
TUNE_OBJS := $(BUILD)/generator/tune.o $(BUILD)/generator/tunedb.o \
             $(BUILD)/generator/tuneopts.o $(BUILD)/generator/tunesweep.o \
             $(BUILD)/generator/tunespace.o $(BUILD)/generator/tunesearch.o \
             $(BUILD)/generator/tunerun.o $(BUILD)/generator/tunereport.o \
             $(BUILD)/generator/tuneprogress.o \
             $(BUILD)/generator/harness_embed.o $(BUILD)/runtime/mha_time.o
# sources the tuner writes out to build its measuring harness
HARNESS := runtime/harness/tune_harness.c runtime/mha_abi.h runtime/mha_ref.c runtime/mha_ref.h runtime/mha_kvstore.h \
           runtime/mha_buf.c runtime/mha_buf.h runtime/mha_time.c runtime/mha_time.h
RT_OBJS := $(BUILD)/runtime/mha_ref.o $(BUILD)/runtime/mha_buf.o \
           $(BUILD)/runtime/mha_cpu.o $(BUILD)/runtime/mha_time.o \
           $(BUILD)/runtime/mha_layer_ref.o
MHAGEN := $(BUILD)/mhagen

.SECONDARY:
.PHONY: all deps bench demo demo-run test test-long check check-build check-long long-build \
        generate exp-fit install \
        uninstall install-check bench-ab-check clean
all: $(MHAGEN)

deps:
	@./tools/install-deps.sh

# The two commands of the README: each installs what is missing first.
demo: deps
	@$(MAKE) --no-print-directory -j2 demo-run
# test runs the demo too (its kernel against the reference), so that what
# make demo builds cannot break unseen.  The last three checks are
# independent (each in its own directories) and run two at a time, each
# one's output printed whole as it ends (17 s against 26 s in turn).
test: deps
	@$(MAKE) --no-print-directory -j2 check-build robust-build $(DEMO)/demo
	@$(MAKE) --no-print-directory robust
	@$(MAKE) --no-print-directory check
	@$(MAKE) --no-print-directory demo-run
	@$(MAKE) --no-print-directory -j2 -Orecurse install-check bench-ab-check \
		bench-mca-run MCA_SHAPES=k1
# The long sweeps, which .ci/run runs after make test so that make test
# stays well under 20 minutes from a fresh tree on two cores: the host
# kernel and layer tests again built with ASan and UBSan, and the AArch64
# builds of every test kernel under qemu (645 s for make test, 737 s for
# this, from a fresh clone on two cores)
test-long: deps
	@$(MAKE) --no-print-directory -j2 long-build
	@$(MAKE) --no-print-directory check-long

$(BUILD) $(BUILD)/generator $(BUILD)/runtime $(BUILD)/tests $(BUILD)/bench $(BUILD)/tools:
	@mkdir -p $@

$(BUILD)/generator/%.o: generator/%.c | $(BUILD)/generator
	@echo "  CC      $<"
	@$(CC) $(ALL_CFLAGS) $(LUA_CFLAGS) -c $< -o $@

$(BUILD)/generator/templates_embed.o: $(BUILD)/generator/templates_embed.c
	@echo "  CC      $<"
	@$(CC) $(ALL_CFLAGS) -Igenerator -c $< -o $@

$(BUILD)/generator/templates_embed.c: $(BUILD)/tools/embed $(TEMPLATES) $(CONTRACT) | $(BUILD)/generator
	@echo "  EMBED   templates"
	@$(BUILD)/tools/embed $@ . $(TEMPLATES) $(CONTRACT)

$(BUILD)/generator/harness_embed.o: $(BUILD)/generator/harness_embed.c
	@echo "  CC      $<"
	@$(CC) $(ALL_CFLAGS) -Igenerator -c $< -o $@

$(BUILD)/generator/harness_embed.c: $(BUILD)/tools/embed $(HARNESS) | $(BUILD)/generator
	@echo "  EMBED   harness"
	@$(BUILD)/tools/embed -a mhagen_harness $@ . $(HARNESS)

$(BUILD)/tools/embed: tools/embed.c | $(BUILD)/tools
	@echo "  CC      $<"
	@$(CC) $(ALL_CFLAGS) $< -o $@

$(BUILD)/runtime/%.o: runtime/%.c | $(BUILD)/runtime
	@echo "  CC      $<"
	@$(CC) $(ALL_CFLAGS) -c $< -o $@

$(MHAGEN): $(BUILD)/generator/main.o $(BUILD)/generator/depfile.o $(GEN_OBJS) $(TUNE_OBJS)
	@echo "  LD      $@"
	@$(CC) $(CFLAGS) $^ $(LUA_LIBS) -lm -o $@

# ---- install: the program, the kernel contract for callers
# (runtime/mha_abi.h), the man page and bash completion (both from --help),
# the CMake package (find_package(mhagen), mhagen_add_kernel), the Make
# fragment, the examples, README and LICENSE.  The CMake and Make files find
# the program relative to themselves, so a DESTDIR tree works where it lies.
PKG := $(BUILD)/pkg
EXAMPLES := $(wildcard pkg/examples/*)
relpath = $(shell realpath -m --relative-to=$(1) $(2))
$(PKG):
	@mkdir -p $@
$(PKG)/mhagen.1: $(MHAGEN) tools/man.sh | $(PKG)
	@echo "  MAN     $@"
	@tools/man.sh $(MHAGEN) > $@.tmp && mv $@.tmp $@
$(PKG)/mhagen.bash: $(MHAGEN) tools/completion.sh | $(PKG)
	@echo "  GEN     $@"
	@tools/completion.sh $(MHAGEN) > $@.tmp && mv $@.tmp $@
# files of pkg/ with @VERSION@ and the relative paths filled in; they
# depend on the install directories, so they are made at install time
pkg_subst = sed -e "s|@VERSION@|$$($(MHAGEN) --version | sed 's/^mhagen //')|" \
	-e "s|@BIN_REL@|$(2)|" -e "s|@INCLUDE_REL@|$(3)|" $(1)
PKG_FILES := $(PKG)/mhagen.1 $(PKG)/mhagen.bash
install: $(MHAGEN) $(PKG_FILES)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(MANDIR)/man1 \
		$(DESTDIR)$(CMAKEDIR) $(DESTDIR)$(DATADIR)/mhagen/examples \
		$(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(DOCDIR)
	install -m 755 $(MHAGEN) $(DESTDIR)$(BINDIR)/mhagen
	install -m 644 runtime/mha_abi.h $(DESTDIR)$(INCLUDEDIR)/mha_abi.h
	install -m 644 $(PKG)/mhagen.1 $(DESTDIR)$(MANDIR)/man1/mhagen.1
	install -m 644 $(PKG)/mhagen.bash $(DESTDIR)$(BASHCOMPDIR)/mhagen
	install -m 644 README.md LICENSE $(DESTDIR)$(DOCDIR)
	install -m 644 $(EXAMPLES) $(DESTDIR)$(DATADIR)/mhagen/examples
	$(call pkg_subst,pkg/mhagenConfig.cmake.in,$(call relpath,$(CMAKEDIR),$(BINDIR)),$(call relpath,$(CMAKEDIR),$(INCLUDEDIR))) \
		> $(PKG)/mhagenConfig.cmake
	$(call pkg_subst,pkg/mhagenConfigVersion.cmake.in) > $(PKG)/mhagenConfigVersion.cmake
	$(call pkg_subst,pkg/mhagen.mk.in,$(call relpath,$(DATADIR)/mhagen,$(BINDIR))) > $(PKG)/mhagen.mk
	install -m 644 $(PKG)/mhagenConfig.cmake $(PKG)/mhagenConfigVersion.cmake $(DESTDIR)$(CMAKEDIR)
	install -m 644 $(PKG)/mhagen.mk $(DESTDIR)$(DATADIR)/mhagen

# every file install wrote, and the folders it made that are left empty
uninstall:
	rm -f $(DESTDIR)$(BINDIR)/mhagen $(DESTDIR)$(INCLUDEDIR)/mha_abi.h \
		$(DESTDIR)$(MANDIR)/man1/mhagen.1 $(DESTDIR)$(BASHCOMPDIR)/mhagen \
		$(DESTDIR)$(DOCDIR)/README.md $(DESTDIR)$(DOCDIR)/LICENSE \
		$(DESTDIR)$(CMAKEDIR)/mhagenConfig.cmake \
		$(DESTDIR)$(CMAKEDIR)/mhagenConfigVersion.cmake \
		$(DESTDIR)$(DATADIR)/mhagen/mhagen.mk \
		$(addprefix $(DESTDIR)$(DATADIR)/mhagen/examples/,$(notdir $(EXAMPLES)))
	-rmdir $(DESTDIR)$(DOCDIR) $(DESTDIR)$(CMAKEDIR) $(DESTDIR)$(DATADIR)/mhagen/examples \
		$(DESTDIR)$(DATADIR)/mhagen 2>/dev/null

# make install into a temporary DESTDIR, then build the installed examples
# with CMake, the Make fragment and Meson and run them; the depfile, the
# untouched outputs, and make uninstall (tools/install-check.sh)
install-check: $(MHAGEN) $(PKG_FILES)
	@MAKE="$(MAKE)" BUILD=$(BUILD) CC="$(CC)" tools/install-check.sh
# make bench-ab as the README uses it (bench/bench.mk), on a small shape
bench-ab-check: $(MHAGEN)
	@MAKE="$(MAKE)" BUILD=$(BUILD) tools/bench-ab-check.sh

clean:
	rm -rf $(BUILD)

generate: $(MHAGEN)
	@echo "  GEN     generated/ from generated/MANIFEST"
	@MHAGEN=$(MHAGEN) tools/gen-kernels.sh generated/MANIFEST generated

# the exp's polynomial coefficients (templates/vexp.c.in), fitted again
exp-fit: $(BUILD)/tools/exp-fit
	@$(BUILD)/tools/exp-fit

$(BUILD)/tools/exp-fit: tools/exp-fit.c | $(BUILD)/tools
	@echo "  CC      $<"
	@$(CC) $(CFLAGS) $< -lm -o $@

# ---- demo: the default kernel, checked and timed against the reference
DEMO := $(BUILD)/demo
$(DEMO):
	@mkdir -p $@
$(DEMO)/kernel.c: $(MHAGEN) | $(DEMO)
	@echo "  GEN     $@  (mhagen --h 8 --dk 64 --target native --name mha_demo)"
	@$(MHAGEN) --h 8 --dk 64 --target native --name mha_demo -o $@ --header $(DEMO)/kernel.h
$(DEMO)/kernel.o: $(DEMO)/kernel.c
	@echo "  CC      $< (-O2 -march=native)"
	@$(CC) $(KFLAGS) $(KWARN_CC) -march=native -c $< -o $@
$(DEMO)/demo: bench/demo.c $(DEMO)/kernel.o $(RT_OBJS)
	@echo "  LD      $@"
	@$(CC) $(ALL_CFLAGS) -I$(DEMO) \
		-DDEMO_TARGET="\"$$($(MHAGEN) --emit targets | sed -n 's/^MHA_NATIVE := //p')\"" \
		$(filter %.c %.o,$^) -lm -o $@
demo-run: $(DEMO)/demo
	@$(DEMO)/demo

# ---- tests
# Generated kernels build with -Wshadow as well: a user's build may well
# turn it on, and a name shadowed in a template (the batch index once) is
# otherwise unseen
KFLAGS := -std=c11 -O2 -Wall -Wextra -Wpointer-arith -Wshadow -Werror
# and -Wcast-align (gcc's =strict, which x86 code draws too): a kernel's
# casts to wider types go through void * where the alignment holds by
# construction (its 64-byte aligned scratch), and unaligned vector loads
# take void pointers
KWARN_CC := -Wcast-align
KWARN_GCC := -Wcast-align=strict
TK := $(BUILD)/tests/kern
EXP := $(BUILD)/tests/exp

# The target tables (templates/targets/NAME.lua) as make variables, from
# mhagen --emit targets: MHA_TARGETS and, per target t, MHA_ARCH_t (the
# architecture it builds for, empty for any), MHA_CFLAGS_t, MHA_CPU_t.
# Targets of this machine's architecture are tested natively, those of
# CROSS_ARCH under qemu; nothing here names a target.  Read only by the
# goals that build tests, so that a fresh tree installs packages first.
TARGETS_MK := $(BUILD)/targets.mk
$(TARGETS_MK): $(MHAGEN) $(TEMPLATES)
	@echo "  GEN     $@"
	@$(MHAGEN) --emit targets -o $@
ifneq ($(filter check check-build check-long long-build $(BUILD)/tests/% bench-run bench-kv bench-layer bench-ab-run bench-where-build bench-target-check $(BUILD)/bench/% $(BUILD)/bench-ab/%,$(MAKECMDGOALS)),)
include $(TARGETS_MK)
endif
HOST_ARCH := $(shell uname -m)
CROSS_ARCH := aarch64
targets_of = $(foreach t,$(MHA_TARGETS),$(if $(filter-out $(1),$(MHA_ARCH_$t)),,$t))
HOST_TARGETS = $(call targets_of,$(HOST_ARCH))
CROSS_TARGETS = $(call targets_of,$(CROSS_ARCH))
# the target of a generated file NAME__TARGET.c, and its flags
gen_target = $(lastword $(subst __, ,$(basename $(notdir $(1)))))
gflags = $(MHA_CFLAGS_$(call gen_target,$(1)))
GEN_HOST = $(foreach t,$(HOST_TARGETS),$(wildcard generated/*__$t.c))
GEN_CROSS = $(foreach t,$(CROSS_TARGETS),$(wildcard generated/*__$t.c))

TEST_BINS := $(addprefix $(BUILD)/tests/,test_spec test_cli test_engine test_generated \
             test_exp test_kernels_cc test_kernels_gcc \
             test_tune test_search test_knobs test_python test_dispatch_cc \
             test_dispatch_gcc test_layer_cc test_layer_gcc)
LONG_BINS := $(addprefix $(BUILD)/tests/,test_kernels_asan test_layer_asan test_neon)
NEON_DRIVERS := $(BUILD)/tests/neon_check_clang $(BUILD)/tests/neon_check_gcc

check-build: $(TEST_BINS)
check: check-build
	@BUILD=$(BUILD) QEMU="$(QEMU)" MHAGEN=$(MHAGEN) tools/run-tests.sh $(TEST_BINS)
long-build: $(LONG_BINS) $(NEON_DRIVERS)
check-long: long-build
	@BUILD=$(BUILD) QEMU="$(QEMU)" MHAGEN=$(MHAGEN) tools/run-tests.sh $(LONG_BINS)

# Each target's build of tests/kernels.list, and one registry of them all
# (each line behind its target's guard: a build keeps its architecture's)
$(TK)/%/kernels.inc: tests/kernels.list $(MHAGEN) tools/gen-kernels.sh
	@echo "  GEN     test kernels for $*"
	@MHAGEN=$(MHAGEN) PARTS=$(words $(KERNEL_PARTS)) tools/gen-kernels.sh --all tests/kernels.list $(TK)/$* $* 2>/dev/null
$(TK)/kernels.inc: $(TARGETS_MK) $(foreach t,$(MHA_TARGETS),$(TK)/$t/kernels.inc)
	@cat $(filter %/kernels.inc,$^) > $@
# the number of specs in the list, for the tests that count what they link
# and of the targets this machine builds
$(TK)/count.h: tests/kernels.list tests/layers.list $(TARGETS_MK)
	@mkdir -p $(@D)
	@echo "#define KERNELS_LISTED $$(grep -cv '^[[:space:]]*\(#\|$$\)' $<)" > $@
	@echo "#define WEIGHTS_LISTED $$(grep -v '^[[:space:]]*#' $< | grep -c -e '--weights')" >> $@
	@echo "#define LAYERS_LISTED $$(grep -cv '^[[:space:]]*\(#\|$$\)' tests/layers.list)" >> $@
	@echo "#define TARGETS_HOST $(words $(HOST_TARGETS))" >> $@
	@echo "#define TARGETS_CROSS $(words $(CROSS_TARGETS))" >> $@

# each target's kernels in KERNEL_PARTS translation units (part-N.c, written
# with kernels.inc), so that the builds spread over the cores; part_of
# names targets' objects of one build (cc, gcc, asan)
KERNEL_PARTS := 0 1 2 3
part_of = $(foreach t,$(1),$(foreach p,$(KERNEL_PARTS),$(TK)/$t/part-$p-$(2).o))
part_target = $(patsubst %/,%,$(dir $*))
$(foreach p,$(KERNEL_PARTS),$(TK)/%/part-$p.c): $(TK)/%/kernels.inc ;
$(TK)/%-cc.o: $(TK)/%.c $(TARGETS_MK)
	@echo "  CC      $<"
	@$(CC) $(KFLAGS) $(KWARN_CC) $(MHA_CFLAGS_$(part_target)) -I. -c $< -o $@
$(TK)/%-gcc.o: $(TK)/%.c $(TARGETS_MK)
	@echo "  GCC     $<"
	@$(GCC) $(KFLAGS) $(KWARN_GCC) -fopenmp $(MHA_CFLAGS_$(part_target)) -I. -c $< -o $@

$(BUILD)/tests/gen-cc/%.o: generated/%.c $(TARGETS_MK)
	@mkdir -p $(@D)
	@echo "  CC      $<"
	@$(CC) $(KFLAGS) $(KWARN_CC) $(call gflags,$*) -c $< -o $@
$(BUILD)/tests/gen-gcc/%.o: generated/%.c $(TARGETS_MK)
	@mkdir -p $(@D)
	@echo "  GCC     $<"
	@$(GCC) $(KFLAGS) $(KWARN_GCC) $(call gflags,$*) -c $< -o $@

# Each target's build of tests/layers.list (mhagen --embed: whole layers),
# one translation unit per target, and one registry of them all
TL := $(BUILD)/tests/layer
$(TL)/%/kernels.inc: tests/layers.list $(MHAGEN) tools/gen-kernels.sh
	@echo "  GEN     test layers for $*"
	@MHAGEN=$(MHAGEN) PARTS=1 tools/gen-kernels.sh --all tests/layers.list $(TL)/$* $* 2>/dev/null
$(TL)/layers.inc: $(TARGETS_MK) $(foreach t,$(MHA_TARGETS),$(TL)/$t/kernels.inc)
	@cat $(filter %/kernels.inc,$^) > $@
$(TL)/%/all.c: $(TL)/%/kernels.inc ;
$(TL)/%/all-cc.o: $(TL)/%/all.c $(TARGETS_MK)
	@echo "  CC      $<"
	@$(CC) $(KFLAGS) $(KWARN_CC) $(MHA_CFLAGS_$*) -I. -c $< -o $@
$(TL)/%/all-gcc.o: $(TL)/%/all.c $(TARGETS_MK)
	@echo "  GCC     $<"
	@$(GCC) $(KFLAGS) $(KWARN_GCC) -fopenmp $(MHA_CFLAGS_$*) -I. -c $< -o $@

# The kernels of tests/dispatch.list as one --target list: this machine's
# architecture's targets by rank, best first; each built with no ISA flags
# (the variants carry target attributes).  facts.h: the targets with the
# CPU features each needs, and how many specs the list holds.
DISP := $(BUILD)/tests/disp
comma := ,
HOST_LIST = $(shell printf '%s\n' $(foreach t,$(HOST_TARGETS),$(MHA_RANK_$t):$t) \
                    | sort -t: -k1,1nr | cut -d: -f2 | paste -sd,)
$(DISP)/kernels.inc: tests/dispatch.list $(MHAGEN) tools/gen-kernels.sh $(TARGETS_MK)
	@echo "  GEN     test kernels for $(HOST_LIST)"
	@MHAGEN=$(MHAGEN) tools/gen-kernels.sh --all tests/dispatch.list $(DISP) $(HOST_LIST) 2>/dev/null
$(DISP)/facts.h: tests/dispatch.list $(TARGETS_MK)
	@mkdir -p $(@D)
	@{ echo "#define DISPATCH_LISTED $$(grep -cv '^[[:space:]]*\(#\|$$\)' $<)"; \
	   echo "#define DISPATCH_TARGETS \\"; \
	   $(foreach t,$(subst $(comma), ,$(HOST_LIST)),echo '	{"$t", "$(MHA_CPU_$t)"}, \';) \
	   echo; } > $@
$(DISP)/all-%.o: $(DISP)/kernels.inc
	@echo "  $(if $(filter gcc,$*),GCC,CC)     $(DISP)/all.c (no ISA flags)"
	@$(if $(filter gcc,$*),$(GCC) $(KFLAGS) $(KWARN_GCC),$(CC) $(KFLAGS) $(KWARN_CC)) -I. -c $(DISP)/all.c -o $@

# each target's vector exps alone (exp and 2^x, accurate and fast), and their registries
$(EXP)/mha_exp_%.c: $(MHAGEN)
	@mkdir -p $(@D)
	@$(MHAGEN) --h 1 --dk 1 --target $* --emit exp --name mha_exp_$* -o $@
$(EXP)/mha_expfast_%.c: $(MHAGEN)
	@mkdir -p $(@D)
	@$(MHAGEN) --h 1 --dk 1 --target $* --exp fast --emit exp --name mha_expfast_$* -o $@
$(EXP)/mha_exp_%.inc: $(MHAGEN)
	@mkdir -p $(@D)
	@$(MHAGEN) --h 1 --dk 1 --target $* --emit registry --name mha_exp_$* -o $@
$(EXP)/mha_expfast_%.inc: $(MHAGEN)
	@mkdir -p $(@D)
	@$(MHAGEN) --h 1 --dk 1 --target $* --exp fast --emit registry --name mha_expfast_$* -o $@
$(EXP)/exp.inc: $(TARGETS_MK) $(foreach t,$(MHA_TARGETS),$(EXP)/mha_exp_$t.inc)
	@cat $(filter %.inc,$^) > $@
$(EXP)/expfast.inc: $(TARGETS_MK) $(foreach t,$(MHA_TARGETS),$(EXP)/mha_expfast_$t.inc)
	@cat $(filter %.inc,$^) > $@
$(EXP)/%.o: $(EXP)/%.c $(TARGETS_MK)
	@echo "  CC      $<"
	@$(CC) $(KFLAGS) $(KWARN_CC) $(MHA_CFLAGS_$(patsubst mha_expfast_%,%,$(patsubst mha_exp_%,%,$*))) -c $< -o $@
EXP_HOST = $(foreach t,$(HOST_TARGETS),$(EXP)/mha_exp_$t.o $(EXP)/mha_expfast_$t.o)

$(BUILD)/tests/%.o: tests/%.c | $(BUILD)/tests
	@echo "  CC      $<"
	@$(CC) $(ALL_CFLAGS) $(CRIT_CFLAGS) $(LUA_CFLAGS) -I$(TK) -I$(BUILD)/tests -I. -c $< -o $@
$(BUILD)/tests/test_kernels.o: $(TK)/kernels.inc $(TK)/count.h
$(BUILD)/tests/test_exp.o: $(TK)/count.h
$(BUILD)/tests/test_dispatch.o: $(DISP)/kernels.inc $(DISP)/facts.h
$(BUILD)/tests/exps.o: $(EXP)/exp.inc $(EXP)/expfast.inc

TEST_LIBS = $(CRIT_LIBS) $(LUA_LIBS) -lm
$(BUILD)/tests/test_spec: $(BUILD)/tests/test_spec.o $(BUILD)/tests/cases.o $(GEN_OBJS)
	@echo "  LD      $@"
	@$(CC) $^ $(TEST_LIBS) -o $@
# runs build/mhagen
$(BUILD)/tests/test_cli: $(BUILD)/tests/test_cli.o $(BUILD)/tests/cases.o \
		$(BUILD)/tests/files.o $(GEN_OBJS) | $(MHAGEN)
	@echo "  LD      $@"
	@$(CC) $^ $(TEST_LIBS) -o $@
$(BUILD)/tests/test_engine: $(BUILD)/tests/test_engine.o $(BUILD)/tests/files.o $(GEN_OBJS)
	@echo "  LD      $@"
	@$(CC) $^ $(TEST_LIBS) -o $@
# the knob table and its readers, the tuning database's among them
$(BUILD)/tests/test_knobs: $(BUILD)/tests/test_knobs.o $(GEN_OBJS) \
		$(BUILD)/generator/tunedb.o $(BUILD)/runtime/mha_time.o
	@echo "  LD      $@"
	@$(CC) $^ $(TEST_LIBS) -o $@
$(BUILD)/tests/test_generated: $(BUILD)/tests/test_generated.o $(BUILD)/tests/files.o $(GEN_OBJS)
	@echo "  LD      $@"
	@$(CC) $^ $(TEST_LIBS) -o $@
$(BUILD)/tests/test_exp: $(BUILD)/tests/test_exp.o $(BUILD)/tests/ulp.o \
		$(BUILD)/tests/exps.o $(EXP_HOST) \
		$(BUILD)/runtime/mha_cpu.o
	@echo "  LD      $@"
	@$(CC) $^ $(TEST_LIBS) -o $@
KERNEL_TEST_OBJS := $(BUILD)/tests/test_kernels.o $(BUILD)/tests/check.o \
                    $(BUILD)/tests/props.o $(RT_OBJS)
$(BUILD)/tests/test_kernels_cc: $(KERNEL_TEST_OBJS) $(TARGETS_MK) \
		$(call part_of,$(HOST_TARGETS),cc) \
		$(patsubst generated/%.c,$(BUILD)/tests/gen-cc/%.o,$(GEN_HOST))
	@echo "  LD      $@"
	@$(CC) $(filter %.o,$^) $(TEST_LIBS) -o $@
$(BUILD)/tests/test_kernels_gcc: $(KERNEL_TEST_OBJS) $(TARGETS_MK) \
		$(call part_of,$(HOST_TARGETS),gcc) \
		$(patsubst generated/%.c,$(BUILD)/tests/gen-gcc/%.o,$(GEN_HOST))
	@echo "  LD      $@"
	@$(GCC) $(filter %.o,$^) $(TEST_LIBS) -fopenmp -o $@
# The host kernel tests again, everything built with AddressSanitizer and
# UBSan: inputs are allocated to the exact float, so any read or write past
# a buffer stops the test.  Each target's kernels are compiled apart with
# its own flags, so that only they may use its instructions (the test runs
# them only on a CPU that has them).
SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
# The kernels unoptimized (-O0): every load and store of the source stays in
# the code and is checked, and the build takes a fifth of the CPU time of
# -O1 (the test list's AVX2 part 1: 9.8 s against 49 s; test_kernels_asan
# runs 105 s against 88 s on two cores), line tables for the reports
SAN_KFLAGS := -O0 -gline-tables-only $(SAN_FLAGS)
# and every prefetch a checked read of its address, every kernel prefetching
# its next work item whatever the size (tests/prefetch_check.h)
SAN_KFLAGS += -DMHA_PREFETCH_MIN=0 -include tests/prefetch_check.h
$(TK)/%-asan.o: $(TK)/%.c $(TARGETS_MK) tests/prefetch_check.h
	@echo "  CC      $< (ASan, UBSan)"
	@$(CC) $(KFLAGS) $(SAN_KFLAGS) $(MHA_CFLAGS_$(part_target)) -I. -c $< -o $@
$(BUILD)/tests/gen-asan/%.o: generated/%.c $(TARGETS_MK) tests/prefetch_check.h
	@mkdir -p $(@D)
	@echo "  CC      $< (ASan, UBSan)"
	@$(CC) $(KFLAGS) $(SAN_KFLAGS) $(call gflags,$*) -c $< -o $@
$(BUILD)/tests/test_kernels_asan: tests/test_kernels.c tests/check.c tests/props.c $(wildcard runtime/*.c) \
		$(TK)/kernels.inc $(TK)/count.h $(TARGETS_MK) \
		$(call part_of,$(HOST_TARGETS),asan) \
		$(patsubst generated/%.c,$(BUILD)/tests/gen-asan/%.o,$(GEN_HOST))
	@echo "  CC      $@ (ASan, UBSan)"
	@$(CC) $(KFLAGS) -O1 -g $(SAN_FLAGS) -D_POSIX_C_SOURCE=200809L \
		$(CRIT_CFLAGS) -I$(TK) -I$(BUILD)/tests -I. tests/test_kernels.c tests/check.c tests/props.c \
		$(wildcard runtime/*.c) $(filter %.o,$^) $(CRIT_LIBS) -lm -o $@
# the layers too, every file built with AddressSanitizer and UBSan (the
# layers with their target's flags)
$(TL)/%/all-asan.o: $(TL)/%/all.c $(TARGETS_MK) tests/prefetch_check.h
	@echo "  CC      $< (ASan, UBSan)"
	@$(CC) $(KFLAGS) $(SAN_KFLAGS) $(MHA_CFLAGS_$*) -I. -c $< -o $@
$(BUILD)/tests/test_layer_asan: tests/test_layer.c tests/layer_check.c tests/check.c \
		tests/props.c $(wildcard runtime/*.c) $(TL)/layers.inc $(TK)/count.h \
		$(TARGETS_MK) $(foreach t,$(HOST_TARGETS),$(TL)/$t/all-asan.o)
	@echo "  CC      $@ (ASan, UBSan)"
	@$(CC) $(KFLAGS) -O1 -g $(SAN_FLAGS) -D_POSIX_C_SOURCE=200809L \
		$(CRIT_CFLAGS) -I$(TK) -I$(BUILD)/tests -I. tests/test_layer.c \
		tests/layer_check.c tests/check.c tests/props.c $(wildcard runtime/*.c) \
		$(filter %.o,$^) $(CRIT_LIBS) -lm -o $@
# the --target list kernels, compiled by clang and by gcc
$(BUILD)/tests/test_dispatch_%: $(BUILD)/tests/test_dispatch.o $(BUILD)/tests/check.o \
		$(BUILD)/tests/props.o $(RT_OBJS) $(DISP)/all-%.o
	@echo "  LD      $@"
	@$(CC) $^ $(TEST_LIBS) -pthread -o $@
# the layers of tests/layers.list, compiled by clang and by gcc
$(BUILD)/tests/test_layer.o: $(TL)/layers.inc $(TK)/count.h
LAYER_TEST_OBJS := $(BUILD)/tests/test_layer.o $(BUILD)/tests/layer_check.o \
                   $(BUILD)/tests/check.o $(BUILD)/tests/props.o $(RT_OBJS)
$(BUILD)/tests/test_layer_cc: $(LAYER_TEST_OBJS) $(TARGETS_MK) \
		$(foreach t,$(HOST_TARGETS),$(TL)/$t/all-cc.o)
	@echo "  LD      $@"
	@$(CC) $(filter %.o,$^) $(TEST_LIBS) -o $@
$(BUILD)/tests/test_layer_gcc: $(LAYER_TEST_OBJS) $(TARGETS_MK) \
		$(foreach t,$(HOST_TARGETS),$(TL)/$t/all-gcc.o)
	@echo "  LD      $@"
	@$(GCC) $(filter %.o,$^) $(TEST_LIBS) -fopenmp -o $@
# runs build/mhagen tune; picked kernels are loaded with dlopen and checked
$(BUILD)/tests/test_tune: $(BUILD)/tests/test_tune.o $(BUILD)/tests/files.o \
		$(BUILD)/tests/check.o $(RT_OBJS) | $(MHAGEN)
	@echo "  LD      $@"
	@$(CC) $^ $(TEST_LIBS) -ldl -o $@
# the tuner's search alone, measuring through a fake callback
$(BUILD)/tests/test_search: $(BUILD)/tests/test_search.o \
		$(BUILD)/generator/tunesearch.o $(BUILD)/generator/tuneprogress.o \
		$(BUILD)/runtime/mha_time.o
	@echo "  LD      $@"
	@$(CC) $^ $(CRIT_LIBS) -lm -o $@
# the Python package against the reference, which it loads as a shared object
$(BUILD)/tests/libpyref.so: tests/pyref.c runtime/mha_ref.c runtime/mha_ref.h \
		runtime/mha_abi.h runtime/mha_kvstore.h | $(BUILD)/tests
	@echo "  CC      $@"
	@$(CC) $(WARN) $(CFLAGS) -D_POSIX_C_SOURCE=200809L -fPIC -shared \
		tests/pyref.c runtime/mha_ref.c -lm -o $@
$(BUILD)/tests/test_python: $(BUILD)/tests/test_python.o $(BUILD)/tests/files.o \
		| $(MHAGEN) $(BUILD)/tests/libpyref.so
	@echo "  LD      $@"
	@$(CC) $^ $(CRIT_LIBS) -o $@
$(BUILD)/tests/test_neon.o: $(TK)/count.h
$(BUILD)/tests/test_neon: $(BUILD)/tests/test_neon.o | $(NEON_DRIVERS)
	@echo "  LD      $@"
	@$(CC) $^ $(TEST_LIBS) -o $@

# The cross-architecture side: the same checks built for CROSS_ARCH, run
# under qemu by test_neon.  Each file is an object of its own (the kernels in
# their KERNEL_PARTS parts, as on the host), so that the cross compiles
# spread over the cores with the rest of the build; every object depends on
# every header the drivers include.
XO := $(BUILD)/tests/aarch64
NEON_SRCS = tests/neon_check.c tests/check.c tests/ulp.c tests/exps.c runtime/mha_ref.c \
            runtime/mha_buf.c tests/layer_check.c runtime/mha_layer_ref.c \
            $(foreach t,$(CROSS_TARGETS),$(foreach p,$(KERNEL_PARTS),$(TK)/$t/part-$p.c) \
                $(TL)/$t/all.c $(EXP)/mha_exp_$t.c $(EXP)/mha_expfast_$t.c) \
            $(GEN_CROSS)
NEON_HDRS = tests/check.h tests/registry.h tests/ulp.h tests/layer_check.h \
            $(wildcard runtime/*.h) $(TK)/kernels.inc $(EXP)/exp.inc $(EXP)/expfast.inc \
            $(TL)/layers.inc $(foreach t,$(CROSS_TARGETS),$(TK)/$t/kernels.inc) \
            generated/kernels.inc $(TARGETS_MK)
neon_objs = $(patsubst %.c,$(XO)/%-$(1).o,$(NEON_SRCS))
XFLAGS = $(KFLAGS) -D_POSIX_C_SOURCE=200809L -I$(TK) -I$(BUILD)/tests -I.
# the generated files (not the drivers) with the kernels' cast warning too
$(XO)/$(BUILD)/%-clang.o $(XO)/generated/%-clang.o: XWARN = $(KWARN_CC)
$(XO)/$(BUILD)/%-gcc.o $(XO)/generated/%-gcc.o: XWARN = $(KWARN_GCC)
$(XO)/%-clang.o: %.c $(NEON_HDRS)
	@mkdir -p $(@D)
	@echo "  CC      $< (clang --target=aarch64-linux-gnu)"
	@$(CROSS_CLANG) $(XFLAGS) $(XWARN) -c $< -o $@
$(XO)/%-gcc.o: %.c $(NEON_HDRS)
	@mkdir -p $(@D)
	@echo "  GCC     $< (aarch64-linux-gnu-gcc)"
	@$(CROSS_GCC) $(XFLAGS) $(XWARN) -c $< -o $@
$(BUILD)/tests/neon_check_clang: $(call neon_objs,clang)
	@echo "  LD      $@ (clang --target=aarch64-linux-gnu)"
	@$(CROSS_CLANG) $^ -lm -o $@
$(BUILD)/tests/neon_check_gcc: $(call neon_objs,gcc)
	@echo "  LD      $@ (aarch64-linux-gnu-gcc)"
	@$(CROSS_GCC) $^ -lm -o $@

# ---- robustness: the generator under ASan+UBSan and valgrind on the
# example commands, and each libFuzzer harness for FUZZ_SECONDS over its
# committed corpus (seeds and every input that once crashed it)
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 25
FUZZ := $(BUILD)/fuzz
FUZZ_FLAGS := -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
              -DMAX_STEPS=2000L "-DMAX_BYTES=((size_t)64 << 20)"
GEN_SRCS := generator/spec.c generator/knobs.c generator/cli.c generator/gen.c \
            generator/fail.c runtime/mha_cpu.c $(BUILD)/generator/templates_embed.c
# the whole program: the generator, the tuner and its embedded harness
PROG_SRCS := generator/main.c generator/depfile.c $(GEN_SRCS) generator/tune.c generator/tunedb.c \
             generator/tuneopts.c generator/tunesweep.c \
             generator/tunespace.c generator/tunesearch.c \
             generator/tunerun.c generator/tunereport.c generator/tuneprogress.c \
             runtime/mha_time.c \
             $(BUILD)/generator/harness_embed.c
.PHONY: robust robust-build fuzz
robust-build: $(BUILD)/mhagen_asan $(BUILD)/mhagen_vg $(FUZZ)/fuzz_spec \
              $(FUZZ)/fuzz_engine $(MHAGEN)
# mhagen as built normally, with DWARF 4 debug info for valgrind to read
$(BUILD)/mhagen_vg: $(PROG_SRCS) $(wildcard generator/*.h)
	@echo "  CC      $@ (for valgrind)"
	@$(CC) $(WARN) $(CFLAGS) -gdwarf-4 -D_POSIX_C_SOURCE=200809L $(LUA_CFLAGS) \
		-Igenerator $(PROG_SRCS) $(LUA_LIBS) -lm -o $@
$(BUILD)/mhagen_asan: $(PROG_SRCS) $(wildcard generator/*.h)
	@echo "  CC      $@ (ASan, UBSan)"
	@$(CC) $(WARN) -O1 -g $(SAN_FLAGS) -D_POSIX_C_SOURCE=200809L $(LUA_CFLAGS) \
		-Igenerator $(PROG_SRCS) $(LUA_LIBS) -lm -o $@
$(FUZZ)/fuzz_%: fuzz/fuzz_%.c $(GEN_SRCS) $(wildcard generator/*.h)
	@mkdir -p $(@D)
	@echo "  CC      $@ (libFuzzer, ASan, UBSan)"
	@$(FUZZ_CC) $(WARN) $(FUZZ_FLAGS) -D_POSIX_C_SOURCE=200809L $(LUA_CFLAGS) \
		-Igenerator $< $(GEN_SRCS) $(LUA_LIBS) -lm -o $@
robust: robust-build
	@MHAGEN=$(MHAGEN) MHAGEN_ASAN=$(BUILD)/mhagen_asan MHAGEN_VG=$(BUILD)/mhagen_vg \
		tools/robust.sh
	@$(MAKE) --no-print-directory fuzz
# both harnesses at once, one per core
fuzz: $(FUZZ)/fuzz_spec $(FUZZ)/fuzz_engine
	@for t in spec engine; do \
		echo "  FUZZ    $$t for $(FUZZ_SECONDS) s"; \
		mkdir -p $(FUZZ)/corpus-$$t $(FUZZ)/crash-$$t; \
		{ $(FUZZ)/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -timeout=20 \
			-rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 \
			-dict=fuzz/$$t.dict \
			-artifact_prefix=$(FUZZ)/crash-$$t/ \
			$(FUZZ)/corpus-$$t fuzz/corpus/$$t > $(FUZZ)/$$t.log 2>&1; \
		  echo $$? > $(FUZZ)/$$t.rc; } & \
	done; wait; \
	for t in spec engine; do \
		[ "$$(cat $(FUZZ)/$$t.rc)" = 0 ] \
			|| { tail -n 40 $(FUZZ)/$$t.log; echo "fuzz: $$t failed"; exit 1; }; \
		grep -E "stat::number_of_executed_units|Done" $(FUZZ)/$$t.log | tail -n 2; \
	done

# ---- tuning: default against tuned kernels of the bench shapes (TUNE_TARGET), and
# how near the budgeted search comes to exhaustive (never part of the tests)
TUNE_BUDGET ?= 900
TUNE_TARGET ?= avx2
.PHONY: tune-bench tune-nearness
tune-bench: $(MHAGEN)
	@TUNE_TARGET=$(TUNE_TARGET) tools/tune-bench.sh $(MHAGEN) $(BUILD)/tune-bench-$(TUNE_TARGET) $(TUNE_BUDGET)
tune-nearness: $(MHAGEN)
	@tools/tune-nearness.sh $(MHAGEN) $(BUILD)/tune-nearness 60 \
		"--h 4 --dk 32 --seq 64 --target scalar" \
		"--h 4 --dk 32 --seq 64 --mask causal --target avx2" \
		"--h 2 --dk 64 --seq 1 --seq-kv 512 --target avx2"

# ---- benchmarks (never part of the tests)
include bench/bench.mk

-include $(wildcard $(BUILD)/*/*.d $(BUILD)/*/*/*.d)
