/* discovery.kubernetes: the discovery thread (one curl multi loop driving every
 * list+watch), debounced publication of the targets, start and stop. See discovery.h. */
#include "k8s/discovery.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/backoff.h"
#include "lib/clock.h"
#include "lib/grow.h"
#include "lib/log.h"
#include "k8s/discovery_impl.h"

#define MS 1000000LL

struct k8s_store *k8s_discovery_store(struct k8s_discovery *d, enum k8s_resource res)
{
	return &d->stores[res];
}

void k8s_discovery_mark_dirty(struct k8s_discovery *d, int64_t now)
{
	if (!d->dirty) {
		d->dirty = 1;
		d->first_change = now;
	}
	d->last_change = now;
}

int k8s_discovery_synced(const struct k8s_discovery *d)
{
	return d ? atomic_load(&((struct k8s_discovery *)d)->synced) : 0;
}

static int all_synced(const struct k8s_discovery *d)
{
	for (size_t i = 0; i < d->n_refl; i++)
		if (!d->refl[i]->synced)
			return 0;
	return 1;
}

/* When the pending change may be published: at once for the first complete view, after
 * the initial wait for an incomplete one, then after a quiet period (bounded). */
static int64_t publish_due(const struct k8s_discovery *d)
{
	const struct k8s_tunables *tu = &d->cfg.tunables;
	int64_t quiet, max;

	if (!d->published_once)
		return all_synced(d) ? d->first_change : d->started_at + tu->initial_wait_ns;
	quiet = d->last_change + tu->debounce_quiet_ns;
	max = d->first_change + tu->debounce_max_ns;
	return quiet < max ? quiet : max;
}

static void publish(struct k8s_discovery *d, int64_t now)
{
	struct np_targets ts = NP_TARGETS_INIT;
	struct np_err err;
	int synced_now = all_synced(d);

	if (k8s_role_targets(d, &ts, &err)) {
		np_targets_free(&ts);
		np_log(NP_ERROR, "k8s", "cannot build targets, retrying", "err", err.msg, NULL);
		d->first_change = d->last_change = now; /* try again after the debounce period */
		return;
	}
	d->dirty = 0;
	if (!d->published_once || !np_targets_equal(&ts, &d->published)) {
		char n[24];
		snprintf(n, sizeof(n), "%zu", ts.n);
		np_log(NP_DEBUG, "k8s", "targets changed", "targets", n, NULL);
		d->cb(d->ud, &ts);
		np_targets_free(&d->published);
		d->published = ts;
	} else {
		np_targets_free(&ts);
	}
	d->published_once = 1;
	if (synced_now && !atomic_load(&d->synced)) {
		char n[24];
		snprintf(n, sizeof(n), "%zu", d->published.n);
		np_log(NP_INFO, "k8s", "discovery synced", "targets", n, NULL);
		atomic_store(&d->synced, 1);
	}
}

/* Stops an oauth2 token fetch when the discovery is being stopped. */
static int stopping(void *ud)
{
	return atomic_load(&((struct k8s_discovery *)ud)->stop);
}

static void refresh_credentials(struct k8s_discovery *d, int64_t now)
{
	struct np_err err;
	int rc = k8s_conn_refresh(&d->conn, now, d->cfg.tunables.credentials_reread_ns, 0, &err);

	if (rc < 0) {
		if (strncmp(d->last_cred_err, err.msg, sizeof(d->last_cred_err) - 1) != 0) {
			np_log(NP_WARN, "k8s", "cannot re-read credentials, keeping the previous ones", "err", err.msg,
			       NULL);
			snprintf(d->last_cred_err, sizeof(d->last_cred_err), "%.255s", err.msg);
		}
	} else {
		if (rc > 0)
			np_log(NP_INFO, "k8s", "credentials file changed, using the new credentials", "file",
			       d->conn.credentials_file, NULL);
		d->last_cred_err[0] = '\0';
	}
}

static void *run(void *arg)
{
	struct k8s_discovery *d = arg;
	int64_t now = np_mono_ns();

	d->started_at = now;
	d->conn.credentials_read_at = now;
	k8s_discovery_mark_dirty(d, now); /* an (empty) first publication happens even if nothing lists */
	for (size_t i = 0; i < d->n_refl; i++) {
		d->refl[i]->state = K8S_R_IDLE;
		d->refl[i]->due = now;
	}
	while (!atomic_load(&d->stop)) {
		int64_t next, running_timeout;
		int running = 0;
		CURLMsg *m;
		int left;

		now = np_mono_ns();
		refresh_credentials(d, now);
		for (size_t i = 0; i < d->n_refl; i++)
			if (d->refl[i]->state == K8S_R_IDLE && d->refl[i]->due <= now)
				k8s_reflector_start(d->refl[i], now);
		curl_multi_perform(d->multi, &running);
		while ((m = curl_multi_info_read(d->multi, &left))) {
			struct k8s_reflector *r = NULL;
			if (m->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&r);
			if (r)
				k8s_reflector_done(r, m->data.result, np_mono_ns());
		}
		now = np_mono_ns();
		for (size_t i = 0; i < d->n_refl; i++)
			if (k8s_reflector_stall_at(d->refl[i]) <= now)
				k8s_reflector_stall(d->refl[i], now);
		if (d->dirty && publish_due(d) <= now)
			publish(d, now);

		/* Sleep until the next timer, a socket event, or a wakeup from stop. */
		next = d->conn.credentials_file ? d->conn.credentials_read_at + d->cfg.tunables.credentials_reread_ns
						: now + 60000 * MS;
		for (size_t i = 0; i < d->n_refl; i++) {
			if (d->refl[i]->state == K8S_R_IDLE && d->refl[i]->due < next)
				next = d->refl[i]->due;
			if (k8s_reflector_stall_at(d->refl[i]) < next)
				next = k8s_reflector_stall_at(d->refl[i]);
		}
		if (d->dirty && publish_due(d) < next)
			next = publish_due(d);
		running_timeout = next - now;
		if (running_timeout < 0)
			running_timeout = 0;
		if (running_timeout > 0)
			curl_multi_poll(d->multi, NULL, 0, (int)((running_timeout + MS - 1) / MS), NULL);
	}
	for (size_t i = 0; i < d->n_refl; i++)
		if (d->refl[i]->state != K8S_R_IDLE)
			curl_multi_remove_handle(d->multi, d->refl[i]->easy);
	return NULL;
}

static void destroy(struct k8s_discovery *d)
{
	for (size_t i = 0; i < d->n_refl; i++) {
		k8s_reflector_free(d->refl[i]);
		free(d->refl[i]);
	}
	free(d->refl);
	if (d->multi)
		curl_multi_cleanup(d->multi);
	for (size_t i = 0; i < K8S_RES_COUNT; i++)
		k8s_store_free(&d->stores[i]);
	np_targets_free(&d->published);
	free(d->node_field_selector);
	k8s_conn_free(&d->conn);
	k8s_sd_config_free(&d->cfg);
	free(d);
}

void k8s_discovery_stop(struct k8s_discovery *d)
{
	if (!d)
		return;
	if (d->thread_started) {
		atomic_store(&d->stop, 1);
		curl_multi_wakeup(d->multi);
		pthread_join(d->thread, NULL);
	}
	destroy(d);
}

int k8s_discovery_add_reflector(struct k8s_discovery *d, enum k8s_resource res, const char *ns, const char *label,
				const char *field, struct np_err *err)
{
	struct k8s_reflector *r;

	if (np_grow((void **)&d->refl, &d->cap_refl, d->n_refl + 1, sizeof(*d->refl)))
		return np_errf(err, "out of memory");
	/* Each reflector has its own allocation: curl and the scanner keep pointers to it. */
	r = malloc(sizeof(*r));
	if (!r)
		return np_errf(err, "out of memory");
	if (k8s_reflector_init(r, d, (int)d->n_refl, res, ns, label, field, err)) {
		free(r);
		return -1;
	}
	d->refl[d->n_refl++] = r;
	return 0;
}

int k8s_discovery_start(const struct k8s_sd_config *cfg, k8s_targets_cb cb, void *ud, struct k8s_discovery **out,
			struct np_err *err)
{
	struct k8s_discovery *d;

	*out = NULL;
	if (k8s_sd_config_validate(cfg, err) || np_http_global_init(err))
		return -1;
	d = calloc(1, sizeof(*d));
	if (!d)
		return np_errf(err, "out of memory");
	if (k8s_sd_config_copy(&d->cfg, cfg, err)) {
		free(d);
		return -1;
	}
	d->cb = cb;
	d->ud = ud;
	d->rng = 0;
	if (k8s_role_parse(d->cfg.role, &d->role)) {
		np_errf(err, "unknown Kubernetes SD role \"%s\"", d->cfg.role);
		k8s_sd_config_free(&d->cfg);
		free(d);
		return -1;
	}
	for (size_t i = 0; i < K8S_RES_COUNT; i++)
		k8s_store_init(&d->stores[i], k8s_value_destructor(d->role, (enum k8s_resource)i));
	if (k8s_conn_resolve(&d->cfg, &d->conn, err))
		goto fail;
	d->conn.cancel = stopping;
	d->conn.cancel_ud = d;
	d->multi = curl_multi_init();
	if (!d->multi) {
		np_errf(err, "cannot create a curl multi handle");
		goto fail;
	}
	if (k8s_role_setup(d, err))
		goto fail;
	d->rng = np_rand_seed();
	if (d->conn.http.tls.insecure_skip_verify)
		np_log(NP_WARN, "k8s", "TLS certificate verification is disabled (insecure_skip_verify)", NULL);
	{
		char n[24];
		/* The server is logged unless the URL carries credentials (user:password@). */
		const char *server = strchr(d->conn.base_url, '@') ? "(redacted)" : d->conn.base_url;
		snprintf(n, sizeof(n), "%zu", d->n_refl);
		np_log(NP_INFO, "k8s", "starting Kubernetes discovery", "role", d->cfg.role, "config", d->conn.origin,
		       "server", server, "list_watches", n, NULL);
	}
	if (pthread_create(&d->thread, NULL, run, d) != 0) {
		np_errno(err, "cannot start the discovery thread");
		goto fail;
	}
	d->thread_started = 1;
	*out = d;
	return 0;
fail:
	destroy(d);
	return -1;
}
