# SPDX-License-Identifier: Apache-2.0
# mk/shm_client.mk: build/tests/shm_client, the shared-memory test client of tests/t_shm.sh.
EXTRA_BINS += $(BUILD)/tests/shm_client
$(BUILD)/tests/shm_client: $(BUILD)/tests/shm_client.o $(BUILD)/libgpuos_core.a
	$(Q)$(CC) $(CFLAGS) -o $@ $< $(CORE_LINK) $(LDLIBS)
-include $(BUILD)/tests/shm_client.d
