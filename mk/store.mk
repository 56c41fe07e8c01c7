# Local store intake benchmark (bench/store/bench.py).
STORE_BENCH := $(BUILD)/store/bench_intake

# Built with -O2 and no sanitizers whatever SAN says: it measures time.
$(STORE_BENCH): bench/store/bench_intake.c bench/alloc_count.c $(BUILD)/libnodeprof.a | $(GEN_HDRS)
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	@$(CC) $(CFLAGS_ALL) -o $@ $< bench/alloc_count.c $(BUILD)/libnodeprof.a $(LDLIBS_ALL) -ldl

.PHONY: bench-store
bench-store: $(STORE_BENCH)
	$(PYTHON) bench/store/bench.py
