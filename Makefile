# SPDX-License-Identifier: Apache-2.0
# gpuos: one plain Makefile for the CPU-only build and the CUDA build.
#   make deps       install the Debian packages needed (tools/deps.sh)
#   make            build/gpuos, build/libgpuos.so.1 + .a, man pages (kernels if nvcc is found);
#                   no test dependencies (cmocka is needed by `make test` only)
#   make test       unit tests (cmocka), reference checks (scipy/sklearn), CLI tests
#   make install    PREFIX=/usr/local DESTDIR= (mk/install.mk)
#   make test-gpu   everything that needs the real GPU (run through the device tool)
#   make bench      benchmarks (bench/)
#   make attn-decode  build/bench/attn_decode (needs nvcc; bench/attn_decode.sh runs it)
#   make V=1        show the commands
# Without nvcc the kernel table is empty; without cuda.h the cuda backend is a stub
# that says so. Both builds give a working binary for the simulated device.

BUILD ?= build
CC ?= cc
Q := $(if $(V),,@)

CUDA_HOME ?= $(firstword $(wildcard /usr/local/cuda))
NVCC ?= $(firstword $(wildcard $(CUDA_HOME)/bin/nvcc) $(shell command -v nvcc 2>/dev/null))
ifeq ($(NVCC),none)
override NVCC :=
endif
CUDA_H := $(wildcard $(CUDA_HOME)/include/cuda.h)
NVCC_ARCH ?= -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90

CFLAGS ?= -O2 -g
CFLAGS += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter -Wshadow -Iinclude -Isrc -I$(BUILD) -MMD -MP -pthread
# SANITIZE=1: address + undefined-behaviour sanitizers, e.g. make BUILD=build-asan
# SANITIZE=1 (tests/ci_hostile.sh runs the daemon's tests on such a build).
ifneq ($(SANITIZE),)
CFLAGS += -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
endif
LDLIBS := -Wl,-Bstatic -ljansson -Wl,-Bdynamic -ldl -lm -lpthread -lrt
# The daemon's sd_notify (libsystemd) and metrics endpoint (libmicrohttpd) are
# opened at run time (src/serve/syslibs.c): the binary loads where they are absent.

# Every .c under src/ (src/ROOM/*.c, and the device backends' src/device/BACKEND/*.c)
# belongs to the core library, except the CLI entry point and the CUDA backend's
# folder (src/device/cuda/), chosen below: its files, or its stub alone.
# SRC_EXCLUDE (patterns) leaves parts out, e.g. while one is being rewritten.
# src/cudashim/ is not core: it builds libcuda.so.1 (mk/cudashim.mk).
ALL_SRC := $(filter-out $(SRC_EXCLUDE) src/cudashim/%,$(sort $(wildcard src/*/*.c src/device/*/*.c)))
CUDA_SRC := $(filter src/device/cuda/%.c,$(ALL_SRC))
CORE_SRC := $(filter-out src/cli/main.c $(CUDA_SRC),$(ALL_SRC))
ifneq ($(CUDA_H),)
CORE_SRC += $(filter-out src/device/cuda/cuda_stub.c,$(CUDA_SRC))
CFLAGS += -I$(CUDA_HOME)/include -DGOS_HAVE_CUDA_H=1
$(info gpuos: CUDA headers from $(CUDA_HOME): cuda backend enabled)
else
CORE_SRC += src/device/cuda/cuda_stub.c
$(info gpuos: no cuda.h (CUDA_HOME=$(CUDA_HOME)): cuda backend is a stub, simulated device only)
endif

# libgpuos (libgpuos.so.1, libgpuos.a): the client and what it calls, nothing more.
CLIENT_SRC := $(sort $(wildcard src/client/*.c)) src/proto/proto.c src/proto/req.c src/proto/wire.c src/common/status.c src/common/log.c

KERNELS := $(sort $(wildcard kernels/*.cu))
ifneq ($(NVCC),)
KERNEL_NAMES := $(basename $(notdir $(KERNELS)))
$(info gpuos: kernels built with $(NVCC))
else
KERNEL_NAMES :=
$(info gpuos: no nvcc: built without kernels, real GPUs cannot be probed)
endif
FATBINS := $(KERNEL_NAMES:%=$(BUILD)/kernels/%.fatbin)

CORE_OBJ := $(CORE_SRC:%.c=$(BUILD)/%.o) $(BUILD)/kernels/table.o $(BUILD)/kernels/images.o
TEST_SRC := $(sort $(wildcard tests/test_*.c))
TEST_BIN := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)

.PHONY: all deps test test-gpu bench clean
# Keep intermediate objects (tests/*.o): no "rm" after the test summary line.
.SECONDARY:
all: $(BUILD)/gpuos $(BUILD)/libgpuos.a $(BUILD)/extra.stamp

deps:
	$(Q)sh tools/deps.sh

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC    $<")
	$(Q)$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/kernels/%.fatbin: kernels/%.cu kernels/*.cuh $(wildcard include/gpuos/*.cuh include/gpuos/pmem_core.h)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  NVCC  $<")
	$(Q)$(NVCC) -fatbin $(NVCC_ARCH) -O3 -Ikernels -Iinclude -o $@ $<

# The fatbins are embedded with .incbin; table.c names them.
$(BUILD)/kernels/images.S: $(FATBINS) tools/gen_kernel_table.sh
	@mkdir -p $(dir $@)
	$(Q)sh tools/gen_kernel_table.sh $(BUILD)/kernels $(KERNEL_NAMES)
$(BUILD)/kernels/table.c: $(BUILD)/kernels/images.S
$(BUILD)/kernels/images.o: $(BUILD)/kernels/images.S
	$(Q)$(CC) -c -o $@ $<
$(BUILD)/kernels/table.o: $(BUILD)/kernels/table.c
	$(Q)$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/libgpuos_core.a: $(CORE_OBJ)
	$(Q)rm -f $@ && ar rcs $@ $^

# Programs link the core archive like any library: every table (commands, probe
# sections, device pillars) names its entries as plain externs.
CORE_LINK := $(BUILD)/libgpuos_core.a

$(BUILD)/gpuos: $(BUILD)/src/cli/main.o $(BUILD)/libgpuos_core.a
	@$(if $(Q),echo "  LINK  $@")
	$(Q)$(CC) $(CFLAGS) -o $@ $< $(CORE_LINK) $(LDLIBS)

# The client library (pillar 3): only the objects libgpuos's own code needs
# (CLIENT_SRC), linked into one object whose only global symbols are the public
# API (gpuos_*), as the shared library's version script does: a program's own
# gos_* names cannot clash with the library's internals.
$(BUILD)/libgpuos.a: $(CLIENT_SRC:%.c=$(BUILD)/%.o)
	$(Q)$(CC) -r -nostdlib -o $(BUILD)/libgpuos.o $^ && \
		objcopy --wildcard --keep-global-symbol='gpuos_*' $(BUILD)/libgpuos.o && \
		rm -f $@ && ar rcs $@ $(BUILD)/libgpuos.o

$(BUILD)/tests/%: $(BUILD)/tests/%.o $(BUILD)/libgpuos_core.a
	$(Q)$(CC) $(CFLAGS) -o $@ $< $(CORE_LINK) -lcmocka $(LDLIBS)

# Extra programs (bench/, tests/ helpers) hook in through mk/*.mk fragments.
-include $(wildcard mk/*.mk)
$(BUILD)/extra.stamp: $(EXTRA_BINS)
	@touch $@

test: all $(TEST_BIN)
	$(Q)BUILD=$(BUILD) sh tests/run.sh

test-gpu: all $(TEST_BIN)
	$(Q)BUILD=$(BUILD) sh tests/gpu/run.sh

bench: all
	$(Q)BUILD=$(BUILD) sh bench/run.sh

clean:
	rm -rf $(BUILD)

-include $(CORE_OBJ:.o=.d) $(BUILD)/src/cli/main.d $(TEST_BIN:=.d)
