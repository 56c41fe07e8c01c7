# The symbolization benchmark (bench/symbols/bench.py): nodeprof vs llvm-symbolizer vs addr2line.
.PHONY: bench-symbols
bench-symbols: $(BUILD)/nodeprof
	$(PYTHON) bench/symbols/bench.py

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
