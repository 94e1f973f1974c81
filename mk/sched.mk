# SPDX-License-Identifier: Apache-2.0
# mk/sched.mk: pillar 3 scheduler programs.
#   build/bench/sched_sim  fairness table of FIFO / Credit / BAND on the simulator
#                          (JSON, or --markdown for docs/readme-sched.md)
EXTRA_BINS += $(BUILD)/bench/sched_sim
$(BUILD)/bench/sched_sim: $(BUILD)/bench/sched_sim.o $(BUILD)/libgpuos_core.a
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)
-include $(BUILD)/bench/sched_sim.d
