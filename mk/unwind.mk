# The CFI compiler benchmark (bench/unwind/bench.py): agent/unwind/ against the same table
# built through elfutils' libdw, which only this benchmark links.
UNWIND_BENCH := $(BUILD)/unwind/cfi_bench
$(UNWIND_BENCH): bench/unwind/cfi_bench.c $(BUILD)/libnodeprof.a | $(GEN_HDRS)
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	@$(CC) $(CFLAGS_ALL) -o $@ $< $(BUILD)/libnodeprof.a -ldw $(LDLIBS_ALL)

.PHONY: bench-unwind
bench-unwind: $(UNWIND_BENCH)
	$(PYTHON) bench/unwind/bench.py
