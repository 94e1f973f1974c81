# SPDX-License-Identifier: Apache-2.0
# mk/ring.mk: the fast path's test client (issue 9.4; tests/t_ring.sh).
#   build/tests/ring_client  byte-exact traffic through the ring, and a hostile
#                            writer of the shared ring memory
EXTRA_BINS += $(BUILD)/tests/ring_client
$(BUILD)/tests/ring_client: $(BUILD)/tests/ring_client.o $(BUILD)/libgpuos_core.a
	$(Q)$(CC) $(CFLAGS) -o $@ $< $(CORE_LINK) $(LDLIBS)
-include $(BUILD)/tests/ring_client.d
