# mk/place.mk: issue 13 programs.
#   build/bench/colocation  the co-location experiment on a real GPU (bench/colocation.sh)
EXTRA_BINS += $(BUILD)/bench/colocation
$(BUILD)/bench/colocation: $(BUILD)/bench/colocation.o $(BUILD)/libgpuos_core.a
	$(Q)$(CC) $(CFLAGS) -o $@ $< $(CORE_LINK) $(LDLIBS)
-include $(BUILD)/bench/colocation.d
