# SPDX-License-Identifier: Apache-2.0
# mk/cudashim.mk: gpuos's own libcuda.so.1 and libnvidia-ml.so.1 (issue 11;
# docs/readme-cudashim.md), loaded by unmodified CUDA programs through
# `gpuos run`. Position-independent builds of the client library (client,
# proto, status) and src/cudashim/; the Driver API names come from the cuda.h at
# hand (tools/gen_cudashim_names.sh), every one not implemented becomes a stub
# that names itself (tools/gen_cudashim_stubs.sh). Needs cuda.h (types only):
# without it neither library is built and the tests that need them skip.
#   build/shim/libcuda.so.1        the Driver API on a vGPU
#   build/shim/libnvidia-ml.so.1   NVML for tenants
#   build/tests/cudashim_drv       Driver-API test program (tests/t_cudashim.sh)
ifneq ($(CUDA_H),)
SHIM := $(BUILD)/shim
# No sanitizers in a library that uninstrumented programs load.
SHIM_CFLAGS := $(filter-out -fsanitize=% -fno-sanitize-recover=%,$(CFLAGS)) -fPIC -fvisibility=hidden -I$(SHIM)/gen
SHIM_CORE := $(CLIENT_SRC) src/device/gpc_clusters.c src/device/modimage.c
SHIM_CUDA := init devices context memory vmm pool copy module launch stream graph tmap real entry image errors exports daemon_ext
# the other names of the entry points (src/cudashim/aliases.txt): symbols at the same addresses
SHIM_ALIASES := src/cudashim/aliases.txt
SHIM_DEFSYM = $(shell sed -n 's/^\(cu[A-Za-z0-9_]*\)[[:space:]]\{1,\}\(cu[A-Za-z0-9_]*\).*/-Wl,--defsym=\1=\2/p' $(SHIM_ALIASES))
SHIM_OBJ := $(SHIM_CUDA:%=$(SHIM)/pic/src/cudashim/%.o)
SHIM_PIC := $(SHIM_CORE:%.c=$(SHIM)/pic/%.o)
EXTRA_BINS += $(SHIM)/libcuda.so.1 $(SHIM)/libnvidia-ml.so.1 $(BUILD)/tests/cudashim_drv $(BUILD)/tests/cudashim_exports \
	$(BUILD)/tests/cudashim_legacy $(BUILD)/tests/cudashim_vmm

$(SHIM)/gen/names.inc: tools/gen_cudashim_names.sh $(CUDA_H)
	$(Q)CC=$(CC) sh tools/gen_cudashim_names.sh $(CUDA_HOME)/include $(SHIM)/gen
$(SHIM)/gen/symbols.txt $(SHIM)/gen/symbols.inc $(SHIM)/gen/errors.inc $(SHIM)/gen/versions.inc: $(SHIM)/gen/names.inc

$(SHIM)/pic/%.o: %.c $(SHIM)/gen/names.inc
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC    $< (PIC)")
	$(Q)$(CC) $(SHIM_CFLAGS) -c -o $@ $<

$(SHIM)/gen/stubs.c: $(SHIM)/gen/symbols.txt $(SHIM_OBJ) $(SHIM_ALIASES) tools/gen_cudashim_stubs.sh
	$(Q)sh tools/gen_cudashim_stubs.sh $(SHIM)/gen/symbols.txt $(SHIM_ALIASES) $@ $(SHIM_OBJ)
$(SHIM)/gen/stubs.o: $(SHIM)/gen/stubs.c
	$(Q)$(CC) $(SHIM_CFLAGS) -Wno-missing-prototypes -c -o $@ $<

$(SHIM)/libcuda.so.1: $(SHIM_OBJ) $(SHIM)/pic/src/cudashim/procaddr.o $(SHIM)/gen/stubs.o $(SHIM_PIC) $(SHIM_ALIASES)
	@$(if $(Q),echo "  LINK  $@")
	$(Q)$(CC) -shared -Wl,-soname,libcuda.so.1 -Wl,-z,defs $(SHIM_DEFSYM) -o $@ $(filter %.o,$^) -lpthread -lrt
	$(Q)ln -sf libcuda.so.1 $(SHIM)/libcuda.so

$(SHIM)/libnvidia-ml.so.1: $(SHIM)/pic/src/cudashim/nvidia_ml.o $(SHIM_PIC)
	@$(if $(Q),echo "  LINK  $@")
	$(Q)$(CC) -shared -Wl,-soname,libnvidia-ml.so.1 -Wl,-z,defs -o $@ $^ -lpthread -lrt
	$(Q)ln -sf libnvidia-ml.so.1 $(SHIM)/libnvidia-ml.so

# The test program links against our libcuda like any Driver API program.
$(BUILD)/tests/cudashim_drv: tests/cudashim_drv.c $(SHIM)/libcuda.so.1
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) -o $@ $< -L$(SHIM) -lcuda $(LDLIBS)

# The CUDA 4 era API and what cuda.h added since (deprecated entry points on purpose).
$(BUILD)/tests/cudashim_legacy: tests/cudashim_legacy.c tests/cudashim_check.h $(SHIM)/libcuda.so.1
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) -Wno-deprecated-declarations -o $@ $< -L$(SHIM) -lcuda $(LDLIBS)

# Malformed module images through the Driver API (tests/t_cudashim_badimg.sh).
EXTRA_BINS += $(BUILD)/tests/cudashim_badimg
$(BUILD)/tests/cudashim_badimg: tests/cudashim_badimg.c $(SHIM)/libcuda.so.1
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) -o $@ $< -L$(SHIM) -lcuda $(LDLIBS)

# CUDA's VMM on a vGPU (tests/t_cudashim_vmm.sh).
$(BUILD)/tests/cudashim_vmm: tests/cudashim_vmm.c tests/cudashim_check.h $(SHIM)/libcuda.so.1
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) -o $@ $< -L$(SHIM) -lcuda $(LDLIBS)

$(BUILD)/tests/cudashim_exports: tests/cudashim_exports.c $(SHIM)/libcuda.so.1
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) -o $@ $< -L$(SHIM) -lcuda -ldl $(LDLIBS)

# A stand-in for NVIDIA's libcuda.so.1 where the shim opens it by path (real.c,
# under GPUOS_CUDASHIM_LT=real; t_cudashim.sh: never loaded otherwise).
EXTRA_BINS += $(BUILD)/tests/fake_nvidia/libcuda.so.1
$(BUILD)/tests/fake_nvidia/libcuda.so.1: tests/fake_nvidia_cuda.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(filter-out -MMD -MP -fsanitize=% -fno-sanitize-recover=%,$(CFLAGS)) -fPIC -shared -fvisibility=hidden \
		-Wl,-soname,libcuda.so.1 -o $@ $<

-include $(SHIM_OBJ:.o=.d) $(SHIM_PIC:.o=.d) $(SHIM)/pic/src/cudashim/procaddr.d $(SHIM)/pic/src/cudashim/nvidia_ml.d
-include $(BUILD)/tests/cudashim_drv.d $(BUILD)/tests/cudashim_exports.d $(BUILD)/tests/cudashim_legacy.d \
	$(BUILD)/tests/cudashim_vmm.d $(BUILD)/tests/cudashim_badimg.d
endif
ifneq ($(CUDA_H),)
EXTRA_BINS += $(BUILD)/tests/cudashim_nvml
endif
$(BUILD)/tests/cudashim_nvml: tests/cudashim_nvml.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) -o $@ $< -ldl
# The image reader alone (no cuda.h needed): tests/t_cudashim.sh.
EXTRA_BINS += $(BUILD)/tests/cudashim_image
IMAGE_READER := src/cudashim/image.c src/device/modimage.c src/common/status.c src/common/log.c
$(BUILD)/tests/cudashim_image: tests/cudashim_image.c $(IMAGE_READER) src/cudashim/shim.h src/device/modimage.h
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(filter-out -MMD -MP,$(CFLAGS)) -o $@ tests/cudashim_image.c $(IMAGE_READER) -ldl
# Its mutation fuzzer (tests/ci_hostile.sh runs it on the sanitizer build).
EXTRA_BINS += $(BUILD)/tests/fuzz_image
$(BUILD)/tests/fuzz_image: tests/fuzz_image.c tests/fuzz_util.h $(IMAGE_READER) src/cudashim/shim.h src/device/modimage.h
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(filter-out -MMD -MP,$(CFLAGS)) -o $@ tests/fuzz_image.c $(IMAGE_READER) -ldl
# A Driver API call tracer for finding faults (tools/cutrace/cutrace.c):
# build/shim/trace/libcuda.so.1 in front of NVIDIA's libcuda or ours.
ifneq ($(CUDA_H),)
EXTRA_BINS += $(SHIM)/trace/libcuda.so.1
$(SHIM)/trace/tramp.S: $(SHIM)/gen/symbols.txt tools/cutrace/gen_tramp.sh
	@mkdir -p $(dir $@)
	$(Q)sh tools/cutrace/gen_tramp.sh $< $@
$(SHIM)/trace/libcuda.so.1: tools/cutrace/cutrace.c tools/cutrace/entry.S $(SHIM)/trace/tramp.S
	@$(if $(Q),echo "  LINK  $@")
	$(Q)$(CC) $(filter-out -MMD -MP,$(SHIM_CFLAGS)) -shared -Wl,-soname,libcuda.so.1 -Wl,-z,defs -o $@ $^ -ldl -lpthread
endif
