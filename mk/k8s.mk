# Kubernetes discovery: the test/benchmark harness (runs k8s/ alone, prints targets as JSON).
# The top Makefile may build every tests/harness/*.c itself (HARNESS_BINS); then this
# file adds nothing.
K8S_HARNESS := $(BUILD)/harness/k8s_targets

ifndef HARNESS_BINS
$(K8S_HARNESS): tests/harness/k8s_targets.c $(BUILD)/libnodeprof.a | $(GEN_HDRS)
	@mkdir -p $(dir $@)
	@echo "  HARNESS $@"
	@$(CC) $(CFLAGS_ALL) -o $@ $< $(BUILD)/libnodeprof.a $(LDLIBS_ALL)

unit: $(K8S_HARNESS)
endif
