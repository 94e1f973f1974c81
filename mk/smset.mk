# SPDX-License-Identifier: Apache-2.0
# mk/smset.mk: issue 13 programs.
#   build/bench/colocation      the co-location experiment on a real GPU (bench/colocation.sh)
#   build/bench/spatial_client  one tenant of bench/spatial.sh (libgpuos client)
EXTRA_BINS += $(BUILD)/bench/colocation $(BUILD)/bench/spatial_client
$(BUILD)/bench/colocation: $(BUILD)/bench/colocation.o $(BUILD)/libgpuos_core.a
	$(Q)$(CC) $(CFLAGS) -o $@ $< $(CORE_LINK) $(LDLIBS)
$(BUILD)/bench/spatial_client: $(BUILD)/bench/spatial_client.o $(BUILD)/libgpuos_core.a
	$(Q)$(CC) $(CFLAGS) -o $@ $< $(CORE_LINK) $(LDLIBS)
-include $(BUILD)/bench/colocation.d $(BUILD)/bench/spatial_client.d
