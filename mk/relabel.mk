# Relabel module extras: the C side of the Go oracle test and the benchmark.
RELABEL_HARNESS := $(BUILD)/relabel/oracle_harness
RELABEL_BENCH := $(BUILD)/relabel/bench_relabel

$(RELABEL_HARNESS): tests/relabel/oracle_harness.c $(BUILD)/libnodeprof.a | $(GEN_HDRS)
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	@$(CC) $(CFLAGS_ALL) -o $@ $< $(BUILD)/libnodeprof.a $(LDLIBS_ALL)

# Built with -O2 and no sanitizers whatever SAN says: it measures time.
$(RELABEL_BENCH): bench/relabel/bench_relabel.c $(BUILD)/libnodeprof.a | $(GEN_HDRS)
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	@$(CC) $(CFLAGS_ALL) -o $@ $< $(BUILD)/libnodeprof.a $(LDLIBS_ALL) -ldl

# The integration tests run after `make unit`, so the harness is built with the unit tests.
unit: $(RELABEL_HARNESS)

.PHONY: bench-relabel
bench-relabel: $(RELABEL_BENCH)
	$(PYTHON) bench/relabel/bench.py
