# SPDX-License-Identifier: Apache-2.0
# mk/parts.mk: issue 26 (N partitions, dies, tiers) helper programs.
#   build/tests/partgen  writes a B200- or MI300X-shaped chip and its truth (tests/t_parts.sh)
EXTRA_BINS += $(BUILD)/tests/partgen
$(BUILD)/tests/partgen: $(BUILD)/tests/partgen_tool.o $(BUILD)/libgpuos_core.a
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)
-include $(BUILD)/tests/partgen_tool.d
