# SPDX-License-Identifier: Apache-2.0
# mk/serve.mk: pillar 3 helper programs.
#   build/tests/serve_client  multi-purpose test client of `gpuos serve` (tests/t_serve*.sh)
#   build/bench/vgpu_bench    native-vs-gpuos benchmark (bench/vgpu.sh)
# Linked with $(CORE_LINK), as every program of the Makefile.
EXTRA_BINS += $(BUILD)/tests/serve_client $(BUILD)/bench/vgpu_bench
$(BUILD)/tests/serve_client: $(BUILD)/tests/serve_client.o $(BUILD)/libgpuos_core.a
	$(Q)$(CC) $(CFLAGS) -o $@ $< $(CORE_LINK) $(LDLIBS)
$(BUILD)/bench/vgpu_bench: $(BUILD)/bench/vgpu_bench.o $(BUILD)/bench/vgpu_lib.o $(BUILD)/bench/vgpu_share.o $(BUILD)/bench/vgpu_work.o $(BUILD)/bench/vgpu_mixed.o $(BUILD)/bench/vgpu_swappath.o $(BUILD)/libgpuos_core.a
	$(Q)$(CC) $(CFLAGS) -o $@ $(filter %.o,$^) $(CORE_LINK) $(LDLIBS)
-include $(BUILD)/tests/serve_client.d $(BUILD)/bench/vgpu_bench.d $(BUILD)/bench/vgpu_share.d $(BUILD)/bench/vgpu_lib.d $(BUILD)/bench/vgpu_work.d $(BUILD)/bench/vgpu_mixed.d $(BUILD)/bench/vgpu_swappath.d
