# SPDX-License-Identifier: Apache-2.0
# mk/executors.mk: issue 9 helper programs.
#   build/tests/ctx_probe   can this process create a CUDA context? (tests/gpu/bypass.sh)
EXTRA_BINS += $(BUILD)/tests/ctx_probe
$(BUILD)/tests/ctx_probe: tests/gpu/ctx_probe.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) -std=c11 -O2 -Wall -Wextra -o $@ $< -ldl
