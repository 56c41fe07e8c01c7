# HTTP server and web UI: the UI's files (agent/ui/assets/) are embedded into the
# library as a generated C file, rebuilt whenever an asset (or the asset folder, when a
# file is added or removed) changes.
UI_ASSETS := $(sort $(wildcard agent/ui/assets/*))
UI_ASSETS_C := $(BUILD)/gen/ui_assets.c
UI_ASSETS_O := $(BUILD)/obj/gen/ui_assets.o

$(UI_ASSETS_C): $(UI_ASSETS) agent/ui/assets agent/ui/embed_assets.py
	@mkdir -p $(dir $@)
	@echo "  GEN     $@"
	@$(PYTHON) agent/ui/embed_assets.py $@ $(UI_ASSETS)

$(UI_ASSETS_O): $(UI_ASSETS_C) agent/ui/assets.h
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CC) $(CFLAGS_ALL) -c $< -o $@

$(BUILD)/libnodeprof.a: $(UI_ASSETS_O)
