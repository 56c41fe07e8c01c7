/* The web UI on the HTTP server: the page and its files, the JSON API over the local
 * profile store, and live updates over the server's WebSocket.
 *
 *   GET /                 the single-page UI (index.html); GET /ui/FILE its other files
 *   GET /api/types        the profile types with data in the range (ID, label, unit)
 *   GET /api/services     services and processes with data in the range
 *   GET /api/flamegraph   the flame graph tree (&group=none|service|process, &max_nodes=N)
 *   GET /api/top          the top-functions table (&limit=N)
 *   GET /api/timeline     the type's values per bucket
 *   GET /api/pprof        the merged profile, gzipped pprof, as an attachment
 *   GET /api/stats        the store's counters
 * Common parameters: from, until (milliseconds since the epoch, "now", or
 * "now-DURATION" such as now-15m; default the last hour), service, process, and
 * type: the profile type ID (store.h; default the CPU type), one type per query. A
 * number out of range is a 400 that says which range; a type the store does not know
 * is a 400 that lists the types.
 *
 * Every WebSocket client gets {"type":"profiles","count":N,"services":[...],
 * "types":[ID,...],"time":MS} at most every notify interval while profiles arrive. The
 * debug page "store" shows the store's counters. */
#ifndef NP_UI_API_H
#define NP_UI_API_H

#include <stdint.h>

#include "agent/http/server.h"
#include "agent/ui/store.h"

struct np_ui_config {
	int64_t notify_interval_ns; /* coalescing window of WebSocket updates; default 500 ms */
	size_t max_nodes;	    /* flame graph nodes per response unless the request asks fewer; default 20000 */
};

struct np_ui;

/* Registers the routes on srv and starts the notifier. srv and store must outlive the UI. */
NP_MUST_CHECK int np_ui_start(struct np_httpd_server *srv, struct np_store *store, const struct np_ui_config *cfg,
			      struct np_ui **out, struct np_err *err);
/* Removes the routes, stops the notifier and detaches from the store. Call before
 * np_httpd_stop and np_store_free. */
void np_ui_stop(struct np_ui *ui);

/* params.c: the numbers of a request, range-checked (a 400 with err's text otherwise).
 * A time: milliseconds since the epoch, "now" or "now-DURATION" (a Go duration, not
 * negative), never before the epoch nor past what nanoseconds in an int64 hold. */
NP_MUST_CHECK int np_ui_parse_time(const char *s, int64_t now_ns, int64_t *out_ns, struct np_err *err);
/* A count: decimal digits only, from 1 to max. name is the parameter's, for the message. */
NP_MUST_CHECK int np_ui_parse_count(const char *name, const char *s, size_t max, size_t *out, struct np_err *err);

#endif
