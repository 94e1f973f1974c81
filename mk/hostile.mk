# SPDX-License-Identifier: Apache-2.0
# mk/hostile.mk: issue 15 (hostile tenants and operators) programs.
#   build/tests/hostile_client  the hostile tenant of tests/t_hostile*.sh
#   build/tests/fuzz_serve      mutation fuzzer: wire protocol against a live daemon,
#                               configuration parser in process (tests/ci_hostile.sh)
#   build/bench/load_client     load test client (bench/load.sh)
EXTRA_BINS += $(BUILD)/tests/hostile_client $(BUILD)/tests/fuzz_serve $(BUILD)/bench/load_client
$(BUILD)/tests/hostile_client: $(BUILD)/tests/hostile_client.o $(BUILD)/libgpuos_core.a
	$(Q)$(CC) $(CFLAGS) -o $@ $< $(CORE_LINK) $(LDLIBS)
$(BUILD)/tests/fuzz_serve: $(BUILD)/tests/fuzz_serve.o $(BUILD)/libgpuos_core.a
	$(Q)$(CC) $(CFLAGS) -o $@ $< $(CORE_LINK) $(LDLIBS)
$(BUILD)/bench/load_client: $(BUILD)/bench/load_client.o $(BUILD)/libgpuos_core.a
	$(Q)$(CC) $(CFLAGS) -o $@ $< $(CORE_LINK) $(LDLIBS)
-include $(BUILD)/tests/hostile_client.d $(BUILD)/tests/fuzz_serve.d $(BUILD)/bench/load_client.d
