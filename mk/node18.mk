# Debian 12's Node 18 (V8 10.2, a shared build: /usr/bin/node is a launcher and V8 lives in
# libnode.so.108) extracted beside whatever node the machine has, for
# tests/integration/test_v8_names.py: a second V8 major and the libnode path of detection.
# The packages come from the Debian archive with apt-get download (pinned to the archive's
# newest 18.x, so a machine whose nodejs is another version still gets this one) and are
# unpacked with dpkg-deb -x, never installed. Node 18 loads some of its built-in modules from
# /usr/share/nodejs (node-acorn, node-cjs-module-lexer, node-undici), so it runs in a root
# made of this tree (tests/lib/rootfs.py).
NODE18_ROOT := $(BUILD)/node18/root
NODE18_DEBS := libnode108 node-cjs-module-lexer node-acorn node-undici

.PHONY: node18
node18: $(NODE18_ROOT)/usr/bin/node

$(NODE18_ROOT)/usr/bin/node:
	@rm -rf $(BUILD)/node18 && mkdir -p $(BUILD)/node18/debs $(NODE18_ROOT)
	@v=$$(apt-cache madison nodejs | awk '$$3 ~ /^18\./ { print $$3; exit }'); \
	  if [ -z "$$v" ]; then echo "make node18: no nodejs 18 in the apt sources (Debian 12's bookworm)" >&2; exit 1; fi; \
	  echo "  GET     nodejs $$v"; \
	  cd $(BUILD)/node18/debs && apt-get download -q "nodejs=$$v" "libnode108=$$v" \
	    $(filter-out libnode108,$(NODE18_DEBS)) >/dev/null 2>&1 || \
	    { apt-get update -q >/dev/null 2>&1 && apt-get download -q "nodejs=$$v" "libnode108=$$v" \
	      $(filter-out libnode108,$(NODE18_DEBS)) >/dev/null; } || \
	    { echo "make node18: apt-get download failed" >&2; exit 1; }
	@for d in $(BUILD)/node18/debs/*.deb; do dpkg-deb -x $$d $(NODE18_ROOT) || exit 1; done
	@test -x $@
