# SPDX-License-Identifier: Apache-2.0
# mk/shm.mk: issue 10 helper programs.
#   build/bench/shm_bench  shared device memory and swapping at the device layer
#                          (bench/shm.sh on a GPU, tests/t_shm_bench.sh on the simulated device)
EXTRA_BINS += $(BUILD)/bench/shm_bench
$(BUILD)/bench/shm_bench: $(BUILD)/bench/shm_bench.o $(BUILD)/libgpuos_core.a
	$(Q)$(CC) $(CFLAGS) -o $@ $< $(CORE_LINK) $(LDLIBS)
-include $(BUILD)/bench/shm_bench.d
