# SPDX-License-Identifier: Apache-2.0
# mk/attn.mk: decode attention on the partition-aware runtime (issue 26 item 3,
# bench/attn_decode.sh).
#   build/bench/attn_decode  needs nvcc; not built by `make` (`make attn-decode`,
#                            or the script, builds it)
# Compiled by nvcc for sm_90, linked by the C++ compiler against the core archive
# and the static CUDA runtime (the core opens libcuda itself).
ATTN_CUDA_LIB = $(abspath $(dir $(NVCC))/../lib64)
ATTN_NVCC_FLAGS = $(NVCC_ARCH) -O3 -std=c++17 -lineinfo -Iinclude -Ibench -Xptxas -v \
	-Xcompiler -Wall,-Wextra,-Wno-unused-parameter,-Wshadow
CXX ?= c++
.PHONY: attn-decode
attn-decode: $(BUILD)/bench/attn_decode
$(BUILD)/bench/attn_decode.o: bench/attn_decode.cu bench/attn_kernel.cuh bench/attn_plan.h include/gpuos/pmem.h \
		include/gpuos/pmem_core.h include/gpuos/pmem_dev.cuh
	$(if $(NVCC),,$(error $@ needs nvcc: none found (CUDA_HOME=$(CUDA_HOME), NVCC=$(NVCC))))
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  NVCC  $<")
	$(Q)$(NVCC) $(ATTN_NVCC_FLAGS) -c -o $@ $< > $(BUILD)/bench/attn_decode.ptxas.log 2>&1 || \
		{ cat $(BUILD)/bench/attn_decode.ptxas.log; exit 1; }
	$(Q)grep -i -E "warning|error" $(BUILD)/bench/attn_decode.ptxas.log || true
$(BUILD)/bench/attn_decode: $(BUILD)/bench/attn_decode.o $(BUILD)/libgpuos_core.a
	@$(if $(Q),echo "  LINK  $@")
	$(Q)$(CXX) -pthread -o $@ $< $(CORE_LINK) -L$(ATTN_CUDA_LIB) -lcudart_static $(LDLIBS)
