/* The web UI's files (agent/ui/assets/), embedded into the binary at build time by
 * agent/ui/embed_assets.py (build/gen/ui_assets.c), so the page works offline and
 * needs nothing on disk. */
#ifndef NP_UI_ASSETS_H
#define NP_UI_ASSETS_H

#include <stddef.h>

struct np_ui_asset {
	const char *name;	  /* file name, e.g. "app.js" */
	const char *content_type; /* from the extension */
	const unsigned char *data;
	size_t len;
};

extern const struct np_ui_asset np_ui_assets[];
extern const size_t np_ui_assets_n;

/* The asset with this file name, or NULL. */
const struct np_ui_asset *np_ui_asset_find(const char *name);

#endif
