# SPDX-License-Identifier: Apache-2.0
# mk/dvfs.mk: pillar 1c helper programs.
#   build/tests/stats_tool  src/stats front end for tests/ref_stats.py (scipy/sklearn)
EXTRA_BINS += $(BUILD)/tests/stats_tool
$(BUILD)/tests/stats_tool: $(BUILD)/tests/stats_tool.o $(BUILD)/libgpuos_core.a
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)
-include $(BUILD)/tests/stats_tool.d
