# SPDX-License-Identifier: Apache-2.0
# mk/place.mk: pillar 2 helper programs.
#   build/bench/placement_bench  partition-local memory on the GPU (bench/placement.sh)
EXTRA_BINS += $(BUILD)/bench/placement_bench
$(BUILD)/bench/placement_bench: $(BUILD)/bench/placement_bench.o $(BUILD)/libgpuos_core.a
	$(Q)$(CC) $(CFLAGS) -o $@ $< $(CORE_LINK) $(LDLIBS)
-include $(BUILD)/bench/placement_bench.d
#   build/bench/placement_client  the same through `gpuos serve` as a vGPU client (bench/placement_client.sh)
EXTRA_BINS += $(BUILD)/bench/placement_client
$(BUILD)/bench/placement_client: $(BUILD)/bench/placement_client.o $(BUILD)/libgpuos_core.a
	$(Q)$(CC) $(CFLAGS) -o $@ $< $(CORE_LINK) $(LDLIBS)
-include $(BUILD)/bench/placement_client.d
