# agent/discovery test harness (tests/harness/discovery_harness.c), used by
# tests/integration/test_containers*.py; built with the unit tests.
DISCOVERY_HARNESS := $(BUILD)/harness/discovery_harness

$(DISCOVERY_HARNESS): tests/harness/discovery_harness.c $(BUILD)/libnodeprof.a | $(GEN_HDRS)
	@mkdir -p $(dir $@)
	@echo "  HARNESS $@"
	@$(CC) $(CFLAGS_ALL) -o $@ $< $(BUILD)/libnodeprof.a $(LDLIBS_ALL)

unit: $(DISCOVERY_HARNESS)
