# SPDX-License-Identifier: Apache-2.0
# mk/pd.mk: prefill/decode multiplexing on the GPU (issue 45, tests/gpu/pd_multiplex.sh).
#   build/bench/pd_multiplex  built by `make` where nvcc is found (the GPU machine
#                             runs what was built here); cuBLAS is opened at run time
# Compiled by nvcc for sm_90, linked by the C++ compiler against the core archive
# and the static CUDA runtime, like mk/attn.mk's attn_decode (no -Wshadow: in C++
# green_ops.h's gos_green_split names both a struct and a function).
ifneq ($(NVCC),)
EXTRA_BINS += $(BUILD)/bench/pd_multiplex
endif
$(BUILD)/bench/pd_multiplex.o: bench/pd_multiplex.cu bench/pd_kernels.cuh bench/attn_kernel.cuh bench/attn_plan.h \
		include/gpuos/pmem.h include/gpuos/pmem_core.h include/gpuos/pmem_dev.cuh src/place/pdplan.h
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  NVCC  $<")
	$(Q)$(NVCC) $(ATTN_NVCC_FLAGS) -Xcompiler -Wno-shadow -Isrc -c -o $@ $< > $(BUILD)/bench/pd_multiplex.ptxas.log 2>&1 || \
		{ cat $(BUILD)/bench/pd_multiplex.ptxas.log; exit 1; }
	$(Q)grep -i -E "warning|error" $(BUILD)/bench/pd_multiplex.ptxas.log || true
$(BUILD)/bench/pd_multiplex: $(BUILD)/bench/pd_multiplex.o $(BUILD)/libgpuos_core.a
	@$(if $(Q),echo "  LINK  $@")
	$(Q)$(CXX) -pthread -o $@ $< $(CORE_LINK) -L$(ATTN_CUDA_LIB) -lcudart_static $(LDLIBS)
