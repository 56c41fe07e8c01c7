# symbols: the integration-test front end to the symbolizer (tests/integration/test_symbols*.py).
SYMBOLS_HARNESS := $(BUILD)/symbols-harness
unit: $(SYMBOLS_HARNESS)
$(SYMBOLS_HARNESS): tests/integration/symbols_harness.c $(BUILD)/libnodeprof.a | $(GEN_HDRS)
	@echo "  LD      $@"
	@$(CC) $(CFLAGS_ALL) -o $@ $< $(BUILD)/libnodeprof.a $(LDLIBS_ALL)

# The symbolization benchmark (bench/symbols/run.py): nodeprof vs llvm-symbolizer vs addr2line.
.PHONY: bench-symbols
bench-symbols: $(BUILD)/nodeprof
	$(PYTHON) bench/symbols/run.py

SYMBOLS_BENCH := $(BUILD)/bench-symbols-lookup
$(SYMBOLS_BENCH): bench/symbols/lookup.c $(BUILD)/libnodeprof.a | $(GEN_HDRS)
	@echo "  LD      $@"
	@$(CC) $(CFLAGS_ALL) -o $@ $< $(BUILD)/libnodeprof.a $(LDLIBS_ALL)
bench-symbols: $(SYMBOLS_BENCH)

SYMBOLS_MEASURE := $(BUILD)/bench-measure
$(SYMBOLS_MEASURE): bench/symbols/measure.c
	@echo "  LD      $@"
	@$(CC) $(CFLAGS_ALL) -o $@ $<
bench-symbols: $(SYMBOLS_MEASURE)
