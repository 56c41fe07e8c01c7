# Kubernetes discovery: the test/benchmark harness (runs k8s/ alone, prints targets as JSON).
K8S_HARNESS := $(BUILD)/harness/k8s_targets

$(K8S_HARNESS): tests/harness/k8s_targets.c $(BUILD)/libnodeprof.a | $(GEN_HDRS)
	@mkdir -p $(dir $@)
	@echo "  HARNESS $@"
	@$(CC) $(CFLAGS_ALL) -o $@ $< $(BUILD)/libnodeprof.a $(LDLIBS_ALL)

unit: $(K8S_HARNESS)
