# SPDX-License-Identifier: Apache-2.0
# mk/pmem_client.mk: build/tests/pmem_client, the partition-local memory client of tests/t_pmem_client.sh.
EXTRA_BINS += $(BUILD)/tests/pmem_client
$(BUILD)/tests/pmem_client: $(BUILD)/tests/pmem_client.o $(BUILD)/libgpuos_core.a
	$(Q)$(CC) $(CFLAGS) -o $@ $< $(CORE_LINK) $(LDLIBS)
-include $(BUILD)/tests/pmem_client.d
