# pyroscope.write test harness: pushes generated profiles through np_writer from a
# JSON spec (tests/harness/push.c); the integration tests in tests/integration/test_write*.py run it.
WRITE_HARNESS := $(BUILD)/tests/harness/push

$(WRITE_HARNESS): tests/harness/push.c $(BUILD)/libnodeprof.a | $(GEN_HDRS)
	@mkdir -p $(dir $@)
	@echo "  HARNESS $@"
	@$(CC) $(CFLAGS_ALL) -o $@ $< $(BUILD)/libnodeprof.a $(LDLIBS_ALL)

unit: $(WRITE_HARNESS)
