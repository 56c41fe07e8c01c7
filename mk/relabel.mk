# Relabel benchmark binary (the Go-oracle test's C side is tests/harness/relabel_oracle.c).
RELABEL_BENCH := $(BUILD)/relabel/bench_relabel

# Built with -O2 and no sanitizers whatever SAN says: it measures time.
$(RELABEL_BENCH): bench/relabel/bench_relabel.c bench/alloc_count.c $(BUILD)/libnodeprof.a | $(GEN_HDRS)
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	@$(CC) $(CFLAGS_ALL) -o $@ $< bench/alloc_count.c $(BUILD)/libnodeprof.a $(LDLIBS_ALL) -ldl

.PHONY: bench-relabel
bench-relabel: $(RELABEL_BENCH)
	$(PYTHON) bench/relabel/bench.py
