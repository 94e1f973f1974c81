# SPDX-License-Identifier: Apache-2.0
# mk/tmap.mk: the tensor-map tests' programs (issue 43; tests/t_cudashim_tmap.sh):
#   build/tests/tmap_raw        TMAP_ENCODE through libgpuos, as a hostile tenant sends it
#   build/tests/cudashim_tmap   cuTensorMapEncode* through gpuos's libcuda (needs cuda.h)
EXTRA_BINS += $(BUILD)/tests/tmap_raw
$(BUILD)/tests/tmap_raw: $(BUILD)/tests/tmap_raw.o $(BUILD)/libgpuos_core.a
	$(Q)$(CC) $(CFLAGS) -o $@ $< $(CORE_LINK) $(LDLIBS)
-include $(BUILD)/tests/tmap_raw.d
ifneq ($(CUDA_H),)
EXTRA_BINS += $(BUILD)/tests/cudashim_tmap
$(BUILD)/tests/cudashim_tmap: tests/cudashim_tmap.c tests/cudashim_check.h $(SHIM)/libcuda.so.1
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) -o $@ $< -L$(SHIM) -lcuda -ldl $(LDLIBS)
-include $(BUILD)/tests/cudashim_tmap.d
endif
