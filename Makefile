# mhagen: build the generator, test kernels against the reference, bench.
# make demo    build mhagen, generate the default kernel, check and time it
# make test    every test (Criterion), including NEON under qemu-aarch64

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

CFLAGS ?= -O2 -g
WARN := -std=c11 -Wall -Wextra -Werror
ALL_CFLAGS = $(WARN) $(CFLAGS) -D_POSIX_C_SOURCE=200809L -MMD -MP
LUA_CFLAGS = $(shell $(PKG_CONFIG) --cflags lua5.4)
LUA_LIBS = $(shell $(PKG_CONFIG) --libs lua5.4)
CRIT_CFLAGS = $(shell $(PKG_CONFIG) --cflags criterion)
CRIT_LIBS = $(shell $(PKG_CONFIG) --libs criterion)
AVX2_FLAGS := -mavx2 -mfma

TEMPLATES := $(sort $(wildcard templates/*.lua templates/*.in templates/targets/*.lua))
GEN_OBJS := $(BUILD)/generator/spec.o $(BUILD)/generator/gen.o \
            $(BUILD)/generator/templates_embed.o $(BUILD)/runtime/mha_cpu.o
RT_OBJS := $(BUILD)/runtime/mha_ref.o $(BUILD)/runtime/mha_buf.o \
           $(BUILD)/runtime/mha_cpu.o $(BUILD)/runtime/mha_time.o
MHAGEN := $(BUILD)/mhagen

.PHONY: all deps demo test generate install clean bench
all: $(MHAGEN)

deps:
	@./tools/install-deps.sh

$(BUILD) $(BUILD)/generator $(BUILD)/runtime $(BUILD)/tests $(BUILD)/bench $(BUILD)/tools:
	@mkdir -p $@

$(BUILD)/generator/%.o: generator/%.c | $(BUILD)/generator
	@echo "  CC      $<"
	@$(CC) $(ALL_CFLAGS) $(LUA_CFLAGS) -c $< -o $@

$(BUILD)/generator/templates_embed.o: $(BUILD)/generator/templates_embed.c
	@echo "  CC      $<"
	@$(CC) $(ALL_CFLAGS) -Igenerator -c $< -o $@

$(BUILD)/generator/templates_embed.c: $(BUILD)/tools/embed $(TEMPLATES) | $(BUILD)/generator
	@echo "  EMBED   templates"
	@$(BUILD)/tools/embed $@ . $(TEMPLATES)

$(BUILD)/tools/embed: tools/embed.c | $(BUILD)/tools
	@echo "  CC      $<"
	@$(CC) $(ALL_CFLAGS) $< -o $@

$(BUILD)/runtime/%.o: runtime/%.c | $(BUILD)/runtime
	@echo "  CC      $<"
	@$(CC) $(ALL_CFLAGS) -c $< -o $@

$(MHAGEN): $(BUILD)/generator/main.o $(GEN_OBJS)
	@echo "  LD      $@"
	@$(CC) $(CFLAGS) $^ $(LUA_LIBS) -lm -o $@

install: $(MHAGEN)
	install -d $(DESTDIR)$(BINDIR)
	install -m 755 $(MHAGEN) $(DESTDIR)$(BINDIR)/mhagen

clean:
	rm -rf $(BUILD)

-include $(wildcard $(BUILD)/*/*.d $(BUILD)/*/*/*.d)
